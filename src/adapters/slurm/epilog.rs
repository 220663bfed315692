//! End notices from Slurm's Epilog, for `gangplan slurm serve --listen ADDR`.
//!
//! Slurm 22.05 starts a released job at the controller's next one-second tick (a hold released
//! by `scontrol release` only queues a scheduling pass), but runs its scheduler at once when a
//! node reports that a job's Epilog finished. `scripts/gangplan-epilog.sh`, installed as the
//! managed nodes' `Epilog`, turns that into a start without the tick: it connects to `serve`,
//! sends one line, `ended <job id>`, and waits (bounded by its own timeout) for the answer,
//! which `serve` gives once a round that counts the job as ended has released what goes on its
//! nodes. The Epilog then exits, and Slurm's pass starts the released jobs on the nodes that
//! job leaves. The job is `COMPLETING` in the meantime; the round counts its GPUs free
//! ([`crate::adapters::slurm::Snapshot::forget_ended`]).
//!
//! The protocol, one connection per notice:
//!
//! ```text
//! epilog -> serve:  ended 4711\n
//! serve -> epilog:  planned\n      (after the round; or `error: <why>\n` for a bad line)
//! ```
//!
//! Nothing here starts or frees anything by itself: a notice for a job that is not completing
//! changes nothing in the round, and an Epilog that gets no answer exits at its timeout.

use super::SlurmError;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError, Sender};
use std::time::Duration;

/// How long a connection may take to send its line.
const READ_TIMEOUT: Duration = Duration::from_secs(2);

/// Longest line read from a connection, bytes.
const MAX_LINE: u64 = 64;

/// One job's end, told by its Epilog, waiting for the round that plans it.
#[derive(Debug)]
pub struct EndNotice {
    /// The job id the Epilog gave (digits).
    pub job: String,
    /// Where the answer goes.
    reply: TcpStream,
}

impl EndNotice {
    /// Tell the Epilog that a round has planned the job's end (it may exit now). An Epilog
    /// that stopped waiting is not an error: its node is free already.
    pub fn answer(mut self) {
        let _ = self.reply.write_all(b"planned\n");
    }
}

/// The notices that came since the last look.
#[derive(Debug)]
pub struct EndNotices {
    rx: Receiver<EndNotice>,
    /// The address listened on (with the port the system gave, for `:0`).
    pub local: std::net::SocketAddr,
}

impl EndNotices {
    /// Listen on `addr` (`HOST:PORT`); a thread accepts the Epilogs' connections.
    pub fn listen(addr: &str) -> Result<EndNotices, SlurmError> {
        let listener = TcpListener::bind(addr).map_err(|e| SlurmError::Invalid {
            what: "listen address",
            value: addr.to_string(),
            message: format!("cannot listen there: {e} (give HOST:PORT, e.g. 127.0.0.1:6830)"),
        })?;
        let local = listener.local_addr().map_err(|e| SlurmError::Invalid {
            what: "listen address",
            value: addr.to_string(),
            message: e.to_string(),
        })?;
        let (tx, rx) = channel();
        std::thread::spawn(move || accept_loop(listener, tx));
        Ok(EndNotices { rx, local })
    }

    /// Wait up to `timeout` for a notice; then every notice that has come.
    pub fn wait(&self, timeout: Duration) -> Vec<EndNotice> {
        let first = match self.rx.recv_timeout(timeout) {
            Ok(n) => n,
            Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => return vec![],
        };
        let mut all = vec![first];
        all.extend(self.rx.try_iter());
        all
    }
}

/// Accept connections for as long as the process runs; each is read on a thread of its own so
/// that a slow client never holds up another job's notice.
fn accept_loop(listener: TcpListener, tx: Sender<EndNotice>) {
    for stream in listener.incoming().flatten() {
        let tx = tx.clone();
        std::thread::spawn(move || {
            if let Some(notice) = read_notice(stream) {
                let _ = tx.send(notice);
            }
        });
    }
}

/// Read one `ended <job id>` line; a bad one is answered with `error: ...` and dropped.
fn read_notice(stream: TcpStream) -> Option<EndNotice> {
    stream.set_read_timeout(Some(READ_TIMEOUT)).ok()?;
    let mut line = String::new();
    BufReader::new(stream.try_clone().ok()?.take(MAX_LINE))
        .read_line(&mut line)
        .ok()?;
    match parse_line(&line) {
        Ok(job) => Some(EndNotice { job, reply: stream }),
        Err(why) => {
            let mut s = stream;
            let _ = writeln!(s, "error: {why}");
            None
        }
    }
}

/// The job id of an `ended <job id>` line.
pub fn parse_line(line: &str) -> Result<String, String> {
    let mut words = line.split_whitespace();
    match (words.next(), words.next(), words.next()) {
        (Some("ended"), Some(id), None)
            if !id.is_empty() && id.len() <= 20 && id.bytes().all(|b| b.is_ascii_digit()) =>
        {
            Ok(id.to_string())
        }
        _ => Err(format!(
            "expected `ended <job id>` (digits), got {:?}",
            line.trim_end()
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_name_one_numeric_job() {
        assert_eq!(parse_line("ended 4711\n"), Ok("4711".to_string()));
        assert!(parse_line("ended\n").is_err());
        assert!(parse_line("ended 47 11\n").is_err());
        assert!(parse_line("ended 4711;rm\n").is_err());
        assert!(parse_line("started 4711\n").is_err());
        assert!(parse_line(&format!("ended {}\n", "9".repeat(21))).is_err());
    }

    #[test]
    fn a_notice_is_received_and_answered_after_the_round() {
        let notices = EndNotices::listen("127.0.0.1:0").unwrap();
        let mut epilog = TcpStream::connect(notices.local).unwrap();
        epilog.write_all(b"ended 42\n").unwrap();
        let got = notices.wait(Duration::from_secs(5));
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].job, "42");
        for n in got {
            n.answer();
        }
        let mut answer = String::new();
        epilog.read_to_string(&mut answer).unwrap();
        assert_eq!(answer, "planned\n");
    }

    #[test]
    fn a_bad_line_is_refused_and_no_notice_comes() {
        let notices = EndNotices::listen("127.0.0.1:0").unwrap();
        let mut epilog = TcpStream::connect(notices.local).unwrap();
        epilog.write_all(b"ended all\n").unwrap();
        let mut answer = String::new();
        epilog.read_to_string(&mut answer).unwrap();
        assert!(
            answer.starts_with("error: expected `ended <job id>`"),
            "{answer}"
        );
        assert!(notices.wait(Duration::from_millis(200)).is_empty());
    }
}
