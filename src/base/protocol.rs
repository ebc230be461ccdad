//! The wire format between the host and the guest agent.
//!
//! This file is compiled twice: into the `markbench` library and, through a
//! `#[path]` include, into the static guest agent, which uses `std` only. So it
//! must not use any crate.
//!
//! Host → guest: a job file, `/job` in the initramfs, one directive per line,
//! fields separated by tabs (arguments therefore cannot contain tabs or
//! newlines; the host checks that when it writes the job).
//!
//! ```text
//! markbench-job 1
//! setup   <argv…>                       run once, untimed, must exit 0
//! before  <id> <argv…>                  run untimed before each iteration of run <id>
//! run     <id> <iterations> <argv…>     run `iterations` times, each timed
//! sysrq   <key>                         write <key> to /proc/sysrq-trigger
//! ```
//!
//! Guest → host: lines on the results serial port (ttyS1), kept apart from
//! the kernel console (ttyS0) so console noise can never corrupt a sample.
//! Every line starts with [`LINE_TAG`]; the host ignores anything else.
//!
//! ```text
//! MB1 hello  <kernel release> <online cpus> <kernel cmdline>
//! MB1 setup  <exit status> <escaped output>
//! MB1 run    <id> <iteration> <exit status> <elapsed ns> <user ns> <sys ns> <escaped output>
//! MB1 error  <escaped message>
//! MB1 done
//! ```

use std::fmt::Write as _;

/// First token of every line the agent sends on the results port.
pub const LINE_TAG: &str = "MB1";
/// First line of every job file.
pub const JOB_HEADER: &str = "markbench-job 1";

/// One directive of a job file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Directive {
    /// Run a command once before the timed runs (e.g. bring up loopback).
    Setup { argv: Vec<String> },
    /// Run a command `iterations` times, timing each run.
    Run {
        id: String,
        iterations: u32,
        argv: Vec<String>,
    },
    /// A command run untimed before every iteration of the run with this id
    /// (e.g. removing the previous iteration's objects before a compile).
    Before { id: String, argv: Vec<String> },
    /// Trigger a magic sysrq key (used by the fault tests to crash a guest).
    Sysrq { key: char },
    /// `rounds` times, for each online CPU in order: pin the agent to it
    /// and run the which-vCPU marker (the trial of the plugin's vCPU index).
    WhichVcpu { rounds: u32 },
}

/// One message from the agent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Message {
    Hello {
        kernel_release: String,
        /// `uname -v`: the build's number, flags and time stamp (empty from
        /// agents that did not report it).
        kernel_version: String,
        online_cpus: String,
        cmdline: String,
    },
    Setup {
        status: i32,
        output: String,
    },
    Run(RunRecord),
    Error {
        message: String,
    },
    Done,
}

/// One timed execution of a command inside the guest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunRecord {
    pub id: String,
    pub iteration: u32,
    /// Exit code, or 128 + signal number when the command was killed.
    pub status: i32,
    /// Wall time measured with the guest's CLOCK_MONOTONIC.
    pub elapsed_ns: u64,
    /// CPU time of the command and its children, from the agent's
    /// `/proc/self/stat` cutime/cstime (USER_HZ resolution, 10 ms).
    pub user_ns: u64,
    pub sys_ns: u64,
    /// stdout followed by stderr.
    pub output: String,
}

/// Escapes a field so it holds no tab, newline or carriage return.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            c => out.push(c),
        }
    }
    out
}

/// Reverses [`escape`]. Unknown escapes are kept as they are.
pub fn unescape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('\\') => out.push('\\'),
            Some('t') => out.push('\t'),
            Some('n') => out.push('\n'),
            Some('r') => out.push('\r'),
            Some(other) => {
                out.push('\\');
                out.push(other);
            }
            None => out.push('\\'),
        }
    }
    out
}

