use clap::Parser;

fn main() -> std::process::ExitCode {
    isolint::cli::install_panic_hook();
    let cli = isolint::cli::Cli::parse();
    isolint::cli::run(cli).into()
}
