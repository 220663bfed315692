//! Slurm adapter: read a Slurm 22.05+ cluster's state into a [`RawInstance`], and apply a plan
//! by pinning held jobs to their planned nodes and releasing them.
//!
//! - [`cli`]: the [`SlurmCli`] trait (one Slurm command, run with an argument vector, never a
//!   shell), the real implementation and the checks on job ids and node names.
//! - [`hostlist`]: Slurm host-list expressions (`node[1-3,7]`).
//! - [`parse`]: `squeue --json`, `sinfo --json`, `scontrol show topology`,
//!   `scontrol -o show partition`, GRES strings.
//! - [`convert`]: a [`Snapshot`] of the cluster -> an instance, with the documented
//!   conventions (priority ranks, tenants, preemptible jobs; see docs/slurm.md).
//! - [`apply`]: a plan -> Slurm actions (requeue-hold, pin, release, reasons), run one by one.
//! - [`notes`]: the reasons of waiting jobs in their admin comments, and which to rewrite.
//! - [`site`]: the site's policy from Slurm's accounting (fair-share, QOS, preemption rule).
//! - [`watch`]: the cheap fingerprint of queue and nodes `slurm serve` polls between rounds.
//! - [`epilog`]: end notices from Slurm's Epilog, so that `slurm serve --listen` plans a
//!   job's end before its nodes are handed back, and Slurm starts the released jobs at once.
//! - [`admission`]: the admission file, the room a round leaves for gangplan's job_submit/lua
//!   plugin to give to a new one-node job at its submission, and the jobs it admitted.
//!
//! [`RawInstance`]: crate::instance::raw::RawInstance

pub mod admission;
pub mod apply;
pub mod cli;
pub mod convert;
pub mod epilog;
pub mod hostlist;
pub mod notes;
pub mod parse;
pub mod site;
pub mod watch;

pub use apply::{plan_actions, Action};
pub use cli::{RealSlurm, SlurmCli};
pub use convert::{build_round, Conventions, SlurmRound};
pub use parse::Snapshot;

use thiserror::Error;

/// Everything that can go wrong talking to Slurm.
#[derive(Debug, Error)]
pub enum SlurmError {
    /// A Slurm command could not be started (not installed, not on PATH).
    #[error("could not run `{program}`: {source} (is Slurm installed and SLURM_CONF set?)")]
    Spawn {
        /// The program.
        program: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A Slurm command exited with an error.
    #[error("`{command}` failed ({status}): {stderr}")]
    Command {
        /// The command line, for the log.
        command: String,
        /// Exit status in words.
        status: String,
        /// What it printed on stderr (trimmed).
        stderr: String,
    },
    /// A Slurm command ran past its deadline and was killed. Whether a change it carried went
    /// through is unknown: the next round reads the cluster and finds out.
    #[error("`{command}` did not answer within {seconds} s and was killed (--slurm-timeout)")]
    Timeout {
        /// The command line, for the log.
        command: String,
        /// The deadline, seconds.
        seconds: f64,
    },
    /// Slurm's output could not be understood.
    #[error("cannot read the output of `{what}`: {message}")]
    Parse {
        /// Which command's output.
        what: String,
        /// What is wrong.
        message: String,
    },
    /// A job id or node name is not safe to pass to Slurm.
    #[error("refusing {what} {value:?}: {message}")]
    Invalid {
        /// `job id` or `node name`.
        what: &'static str,
        /// The value.
        value: String,
        /// Why it is refused.
        message: String,
    },
}