impl Directive {
    /// Formats the directive as one job-file line (without newline).
    /// Fails when an argument holds a tab or newline, which the format cannot carry.
    pub fn to_line(&self) -> Result<String, String> {
        let check = |argv: &[String]| -> Result<(), String> {
            if argv.is_empty() {
                return Err("empty command".to_string());
            }
            for arg in argv {
                if arg.contains(['\t', '\n', '\r']) {
                    return Err(format!("argument {arg:?} contains a tab or newline"));
                }
            }
            Ok(())
        };
        match self {
            Directive::Setup { argv } => {
                check(argv)?;
                Ok(format!("setup\t{}", argv.join("\t")))
            }
            Directive::Run {
                id,
                iterations,
                argv,
            } => {
                check(argv)?;
                check(std::slice::from_ref(id))?;
                Ok(format!("run\t{id}\t{iterations}\t{}", argv.join("\t")))
            }
            Directive::Before { id, argv } => {
                check(argv)?;
                check(std::slice::from_ref(id))?;
                Ok(format!("before\t{id}\t{}", argv.join("\t")))
            }
            Directive::Sysrq { key } => Ok(format!("sysrq\t{key}")),
            Directive::WhichVcpu { rounds } => Ok(format!("which-vcpu\t{rounds}")),
        }
    }

    /// Parses one job-file line. Blank lines, comments and the header give `Ok(None)`.
    pub fn parse_line(line: &str) -> Result<Option<Directive>, String> {
        let line = line.trim_end_matches(['\n', '\r']);
        if line.trim().is_empty() || line.starts_with('#') || line == JOB_HEADER {
            return Ok(None);
        }
        let fields: Vec<&str> = line.split('\t').collect();
        let owned = |f: &[&str]| f.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        match fields[0] {
            "setup" if fields.len() >= 2 => Ok(Some(Directive::Setup {
                argv: owned(&fields[1..]),
            })),
            "run" if fields.len() >= 4 => {
                let iterations = fields[2]
                    .parse()
                    .map_err(|_| format!("bad iteration count {:?}", fields[2]))?;
                Ok(Some(Directive::Run {
                    id: fields[1].to_string(),
                    iterations,
                    argv: owned(&fields[3..]),
                }))
            }
            "before" if fields.len() >= 3 => Ok(Some(Directive::Before {
                id: fields[1].to_string(),
                argv: owned(&fields[2..]),
            })),
            "sysrq" if fields.len() == 2 && fields[1].chars().count() == 1 => {
                Ok(Some(Directive::Sysrq {
                    key: fields[1].chars().next().unwrap_or('h'),
                }))
            }
            "which-vcpu" if fields.len() == 2 => Ok(Some(Directive::WhichVcpu {
                rounds: fields[1]
                    .parse()
                    .map_err(|_| format!("bad round count {:?}", fields[1]))?,
            })),
            other => Err(format!("unknown or incomplete directive {other:?}")),
        }
    }
}

impl Message {
    /// Formats the message as one results-port line (without newline).
    pub fn to_line(&self) -> String {
        let mut line = String::from(LINE_TAG);
        match self {
            Message::Hello {
                kernel_release,
                kernel_version,
                online_cpus,
                cmdline,
            } => {
                let _ = write!(
                    line,
                    "\thello\t{}\t{}\t{}\t{}",
                    escape(kernel_release),
                    escape(online_cpus),
                    escape(cmdline),
                    escape(kernel_version)
                );
            }
            Message::Setup { status, output } => {
                let _ = write!(line, "\tsetup\t{status}\t{}", escape(output));
            }
            Message::Run(r) => {
                let _ = write!(
                    line,
                    "\trun\t{}\t{}\t{}\t{}\t{}\t{}\t{}",
                    escape(&r.id),
                    r.iteration,
                    r.status,
                    r.elapsed_ns,
                    r.user_ns,
                    r.sys_ns,
                    escape(&r.output)
                );
            }
            Message::Error { message } => {
                let _ = write!(line, "\terror\t{}", escape(message));
            }
            Message::Done => line.push_str("\tdone"),
        }
        line
    }

