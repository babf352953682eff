use std::process::ExitCode;

fn main() -> ExitCode {
    krmsync::cli::main()
}
