//! Running Slurm commands. Every command is a program and an argument vector handed to
//! [`std::process::Command`] (never a shell), so no job name or node name can inject anything;
//! job ids and node names are checked again before they are put into an argument.

use super::SlurmError;
use std::io::Read;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// One Slurm command runner. The real one runs the programs; tests feed recorded output. A
/// runner is shared by threads: a round issues its read-only commands at once.
pub trait SlurmCli: Sync {
    /// Run `program` with `args`; the standard output on success.
    fn run(&self, program: &str, args: &[String]) -> Result<String, SlurmError>;
}

/// How long a Slurm command may run before it is killed, unless configured otherwise
/// (`gangplan slurm plan --slurm-timeout`).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// Runs the real Slurm client programs (`squeue`, `sinfo`, `scontrol`) found on `PATH`, with
/// the caller's environment (`SLURM_CONF` selects the cluster). Every call has a deadline: a
/// command still running after `timeout` (a controller that accepts connections but never
/// answers, a hung NFS mount under the client) is killed and the call fails with
/// [`SlurmError::Timeout`].
#[derive(Debug, Clone)]
pub struct RealSlurm {
    /// The deadline of each command.
    pub timeout: Duration,
}

impl Default for RealSlurm {
    fn default() -> Self {
        RealSlurm {
            timeout: DEFAULT_TIMEOUT,
        }
    }
}

impl RealSlurm {
    /// A runner whose commands are killed after `timeout`.
    pub fn new(timeout: Duration) -> Self {
        RealSlurm { timeout }
    }
}

/// Read a child's pipe to the end on a thread of its own, so a full pipe never blocks the
/// child and the deadline is watched while it writes.
fn drain(pipe: Option<impl Read + Send + 'static>) -> mpsc::Receiver<Vec<u8>> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut buf = Vec::new();
        if let Some(mut p) = pipe {
            let _ = p.read_to_end(&mut buf);
        }
        let _ = tx.send(buf);
    });
    rx
}

/// How often a command whose output is still open is looked at (a child that exited while a
/// grandchild holds its pipe open is noticed this late).
const LOOK_EVERY: Duration = Duration::from_millis(50);

/// How long the output of a child that exited is waited for, when a grandchild may hold the
/// pipe open.
const OUTPUT_GRACE: Duration = Duration::from_secs(1);

/// Wait for `child` until `deadline`; `None` when it was still running (it is killed then).
/// A command closes its standard output as it exits, so the wait wakes as soon as `stdout`
/// (the pipe drained by [`drain`]) delivers, and the child's status is then taken at once;
/// the child is also looked at every [`LOOK_EVERY`], for one that exited while a grandchild
/// holds the pipe open. Returns the status and the output (empty when a grandchild still holds
/// the pipe after [`OUTPUT_GRACE`]).
fn wait_until(
    child: &mut Child,
    stdout: &mpsc::Receiver<Vec<u8>>,
    deadline: Instant,
) -> std::io::Result<Option<(ExitStatus, Vec<u8>)>> {
    loop {
        let now = Instant::now();
        if now >= deadline {
            kill(child);
            return Ok(None);
        }
        match stdout.recv_timeout(LOOK_EVERY.min(deadline - now)) {
            Ok(out) => return Ok(exit_status(child, deadline)?.map(|s| (s, out))),
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                return Ok(exit_status(child, deadline)?.map(|s| (s, Vec::new())))
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {
                if let Some(status) = child.try_wait()? {
                    let out = stdout.recv_timeout(OUTPUT_GRACE).unwrap_or_default();
                    return Ok(Some((status, out)));
                }
            }
        }
    }
}

/// The status of a child that closed its standard output (it is exiting: looked at after 1,
/// 2, 4... ms, at most 50 apart), or `None` when it still runs at `deadline` (killed then).
fn exit_status(child: &mut Child, deadline: Instant) -> std::io::Result<Option<ExitStatus>> {
    let mut pause = Duration::from_millis(1);
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(Some(status));
        }
        let now = Instant::now();
        if now >= deadline {
            kill(child);
            return Ok(None);
        }
        std::thread::sleep(pause.min(deadline - now));
        pause = (pause * 2).min(LOOK_EVERY);
    }
}

/// Kill a child past its deadline and reap it.
fn kill(child: &mut Child) {
    let _ = child.kill();
    let _ = child.wait();
}