    /// Parses one line from the results port. Lines without the tag give
    /// `Ok(None)` (the port may carry stray bytes from early boot); a tagged
    /// line that does not parse is an error, because it means a lost sample.
    pub fn parse_line(line: &str) -> Result<Option<Message>, String> {
        let line = line.trim_end_matches(['\n', '\r']);
        // `match`, not `let … else`: the arm64 agent is built with Debian's
        // rustc 1.63, which has no `let … else`.
        let rest = match line.strip_prefix(LINE_TAG) {
            Some(rest) => rest,
            None => return Ok(None),
        };
        let rest = match rest.strip_prefix('\t') {
            Some(rest) => rest,
            None => return Ok(None),
        };
        let fields: Vec<&str> = rest.split('\t').collect();
        let num = |s: &str, what: &str| -> Result<u64, String> {
            s.parse()
                .map_err(|_| format!("bad {what} {s:?} in {line:?}"))
        };
        let int = |s: &str, what: &str| -> Result<i32, String> {
            s.parse()
                .map_err(|_| format!("bad {what} {s:?} in {line:?}"))
        };
        let msg = match fields.as_slice() {
            ["hello", release, cpus, cmdline] => Message::Hello {
                kernel_release: unescape(release),
                kernel_version: String::new(),
                online_cpus: unescape(cpus),
                cmdline: unescape(cmdline),
            },
            ["hello", release, cpus, cmdline, version] => Message::Hello {
                kernel_release: unescape(release),
                kernel_version: unescape(version),
                online_cpus: unescape(cpus),
                cmdline: unescape(cmdline),
            },
            ["setup", status, output] => Message::Setup {
                status: int(status, "exit status")?,
                output: unescape(output),
            },
            ["run", id, iteration, status, elapsed, user, sys, output] => Message::Run(RunRecord {
                id: unescape(id),
                iteration: num(iteration, "iteration")? as u32,
                status: int(status, "exit status")?,
                elapsed_ns: num(elapsed, "elapsed time")?,
                user_ns: num(user, "user time")?,
                sys_ns: num(sys, "system time")?,
                output: unescape(output),
            }),
            ["error", message] => Message::Error {
                message: unescape(message),
            },
            ["done"] => Message::Done,
            _ => return Err(format!("malformed agent line {line:?}")),
        };
        Ok(Some(msg))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directives_round_trip() {
        let all = [
            Directive::Setup {
                argv: vec!["/bin/busybox".into(), "ip".into()],
            },
            Directive::Before {
                id: "k/2".into(),
                argv: vec!["/bin/rm".into(), "-rf".into(), "/tmp/o".into()],
            },
            Directive::Run {
                id: "k/2".into(),
                iterations: 3,
                argv: vec!["/usr/bin/make".into(), "-j2".into()],
            },
            Directive::Sysrq { key: 'c' },
        ];
        for d in all {
            let line = d.to_line().unwrap();
            assert_eq!(Directive::parse_line(&line).unwrap(), Some(d));
        }
        assert!(Directive::Setup {
            argv: vec!["a\tb".into()]
        }
        .to_line()
        .is_err());
        assert!(Directive::parse_line("launch\tx").is_err());
    }

    #[test]
    fn a_hello_without_the_version_is_read_as_an_older_agent_sent_it() {
        let line = format!("{LINE_TAG}\thello\t6.1.0\t0-1\tconsole=ttyS0");
        assert_eq!(
            Message::parse_line(&line).unwrap(),
            Some(Message::Hello {
                kernel_release: "6.1.0".into(),
                kernel_version: String::new(),
                online_cpus: "0-1".into(),
                cmdline: "console=ttyS0".into(),
            })
        );
    }

    #[test]
    fn messages_round_trip_with_awkward_output() {
        let all = [
            Message::Hello {
                kernel_release: "6.1.192".into(),
                kernel_version: "#1 SMP PREEMPT_DYNAMIC Wed Jan  1 00:00:00 UTC 2020".into(),
                online_cpus: "0-1".into(),
                cmdline: "a b".into(),
            },
            Message::Setup {
                status: 0,
                output: String::new(),
            },
            Message::Run(RunRecord {
                id: "hackbench/4".into(),
                iteration: 2,
                status: 0,
                elapsed_ns: 123,
                user_ns: 10_000_000,
                sys_ns: 0,
                output: "tab\there\nnew line \\ backslash\r\n".into(),
            }),
            Message::Error {
                message: "boom\n".into(),
            },
            Message::Done,
        ];
        for m in all {
            let line = m.to_line();
            assert!(!line.contains('\n'));
            assert_eq!(Message::parse_line(&line).unwrap(), Some(m));
        }
    }

    #[test]
    fn console_noise_is_ignored_but_broken_tagged_lines_are_errors() {
        assert_eq!(
            Message::parse_line("[    1.23] random console text").unwrap(),
            None
        );
        assert!(Message::parse_line("MB1\trun\tx\tnot-a-number\t0\t1\t2\t3\tout").is_err());
    }
}
