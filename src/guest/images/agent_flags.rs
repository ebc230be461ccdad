//! The guest agent's compiler flags, one list for both of its builds: the
//! build script's (x86-64's agent, embedded in markbench) and the run
//! time's (another architecture's, with Debian's rustc), so the two agents
//! are built the same way.

/// Static (glibc's `crt-static`), stripped, aborting on a panic; the caller
/// adds `--target`, the path remapping, the source and the output.
pub const AGENT_RUSTC_FLAGS: [&str; 12] = [
    "--edition",
    "2021",
    "--crate-name",
    "markbench_guest",
    "-C",
    "opt-level=2",
    "-C",
    "strip=symbols",
    "-C",
    "panic=abort",
    "-C",
    "target-feature=+crt-static",
];
