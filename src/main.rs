use clap::Parser;
use markbench::base::exit::ExitStatus;

fn main() {
    let cli = markbench::cli::Cli::parse();
    let status = match markbench::cli::run(cli) {
        Ok(status) => status.or_interrupted(markbench::stages::vm::interrupted()),
        Err(e) => {
            markbench::base::message::error(format_args!("{e:#}"));
            ExitStatus::of_error(&e, markbench::stages::vm::interrupted())
        }
    };
    std::process::exit(status.code());
}
