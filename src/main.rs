use clap::Parser;

fn main() {
    let cli = isolint::cli::Cli::parse();
    std::process::exit(isolint::cli::run(cli));
}