/// The pauses before each new try of a command Slurm refused for now (see
/// [`is_refused_for_now`]): about 15 s in all, the time a restarted controller takes to give
/// its jobs their accounting index back.
const PAUSES_BEFORE_RETRY: [Duration; 5] = [
    Duration::from_millis(500),
    Duration::from_secs(1),
    Duration::from_secs(2),
    Duration::from_secs(4),
    Duration::from_secs(8),
];

/// Whether Slurm refused a command for a reason that passes by itself, so the same command
/// may be sent again unchanged: the controller said so in words (`try again`: a job whose
/// accounting index is still being set after a restart of slurmctld or slurmdbd), or a
/// resource was briefly short (`Resource temporarily unavailable`). A refused command did
/// nothing, so sending it again is safe. A controller that does not answer at all is not in
/// this list: the round stops, its journal says what was applied, and the next round finishes.
pub fn is_refused_for_now(stderr: &str) -> bool {
    let s = stderr.to_ascii_lowercase();
    s.contains("try again") || s.contains("resource temporarily unavailable")
}

impl SlurmCli for RealSlurm {
    /// Runs the command; one that Slurm refused for now ([`is_refused_for_now`]) is sent again
    /// after each of [`PAUSES_BEFORE_RETRY`], each try with its own deadline.
    fn run(&self, program: &str, args: &[String]) -> Result<String, SlurmError> {
        let mut pauses = PAUSES_BEFORE_RETRY.iter();
        loop {
            match self.run_once(program, args) {
                Err(SlurmError::Command { ref stderr, .. }) if is_refused_for_now(stderr) => {
                    let Some(pause) = pauses.next() else {
                        return self.run_once(program, args);
                    };
                    tracing::warn!(
                        command = %command_line(program, args),
                        %stderr,
                        "Slurm refused the command for now; sending it again in {:.1} s",
                        pause.as_secs_f64()
                    );
                    std::thread::sleep(*pause);
                }
                other => return other,
            }
        }
    }
}

impl RealSlurm {
    /// Run the command once, killed at the deadline.
    fn run_once(&self, program: &str, args: &[String]) -> Result<String, SlurmError> {
        let spawn_error = |source| SlurmError::Spawn {
            program: program.to_string(),
            source,
        };
        let deadline = Instant::now() + self.timeout;
        let mut child = Command::new(program)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(spawn_error)?;
        let out = drain(child.stdout.take());
        let err = drain(child.stderr.take());
        let Some((status, stdout)) = wait_until(&mut child, &out, deadline).map_err(spawn_error)?
        else {
            return Err(SlurmError::Timeout {
                command: command_line(program, args),
                seconds: self.timeout.as_secs_f64(),
            });
        };
        // A grandchild may keep a pipe open after the child exited: wait a little, no more.
        let stderr = err.recv_timeout(OUTPUT_GRACE).unwrap_or_default();
        if !status.success() {
            return Err(SlurmError::Command {
                command: command_line(program, args),
                status: status.to_string(),
                stderr: String::from_utf8_lossy(&stderr).trim().to_string(),
            });
        }
        String::from_utf8(stdout).map_err(|e| SlurmError::Parse {
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
        let e = RealSlurm::default()
            .run("gangplan-no-such-program", &["x".into()])
            .unwrap_err();
        assert!(matches!(e, SlurmError::Spawn { .. }));
    }

    #[test]
    fn a_command_past_its_deadline_is_killed() {
        let started = Instant::now();
        let e = RealSlurm::new(Duration::from_millis(300))
            .run("sleep", &["30".into()])
            .unwrap_err();
        assert!(matches!(e, SlurmError::Timeout { .. }), "{e}");
        assert!(e.to_string().contains("sleep 30"), "{e}");
        assert!(started.elapsed() < Duration::from_secs(10));
    }

    #[test]
    fn refusals_that_pass_by_themselves() {
        let db_index = "slurm_update error: Job update not available right now, \
                        the DB index is being set, try again in a bit";
        assert!(is_refused_for_now(db_index));
        assert!(is_refused_for_now(
            "error: Resource temporarily unavailable"
        ));
        for lasting in [
            "Invalid job id specified",
            "Unable to contact slurm controller (connect failure)",
            "Requested node configuration is not available",
        ] {
            assert!(!is_refused_for_now(lasting), "{lasting}");
        }
    }

    #[test]
    fn output_and_failures_of_a_quick_command() {
        let cli = RealSlurm::default();
        assert_eq!(cli.run("echo", &["hi".into()]).unwrap(), "hi\n");
        let e = cli.run("false", &[]).unwrap_err();
        assert!(matches!(e, SlurmError::Command { .. }), "{e}");
    }
}
