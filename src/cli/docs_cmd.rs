//! `gangplan completions SHELL` and `gangplan man`: shell completions and a man page, both
//! generated from the clap definitions, so they never disagree with `--help`.

use super::{exit, Cli, Failure};
use clap::{Args, CommandFactory};
use clap_complete::Shell;

/// Print shell completions.
#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell: bash, zsh, fish, elvish or powershell. Install, e.g. for bash:
    /// `gangplan completions bash > /etc/bash_completion.d/gangplan`.
    pub shell: Shell,
}

/// Print the man page (roff).
#[derive(Debug, Args)]
pub struct ManArgs {}

/// Run `completions`.
pub fn completions(a: CompletionsArgs) -> Result<i32, Failure> {
    let mut cmd = Cli::command();
    clap_complete::generate(a.shell, &mut cmd, "gangplan", &mut std::io::stdout());
    Ok(exit::OK)
}

/// Run `man`: gangplan(1) on stdout, e.g. `gangplan man > /usr/local/share/man/man1/gangplan.1`.
pub fn man(_: ManArgs) -> Result<i32, Failure> {
    let page = clap_mangen::Man::new(Cli::command());
    let mut out = Vec::new();
    page.render(&mut out)
        .map_err(|e| Failure::new(exit::IO, e.into()))?;
    use std::io::Write;
    std::io::stdout()
        .write_all(&out)
        .map_err(|e| Failure::new(exit::IO, e.into()))?;
    Ok(exit::OK)
}
