//! What `gangplan slurm serve` watches between rounds: a fingerprint of the queue and the
//! nodes from two cheap commands, `squeue -h -a -o "%i %T %r"` and `sinfo -h -N -o "%N %T"`.
//!
//! The fingerprint changes when a job is submitted, held or leaves the queue (its GPUs are
//! free then: a completing job still holds them), and when a node changes state; it does not
//! change when a released job goes from pending to running (a start the round itself asked
//! for frees nothing and needs no new round).

use super::cli::SlurmCli;
use super::SlurmError;
use std::collections::hash_map::DefaultHasher;
use std::collections::BTreeSet;
use std::hash::{Hash, Hasher};

/// How a job counts for the watch: held for the planner, or holding / about to hold GPUs. A
/// completing job still holds its GPUs (the round counts them held), so it stays `active`
/// until it leaves the queue: that is the change that frees its GPUs.
fn job_class(state: &str, reason: &str) -> &'static str {
    match (state, reason) {
        ("PENDING", "JobHeldUser") => "held",
        ("PENDING" | "RUNNING" | "CONFIGURING" | "COMPLETING" | "SUSPENDED", _) => "active",
        _ => "gone",
    }
}

/// The fingerprint of `squeue -h -a -o "%i %T %r"` and `sinfo -h -N -o "%N %T"` output.
pub fn fingerprint(squeue: &str, sinfo: &str) -> u64 {
    let jobs: BTreeSet<(String, &str)> = squeue
        .lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let (id, state) = (f.next()?, f.next()?);
            let class = job_class(state, f.next().unwrap_or(""));
            (class != "gone").then(|| (id.to_string(), class))
        })
        .collect();
    let nodes: BTreeSet<&str> = sinfo.lines().map(str::trim).collect();
    let mut h = DefaultHasher::new();
    jobs.hash(&mut h);
    nodes.hash(&mut h);
    h.finish()
}

/// Read the queue and the nodes through `cli` and fingerprint them.
pub fn read_fingerprint(cli: &dyn SlurmCli) -> Result<u64, SlurmError> {
    let args = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let squeue = cli.run("squeue", &args(&["-h", "-a", "-o", "%i %T %r"]))?;
    let sinfo = cli.run("sinfo", &args(&["-h", "-N", "-o", "%N %T"]))?;
    Ok(fingerprint(&squeue, &sinfo))
}

#[cfg(test)]
mod tests {
    use super::fingerprint;

    const NODES: &str = "node1 idle\nnode2 mixed\n";

    #[test]
    fn a_submission_an_end_and_a_node_state_change_it() {
        let base = fingerprint("7 RUNNING None\n8 PENDING JobHeldUser\n", NODES);
        let submitted = fingerprint(
            "7 RUNNING None\n8 PENDING JobHeldUser\n9 PENDING JobHeldUser\n",
            NODES,
        );
        let ended = fingerprint("8 PENDING JobHeldUser\n", NODES);
        let completing = fingerprint("7 COMPLETING None\n8 PENDING JobHeldUser\n", NODES);
        assert_eq!(
            base, completing,
            "a completing job still holds its GPUs: its end is when it leaves the queue"
        );
        let drained = fingerprint(
            "7 RUNNING None\n8 PENDING JobHeldUser\n",
            "node1 drained\nnode2 mixed\n",
        );
        assert_ne!(base, submitted);
        assert_ne!(base, ended);
        assert_ne!(base, drained);
    }

    #[test]
    fn a_released_job_starting_and_reordered_lines_do_not() {
        let released = fingerprint("8 PENDING Resources\n7 RUNNING None\n", NODES);
        let started = fingerprint("7 RUNNING None\n8 RUNNING None\n", NODES);
        assert_eq!(released, started);
        let a = fingerprint("7 RUNNING None\n8 PENDING JobHeldUser\n", NODES);
        let b = fingerprint("8 PENDING JobHeldUser\n7 RUNNING None\n", NODES);
        assert_eq!(a, b);
    }
}
