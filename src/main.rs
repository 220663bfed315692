//! The `gangplan` command line. See `gangplan --help` and README.md.

mod cli;

use std::io::Write;

fn main() {
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
