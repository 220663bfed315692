//! What `gangplan slurm serve` watches between rounds: the queue and the nodes from two cheap
//! commands, `squeue -h -a -o "%i %T %r"` and `sinfo -h -N -o "%N %T"`, reduced to what calls
//! for a round, and fingerprinted.
//!
//! The watched state changes when a job is submitted, held, released or leaves the queue (its
//! GPUs are free then: a completing job still holds them), and when a node goes down, drains
//! or comes back; it does not change when a released job goes from pending to running, nor
//! when a node only goes from idle to mixed or allocated and back (the starts and ends of jobs
//! already count through the queue).

use super::cli::SlurmCli;
use super::SlurmError;
use std::collections::hash_map::DefaultHasher;
use std::collections::{BTreeMap, BTreeSet};
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

/// A node's state as the watch counts it: every state a node takes while it runs jobs as
/// usual (idle, mixed, allocated, completing, planned by backfill) is `up`; any other state
/// (down, drained, draining, ...) and the flags Slurm appends (`*` not responding, `~` powered
/// down, ...) are kept as Slurm writes them, but for `-` (planned by backfill).
fn node_class(state: &str) -> String {
    let base: String = state
        .chars()
        .take_while(|c| c.is_ascii_alphabetic())
        .collect();
    let flags: String = state[base.len()..].chars().filter(|&c| c != '-').collect();
    let base = match base.as_str() {
        "idle" | "mixed" | "allocated" | "completing" | "planned" => "up",
        other => other,
    };
    format!("{base}{flags}")
}

/// The queue and the nodes as the watch counts them.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Watched {
    /// Job id -> `held` or `active` (jobs that left the queue are not in it).
    jobs: BTreeMap<String, &'static str>,
    /// (node, its class).
    nodes: BTreeSet<(String, String)>,
}

impl Watched {
    /// From `squeue -h -a -o "%i %T %r"` and `sinfo -h -N -o "%N %T"` output.
    pub fn parse(squeue: &str, sinfo: &str) -> Watched {
        let jobs = squeue
            .lines()
            .filter_map(|l| {
                let mut f = l.split_whitespace();
                let (id, state) = (f.next()?, f.next()?);
                let class = job_class(state, f.next().unwrap_or(""));
                (class != "gone").then(|| (id.to_string(), class))
            })
            .collect();
        let nodes = sinfo
            .lines()
            .filter_map(|l| {
                let mut f = l.split_whitespace();
                Some((f.next()?.to_string(), node_class(f.next().unwrap_or(""))))
            })
            .collect();
        Watched { jobs, nodes }
    }

    /// A hash of the state: equal states, equal fingerprints.
    pub fn fingerprint(&self) -> u64 {
        let mut h = DefaultHasher::new();
        self.jobs.hash(&mut h);
        self.nodes.hash(&mut h);
        h.finish()
    }

    /// The state seen before a round (`self`) with the holds and releases made while the round
    /// ran, as `after` shows them: what the round itself changed. A job that came or left and
    /// a node that changed meanwhile are not taken over, so they still call for a round.
    pub fn with_holds_of(&self, after: &Watched) -> Watched {
        let mut out = self.clone();
        for (id, class) in out.jobs.iter_mut() {
            if let Some(now) = after.jobs.get(id) {
                *class = now;
            }
        }
        out
    }

    /// Whether job `id` is in the queue (held or active).
    pub fn has_job(&self, id: &str) -> bool {
        self.jobs.contains_key(id)
    }

    /// The state without the jobs of `ended` (told ended by their Epilog, which leave the
    /// queue once the round's answer lets the Epilog exit): their leaving is planned already.
    pub fn without_jobs(&self, ended: &BTreeSet<String>) -> Watched {
        let mut out = self.clone();
        out.jobs.retain(|id, _| !ended.contains(id));
        out
    }
}

/// The fingerprint of `squeue -h -a -o "%i %T %r"` and `sinfo -h -N -o "%N %T"` output.
pub fn fingerprint(squeue: &str, sinfo: &str) -> u64 {
    Watched::parse(squeue, sinfo).fingerprint()
}

/// Read the queue and the nodes through `cli`, the two commands at once.
pub fn read_watched(cli: &dyn SlurmCli) -> Result<Watched, SlurmError> {
    let args = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let (squeue, sinfo) = std::thread::scope(|s| {
        let squeue = s.spawn(|| cli.run("squeue", &args(&["-h", "-a", "-o", "%i %T %r"])));
        let sinfo = cli.run("sinfo", &args(&["-h", "-N", "-o", "%N %T"]));
        let squeue = squeue
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        (squeue, sinfo)
    });
    Ok(Watched::parse(&squeue?, &sinfo?))
}

#[cfg(test)]
mod tests {
    use super::{fingerprint, Watched};

    const NODES: &str = "node1 idle\nnode2 mixed\n";

    #[test]
    fn jobs_told_ended_drop_out_of_the_watched_state() {
        let w = Watched::parse("7 COMPLETING None\n8 PENDING JobHeldUser\n", NODES);
        let ended = ["7".to_string(), "9".to_string()].into_iter().collect();
        assert!(w.has_job("7") && w.has_job("8") && !w.has_job("9"));
        assert_eq!(
            w.without_jobs(&ended).fingerprint(),
            fingerprint("8 PENDING JobHeldUser\n", NODES),
            "once it leaves the queue, the fingerprint stays as the round planned it"
        );
    }

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

    #[test]
    fn a_node_running_jobs_as_usual_does_not_but_a_node_going_down_does() {
        let q = "7 RUNNING None\n";
        let idle = fingerprint(q, "node1 idle\nnode2 idle\n");
        let busy = fingerprint(q, "node1 allocated\nnode2 mixed-\n");
        let planned = fingerprint(q, "node1 planned\nnode2 completing\n");
        assert_eq!(idle, busy);
        assert_eq!(idle, planned);
        assert_ne!(idle, fingerprint(q, "node1 idle\nnode2 drained\n"));
        assert_ne!(idle, fingerprint(q, "node1 idle\nnode2 idle*\n"));
    }

    #[test]
    fn a_round_takes_over_its_own_releases_but_not_what_came_or_left_meanwhile() {
        let before = Watched::parse("7 RUNNING None\n8 PENDING JobHeldUser\n", NODES);
        let released = Watched::parse("7 RUNNING None\n8 PENDING Resources\n", NODES);
        assert_eq!(before.with_holds_of(&released), released);
        let also_ended = Watched::parse("8 RUNNING None\n", NODES);
        let expected = before.with_holds_of(&also_ended);
        assert_ne!(
            expected.fingerprint(),
            also_ended.fingerprint(),
            "job 7 left while the round ran: another round is due"
        );
        assert_eq!(expected, released, "job 8's release is the round's own");
        let also_submitted = Watched::parse(
            "7 RUNNING None\n8 PENDING Resources\n9 PENDING JobHeldUser\n",
            NODES,
        );
        assert_ne!(before.with_holds_of(&also_submitted), also_submitted);
    }
}
