//! `gangplan slurm ...`: the subcommands (`plan`, one round; `serve`, rounds on changes) and
//! the checks they share before any Slurm command runs.

use super::slurm_cmd::{plan, SlurmPlanArgs};
use super::slurm_serve::{serve, SlurmServeArgs};
use super::Failure;
use clap::{Args, Subcommand};
use gangplan::adapters::slurm::RealSlurm;

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

/// Longest `--slurm-timeout`, seconds.
const SLURM_TIMEOUT_MOST: f64 = 3600.0;

/// Run `slurm ...`.
pub fn run(a: SlurmArgs) -> Result<i32, Failure> {
    match a.command {
        SlurmCommand::Plan(p) => {
            let timeout =
                super::check_seconds_flag("slurm-timeout", p.slurm_timeout, SLURM_TIMEOUT_MOST)?;
            plan(p, &RealSlurm::new(timeout))
        }
        SlurmCommand::Serve(s) => {
            let timeout = super::check_seconds_flag(
                "slurm-timeout",
                s.round.slurm_timeout,
                SLURM_TIMEOUT_MOST,
            )?;
            serve(s, &RealSlurm::new(timeout))
        }
    }
}
