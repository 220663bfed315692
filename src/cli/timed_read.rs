//! Reading the instance under the command's time limit: `solve` and `plan` promise the plan
//! within `--time-limit` from the start of the command, so the read is waited for only until
//! that limit (a FIFO with no writer, a file on a hung network mount), and an instance whose
//! read left too little time to plan and write is refused at once, with the measured times.

use super::{exit, Failure};
use gangplan::hardware::ModelLibrary;
use gangplan::instance::{load_instance_file, Instance};
use gangplan::solve::budget::Budget;
use std::path::Path;
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Time kept back from the deadline to refuse cleanly when the read does not finish.
const REFUSAL_MARGIN: Duration = Duration::from_millis(20);

/// Shortest wait for the read, whatever the limit: a limit of a millisecond on a small file
/// still gets its (slightly late) greedy plan rather than a refusal.
const MIN_READ_WAIT: Duration = Duration::from_millis(100);

/// Read and validate `path`, waiting at most until `started + limit` (`limit` from
/// `--time-limit`; without it, the longest time limit an instance may set), and at least
/// [`MIN_READ_WAIT`]. Then refuse the
/// instance when what is left of the limit (the instance's own `policy.time_limit` without the
/// flag) is less than validating and writing a plan of its size takes.
pub fn load_in_time(
    path: &Path,
    models: &ModelLibrary,
    started: Instant,
    limit: Option<f64>,
) -> Result<Instance, Failure> {
    let wait = limit.unwrap_or(gangplan::instance::policy::MAX_TIME_LIMIT_S);
    let deadline = started + Duration::from_secs_f64(wait);
    let (send, receive) = mpsc::channel();
    let (owned_path, owned_models) = (path.to_path_buf(), models.clone());
    std::thread::spawn(move || {
        // The receiver is gone when the read took too long: nothing to report then.
        let _ = send.send(load_instance_file(&owned_path, &owned_models));
    });
    let until = deadline
        .checked_sub(REFUSAL_MARGIN)
        .unwrap_or(deadline)
        .max(started + MIN_READ_WAIT);
    let left = until.saturating_duration_since(Instant::now());
    let inst = match receive.recv_timeout(left) {
        Ok(result) => result.map_err(Failure::from_lib)?,
        Err(_) => return Err(read_too_slow(path, started, wait)),
    };
    let read = started.elapsed();
    let limit_s = limit.unwrap_or(inst.policy.time_limit);
    let budget = Budget::starting_at(
        &inst,
        Instant::now(),
        started + Duration::from_secs_f64(limit_s),
    );
    match budget.too_short() {
        Some(needed) => Err(too_large(&inst, read, limit_s, needed)),
        None => Ok(inst),
    }
}

fn read_too_slow(path: &Path, started: Instant, limit: f64) -> Failure {
    Failure::new(
        exit::TIME_LIMIT,
        anyhow::anyhow!(
            "{}: not read within the time limit ({limit} s; waited {:.2} s): a FIFO with no \
             writer, a slow mount, or an instance too large to read in time; raise --time-limit \
             or check the file",
            path.display(),
            started.elapsed().as_secs_f64()
        ),
    )
}

fn too_large(inst: &Instance, read: Duration, limit: f64, needed: Duration) -> Failure {
    Failure::new(
        exit::TIME_LIMIT,
        anyhow::anyhow!(
            "an instance of {} nodes, {} running and {} pending jobs cannot be planned within the \
             time limit ({limit} s): reading it took {:.2} s, and validating and writing its plan \
             take about {:.2} s more; raise --time-limit to at least {:.0} s, or split the round",
            inst.nodes.len(),
            inst.running.len(),
            inst.pending.len(),
            read.as_secs_f64(),
            needed.as_secs_f64(),
            (read + needed * 2).as_secs_f64().ceil()
        ),
    )
}
