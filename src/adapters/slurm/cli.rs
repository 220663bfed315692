//! Running Slurm commands. Every command is a program and an argument vector handed to
//! [`std::process::Command`] (never a shell), so no job name or node name can inject anything;
//! job ids and node names are checked again before they are put into an argument.

use super::SlurmError;
use std::process::Command;

/// One Slurm command runner. The real one runs the programs; tests feed recorded output.
pub trait SlurmCli {
    /// Run `program` with `args`; the standard output on success.
    fn run(&self, program: &str, args: &[String]) -> Result<String, SlurmError>;
}

/// Runs the real Slurm client programs (`squeue`, `sinfo`, `scontrol`) found on `PATH`, with
/// the caller's environment (`SLURM_CONF` selects the cluster).
#[derive(Debug, Clone, Default)]
pub struct RealSlurm;

impl SlurmCli for RealSlurm {
    fn run(&self, program: &str, args: &[String]) -> Result<String, SlurmError> {
        let out = Command::new(program)
            .args(args)
            .output()
            .map_err(|source| SlurmError::Spawn {
                program: program.to_string(),
                source,
            })?;
        if !out.status.success() {
            return Err(SlurmError::Command {
                command: command_line(program, args),
                status: out.status.to_string(),
                stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
            });
        }
        String::from_utf8(out.stdout).map_err(|e| SlurmError::Parse {
            what: command_line(program, args),
            message: format!("output is not UTF-8: {e}"),
        })
    }
}

/// A command line for logs (arguments joined by spaces; never executed).
pub fn command_line(program: &str, args: &[String]) -> String {
    std::iter::once(program)
        .chain(args.iter().map(String::as_str))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Check a Slurm job id: decimal digits only (array tasks have their own numeric id), 1..=20
/// characters.
pub fn check_job_id(id: &str) -> Result<&str, SlurmError> {
    if !id.is_empty() && id.len() <= 20 && id.bytes().all(|b| b.is_ascii_digit()) {
        Ok(id)
    } else {
        Err(SlurmError::Invalid {
            what: "job id",
            value: id.to_string(),
            message: "a Slurm job id is 1-20 decimal digits".into(),
        })
    }
}

/// Check a node name: 1..=64 characters of ASCII letters, digits, `.`, `_`, `-`, starting with
/// a letter or digit (no `,`, `[`, `=` or spaces, which would change a Slurm argument's meaning).
pub fn check_node_name(name: &str) -> Result<&str, SlurmError> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name.as_bytes()[0].is_ascii_alphanumeric()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
    if ok {
        Ok(name)
    } else {
        Err(SlurmError::Invalid {
            what: "node name",
            value: name.to_string(),
            message: "expected 1-64 characters of letters, digits, '.', '_' or '-'".into(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn job_ids() {
        assert!(check_job_id("123").is_ok());
        for bad in ["", "12a", "1;rm", "1 2", "-1", "123456789012345678901"] {
            assert!(check_job_id(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn node_names() {
        for ok in ["node1", "gpu-a.01", "n_7"] {
            assert!(check_node_name(ok).is_ok(), "{ok}");
        }
        for bad in ["", "-x", "a,b", "n[1-2]", "a b", "a=b", "é"] {
            assert!(check_node_name(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn missing_program_is_a_spawn_error() {
        let e = RealSlurm
            .run("gangplan-no-such-program", &["x".into()])
            .unwrap_err();
        assert!(matches!(e, SlurmError::Spawn { .. }));
    }
}
