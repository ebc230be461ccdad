use clap::Parser;
use markbench::exit::ExitStatus;

fn main() {
    let cli = markbench::cli::Cli::parse();
    let status = match markbench::cli::run(cli) {
        Ok(status) => status.or_interrupted(markbench::vm::interrupted()),
        Err(e) => {
            markbench::message::error(format_args!("{e:#}"));
            ExitStatus::of_error(&e, markbench::vm::interrupted())
        }
    };
    std::process::exit(status.code());
}
