//! `gangplan slurm serve`: the planning round run when the cluster changes instead of from a
//! cron. It polls a cheap fingerprint of the queue and the nodes
//! ([`gangplan::adapters::slurm::watch`]) every `--poll` seconds and runs the same round as
//! `slurm plan` (same lock, state dir, journal and metrics) when the [`Trigger`] says so: a
//! change that has settled for `--debounce` seconds, at most `--max-delay` after it was first
//! seen, and a round every `--idle-round` seconds regardless. A job that ended or came while
//! a round ran is planned by the next round at once. Each round writes at most
//! [`SERVE_NOTES_PER_ROUND`] reasons into admin comments unless told otherwise. SIGTERM and SIGINT end it between rounds
//! (a round under way finishes first). While the queue and the nodes look as the last round
//! planned them, each look stamps that round's admission file anew, so that the job_submit/lua
//! plugin keeps admitting by it. See docs/slurm.md.

use super::slurm_cmd::{plan_after_ends, SlurmPlanArgs};
use super::{exit, Failure};
use clap::Args;
use gangplan::adapters::slurm::admission::restamp;
use gangplan::adapters::slurm::epilog::{EndNotice, EndNotices};
use gangplan::adapters::slurm::watch::read_watched;
use gangplan::adapters::slurm::SlurmCli;
use gangplan::cron::{Timing, Trigger};
use std::collections::BTreeSet;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Flags of `gangplan slurm serve`: those of `slurm plan`, and when to plan.
#[derive(Debug, Args)]
pub struct SlurmServeArgs {
    #[command(flatten)]
    pub round: SlurmPlanArgs,
    /// Seconds between two looks at the queue and the nodes (squeue, sinfo).
    #[arg(long, value_name = "S", default_value_t = 0.2)]
    pub poll: f64,
    /// Plan once a change has been quiet this many seconds (a burst of submissions is one
    /// round); 0 plans at the first look that sees it.
    #[arg(long, value_name = "S", default_value_t = 0.0)]
    pub debounce: f64,
    /// Plan a change at most this many seconds after it was first seen, however busy the queue.
    #[arg(long, value_name = "S", default_value_t = 1.0)]
    pub max_delay: f64,
    /// Plan a round at least this often even when nothing changed (start timeouts, aging).
    #[arg(long, value_name = "S", default_value_t = 60.0)]
    pub idle_round: f64,
    /// Take end notices from the managed nodes' Epilog (scripts/gangplan-epilog.sh) on this
    /// HOST:PORT: a round plans the job's end at once and answers, and Slurm starts what it
    /// released on the job's nodes the moment the Epilog exits (no wait for Slurm's next
    /// scheduling tick). See docs/slurm.md, "End notices from the Epilog".
    #[arg(long, value_name = "HOST:PORT")]
    pub listen: Option<String>,
}

/// Reasons written into admin comments per round unless `--notes-per-round` says otherwise:
/// a few Slurm calls (about 20 ms each) after the starts, so that notes never keep the loop
/// from seeing the next change for long.
pub const SERVE_NOTES_PER_ROUND: usize = 5;

/// Set by SIGTERM or SIGINT: stop before the next round.
static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: i32) {
    STOP.store(true, Ordering::SeqCst);
}

extern "C" {
    fn signal(signum: i32, handler: extern "C" fn(i32)) -> usize;
}

const SIGINT: i32 = 2;
const SIGTERM: i32 = 15;

/// Route SIGTERM and SIGINT to [`STOP`].
fn catch_stop_signals() {
    // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
    unsafe {
        signal(SIGTERM, on_signal);
        signal(SIGINT, on_signal);
    }
}

/// Wait up to `d`, waking early when a stop signal or an end notice came; the notices.
fn nap(d: Duration, notices: Option<&EndNotices>) -> Vec<EndNotice> {
    let until = Instant::now() + d;
    while !STOP.load(Ordering::SeqCst) && Instant::now() < until {
        let slice = Duration::from_millis(50).min(until - Instant::now());
        match notices {
            Some(n) => {
                let told = n.wait(slice);
                if !told.is_empty() {
                    return told;
                }
            }
            None => std::thread::sleep(slice),
        }
    }
    vec![]
}

