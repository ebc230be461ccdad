//! Ctrl-C in a process with markbench's one handler installed, as `main`
//! installs it: while a job watches for it, the job is marked interrupted
//! and its words are shown; otherwise the process ends at once, killed by
//! SIGINT as if it caught nothing. The test runs itself again as the
//! process to interrupt.

use markbench::stages::vm;
use std::os::unix::process::ExitStatusExt;
use std::time::Duration;

const CHILD: &str = "MARKBENCH_CTRL_C_CHILD";

fn press_ctrl_c() {
    // SAFETY: sends SIGINT to this process; no memory is touched.
    unsafe {
        libc::kill(libc::getpid(), libc::SIGINT);
    }
}

/// Waits up to 10 s for `done`.
fn wait_for(done: impl Fn() -> bool) -> bool {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while std::time::Instant::now() < deadline {
        if done() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    false
}

#[test]
fn ctrl_c_stops_a_watching_job_and_ends_the_process_otherwise() {
    if std::env::var_os(CHILD).is_some() {
        ctrlc::set_handler(vm::on_ctrl_c).unwrap();
        {
            let _outer = vm::watch_interrupts("the run's words");
            let _inner = vm::watch_interrupts("the bisection's words");
            press_ctrl_c();
            assert!(wait_for(vm::interrupted), "the job was not interrupted");
            eprintln!("still running");
        }
        press_ctrl_c();
        std::thread::sleep(Duration::from_secs(10));
        eprintln!("not ended");
        return;
    }
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "ctrl_c_stops_a_watching_job_and_ends_the_process_otherwise",
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD, "1")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.signal(), Some(libc::SIGINT), "{stderr}");
    assert!(
        stderr.contains("markbench: interrupted: the bisection's words")
            && !stderr.contains("the run's words")
            && stderr.contains("still running")
            && !stderr.contains("not ended"),
        "{stderr}"
    );
}
