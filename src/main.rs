use clap::Parser;
use markbench::error::InputError;

fn main() {
    let cli = markbench::cli::Cli::parse();
    let code = match markbench::cli::run(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("markbench: error: {e:#}");
            // Input the user must fix exits 2; failures of the machinery exit 1.
            if e.chain().any(|c| c.downcast_ref::<InputError>().is_some()) {
                2
            } else {
                1
            }
        }
    };
    std::process::exit(code);
}
