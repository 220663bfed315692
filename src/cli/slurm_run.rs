//! `gangplan slurm ...`: the subcommands (`plan`, one round; `serve`, rounds on changes) and
//! the checks they share before any Slurm command runs.

use super::slurm_cmd::{plan, SlurmPlanArgs};
use super::slurm_serve::{serve, SlurmServeArgs};
use super::{exit, Failure};
use clap::{Args, Subcommand};
use gangplan::adapters::slurm::RealSlurm;
use std::time::Duration;

/// Slurm commands.
#[derive(Debug, Args)]
pub struct SlurmArgs {
    #[command(subcommand)]
    command: SlurmCommand,
}

#[derive(Debug, Subcommand)]
enum SlurmCommand {
    /// One planning round on the Slurm cluster named by SLURM_CONF (dry run unless --apply).
    Plan(SlurmPlanArgs),
    /// Plan whenever the queue or the nodes change (a submission, an end, a node state),
    /// debounced, until SIGTERM or SIGINT: the round of `slurm plan`, run on events instead
    /// of from a cron, with the same lock, state dir, journal and metrics.
    Serve(SlurmServeArgs),
}

/// Run `slurm ...`.
pub fn run(a: SlurmArgs) -> Result<i32, Failure> {
    match a.command {
        SlurmCommand::Plan(p) => {
            let timeout = slurm_timeout(p.slurm_timeout)?;
            plan(p, &RealSlurm::new(timeout))
        }
        SlurmCommand::Serve(s) => {
            let timeout = slurm_timeout(s.round.slurm_timeout)?;
            serve(s, &RealSlurm::new(timeout))
        }
    }
}

/// Check `--slurm-timeout`: seconds in (0, 3600].
fn slurm_timeout(s: f64) -> Result<Duration, Failure> {
    if s.is_finite() && s > 0.0 && s <= 3600.0 {
        Ok(Duration::from_secs_f64(s))
    } else {
        Err(Failure::new(
            exit::BAD_INPUT,
            anyhow::anyhow!("--slurm-timeout is {s}; expected seconds in (0, 3600]"),
        ))
    }
}
