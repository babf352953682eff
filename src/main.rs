use std::process::ExitCode;

/// mimalloc: the render engine allocates many small strings and maps;
/// a thread-caching allocator keeps large trees fast (see README).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    krmsync::cli::main()
}
