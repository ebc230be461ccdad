use clap::Parser;

fn main() {
    let cli = markbench::cli::Cli::parse();
    let code = match markbench::cli::run(cli) {
        Ok(code) => code,
        Err(e) => {
            markbench::message::error(format_args!("{e:#}"));
            markbench::exit::of_error(&e)
        }
    };
    std::process::exit(code);
}
