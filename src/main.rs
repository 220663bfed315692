//! The `gangplan` command line. See `gangplan --help` and README.md.

mod cli;

use std::io::Write;

fn main() {
    // A reader that goes away (`gangplan validate ... | head -1`) ends the process as it ends
    // any Unix tool, by SIGPIPE (status 141 in a shell), not by a failed print called a bug.
    // Child processes get stdin from /dev/null and sockets are written without the signal, so
    // only the standard streams can raise it.
    // SAFETY: restoring a signal's default disposition before any thread starts.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let code = cli::run();
    // A solver thread the round's deadline left behind may still be inside HiGHS: `exit`
    // would run HiGHS's static destructors under it (a rare abort at the deadline). Every
    // output file is written and renamed by now; flush the standard streams and end the
    // process without running them.
    let _ = std::io::stdout().flush();
    let _ = std::io::stderr().flush();
    // SAFETY: `_exit` ends the process at once; nothing after it runs.
    unsafe { libc::_exit(code) }
}
