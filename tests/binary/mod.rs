//! Running the built binary from a test file: its path, one run, its output as text.

use std::process::{Command, Output};

/// The gangplan binary cargo built for these tests.
pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_gangplan")
}

/// Run the binary with `args` and wait for it.
pub fn run(args: &[&str]) -> Output {
    Command::new(bin())
        .args(args)
        .output()
        .expect("the binary runs")
}

/// Output bytes as text.
pub fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).to_string()
}
