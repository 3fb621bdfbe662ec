//! The `a2a-chaos` binary: parses arguments and runs [`a2a_chaos::cli`].

use clap::Parser;

fn main() {
    let cli = a2a_chaos::cli::Cli::parse();
    std::process::exit(a2a_chaos::cli::main(cli));
}
