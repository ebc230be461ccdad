use clap::Parser;
use markbench::base::exit::ExitStatus;

fn main() {
    let cli = markbench::cli::Cli::parse();
    // The one handler of the process (a second cannot be installed): the
    // job under way decides what a press means (`vm::watch_interrupts`).
    if let Err(e) = ctrlc::set_handler(markbench::stages::vm::on_ctrl_c) {
        markbench::base::message::warning(format_args!(
            "Ctrl-C cannot be caught ({e}): it ends markbench at once, without a partial \
             report (--resume continues the run)"
        ));
    }
    let status = match markbench::cli::run(cli) {
        Ok(status) => status.or_interrupted(markbench::stages::vm::interrupted()),
        Err(e) => {
            markbench::base::message::error(format_args!("{e:#}"));
            ExitStatus::of_error(&e, markbench::stages::vm::interrupted())
        }
    };
    std::process::exit(status.code());
}
