//! The `gangplan` command line. See `gangplan --help` and README.md.

mod cli;

fn main() {
    std::process::exit(cli::run());
}
