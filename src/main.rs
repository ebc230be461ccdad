use clap::Parser;

fn main() {
    let cli = markbench::cli::Cli::parse();
    let code = match markbench::cli::run(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("markbench: error: {e:#}");
            markbench::exit::of_error(&e)
        }
    };
    std::process::exit(code);
}
