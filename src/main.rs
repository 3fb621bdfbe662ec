//! The `a2a-chaos` binary: parses arguments and runs [`a2a_chaos::cli`].

use clap::Parser;

/// mimalloc instead of glibc's malloc: a standard seed spent about a third of its time in
/// the allocator (measured with `perf`; see docs/PERFORMANCE.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    // A reader that goes away (`a2a-chaos run | head`) ends the program quietly, as it
    // would a C program on SIGPIPE, instead of panicking on the next print.
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let message = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or("");
        if message.contains("failed printing to stdout") && message.contains("Broken pipe") {
            std::process::exit(0);
        }
        default_hook(info);
    }));
    let cli = a2a_chaos::cli::Cli::parse();
    std::process::exit(a2a_chaos::cli::main(cli));
}