/// Run the loop until SIGTERM or SIGINT; exit code 0 then.
pub fn serve(mut a: SlurmServeArgs, cli: &dyn SlurmCli) -> Result<i32, Failure> {
    super::plan_cmd::init_logging(a.round.cron.log_format);
    a.round.notes_per_round.get_or_insert(SERVE_NOTES_PER_ROUND);
    let poll = super::check_seconds_flag("poll", a.poll, 86_400.0)?;
    let trigger = Trigger::new(Timing {
        debounce: super::check_seconds_or_zero_flag("debounce", a.debounce, 86_400.0)?,
        max_delay: super::check_seconds_flag("max-delay", a.max_delay, 86_400.0)?,
        idle_round: super::check_seconds_flag("idle-round", a.idle_round, 86_400.0)?,
    });
    let notices = listen_for_ends(a.listen.as_deref())?;
    catch_stop_signals();
    tracing::info!(state_dir = %a.round.state_dir.display(), "serving: planning when the queue or the nodes change");
    let admission = a.round.admission_path();
    let mut watch = Watch::new(trigger);
    while !STOP.load(Ordering::SeqCst) {
        if watch.look(&a.round, cli, admission.as_deref()) {
            continue;
        }
        watch.told.extend(nap(poll, notices.as_ref()));
    }
    let rounds = watch.rounds;
    tracing::info!(rounds, "stopped by a signal between rounds");
    Ok(exit::OK)
}

/// What the loop keeps between its looks at the queue and the nodes.
struct Watch {
    trigger: Trigger,
    /// Rounds run.
    rounds: u64,
    /// A change came while the last round ran: plan again without waiting for it to settle.
    again: bool,
    /// What the last round that ran to the end planned (its admission file holds while the
    /// queue and the nodes look the same).
    last_planned: Option<u64>,
    /// End notices not answered yet: the next round plans them at once.
    told: Vec<EndNotice>,
    /// Jobs told ended that are still in the queue: every round counts them gone, and their
    /// leaving the queue is no change to plan.
    ending: BTreeSet<String>,
}

impl Watch {
    fn new(trigger: Trigger) -> Self {
        Watch {
            trigger,
            rounds: 0,
            again: false,
            last_planned: None,
            told: Vec::new(),
            ending: BTreeSet::new(),
        }
    }

    /// One look at the queue and the nodes, and the round it calls for; whether to look again
    /// at once (something changed while the round ran).
    fn look(&mut self, a: &SlurmPlanArgs, cli: &dyn SlurmCli, admission: Option<&Path>) -> bool {
        let seen = match read_watched(cli) {
            Ok(raw) => {
                self.ending.retain(|id| raw.has_job(id));
                self.ending.extend(self.told.iter().map(|n| n.job.clone()));
                raw.without_jobs(&self.ending)
            }
            Err(e) => {
                tracing::warn!(error = %e, "could not read the queue; trying again");
                return false;
            }
        };
        let now = Instant::now();
        if !(self.again || !self.told.is_empty() || self.trigger.observe(seen.fingerprint(), now)) {
            if self.last_planned == Some(seen.fingerprint()) {
                restamp_admission(admission);
            }
            return false;
        }
        let ran = run_round(a, cli, &self.ending);
        self.rounds += 1;
        self.told.drain(..).for_each(EndNotice::answer);
        // What the round saw, with its own releases and holds, is what it planned: a job that
        // ended or came while it ran calls for the next round at once.
        let after = read_watched(cli)
            .map(|w| w.without_jobs(&self.ending))
            .unwrap_or_else(|_| seen.clone());
        let planned = seen.with_holds_of(&after).fingerprint();
        self.trigger.planned(planned, Instant::now());
        self.last_planned = ran.then_some(planned);
        self.again = ran && planned != after.fingerprint();
        self.again
    }
}

/// The end notices of `--listen ADDR`, when given.
fn listen_for_ends(addr: Option<&str>) -> Result<Option<EndNotices>, Failure> {
    let Some(addr) = addr else {
        return Ok(None);
    };
    let notices = EndNotices::listen(addr)
        .map_err(|e| Failure::new(exit::BAD_INPUT, anyhow::anyhow!("--listen: {e}")))?;
    tracing::info!(address = %notices.local, "taking end notices from the Epilog");
    Ok(Some(notices))
}

/// Nothing changed since the last round: its admission file still holds, stamp it anew.
fn restamp_admission(path: Option<&Path>) {
    let Some(path) = path else {
        return;
    };
    if let Err(e) = restamp(path, super::plan_cmd::unix_now()) {
        tracing::warn!(error = %e, "could not stamp the admission file");
    }
}

/// One round, as `slurm plan` runs it; a failed round is logged and the loop goes on (the
/// next round finishes what it left, as the cron's next run would). Whether it ran to the end.
fn run_round(a: &SlurmPlanArgs, cli: &dyn SlurmCli, ended: &BTreeSet<String>) -> bool {
    match plan_after_ends(a.clone(), cli, ended) {
        Ok(_) => true,
        Err(f) if f.code == exit::LOCKED => {
            tracing::info!("another round holds the lock; planning again on the next change");
            false
        }
        Err(f) => {
            tracing::error!(code = f.code, error = %format!("{:#}", f.error), "round failed");
            false
        }
    }
}
