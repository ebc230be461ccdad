//! Ping flood on the guest's loopback interface: iputils `ping -f -c N -q
//! 127.0.0.1` (busybox ping has no flood mode), as the 2006 markers mail ran
//! it. Metric: `rate`, packets transmitted per second of the agent's
//! CLOCK_MONOTONIC wall time, higher is better (the mail divided the packet
//! count by `time`'s real seconds the same way).

use super::{Guest, Measurement, OutputError, Refusal, Workload};
use crate::base::protocol::{Directive, RunRecord};
use serde::{Deserialize, Serialize};

pub const PROGRAM: &str = "/usr/bin/ping";

/// The largest ICMP payload of an IPv4 packet.
const MAX_SIZE: u64 = 65_507;

/// The ping flood's settings. The sweep parameter is the packet count.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PingFloodSpec {
    /// ICMP payload bytes (`-s`); 56 is ping's default.
    #[serde(default = "default_size")]
    pub size: u64,
}

fn default_size() -> u64 {
    56
}

/// (transmitted, received) from iputils' statistics line.
pub fn packet_counts(output: &str) -> Option<(u64, u64)> {
    let line = output.lines().find(|l| l.contains("packets transmitted"))?;
    let mut numbers = line
        .split(',')
        .filter_map(|part| part.split_whitespace().next()?.parse::<u64>().ok());
    Some((numbers.next()?, numbers.next()?))
}

impl Workload for PingFloodSpec {
    const PARAM_LABEL: &'static str = "packets";

    fn check(&self, _params: &[u64], _guest: Guest<'_>) -> Result<(), Refusal> {
        if self.size > MAX_SIZE {
            return Err(format!("ping-flood: size must be at most {MAX_SIZE} bytes").into());
        }
        Ok(())
    }

    /// A flood's work is its packet count, the parameter itself.
    fn scale(&mut self, params: &mut Vec<u64>, factor: f64) {
        let mut scaled: Vec<u64> = Vec::new();
        for &count in params.iter() {
            let count = super::scaled(count, factor);
            // Counts that round alike are one point.
            if !scaled.contains(&count) {
                scaled.push(count);
            }
        }
        *params = scaled;
    }

    /// Loopback is down in a fresh guest.
    fn setup(&self) -> Vec<Directive> {
        vec![Directive::Setup {
            argv: ["/bin/busybox", "ip", "link", "set", "lo", "up"]
                .map(String::from)
                .to_vec(),
        }]
    }

    fn command(&self, count: u64) -> Vec<String> {
        vec![
            PROGRAM.into(),
            "-f".into(),
            "-q".into(),
            "-n".into(),
            "-c".into(),
            count.to_string(),
            "-s".into(),
            self.size.to_string(),
            "127.0.0.1".into(),
        ]
    }

    fn measure(&self, record: &RunRecord) -> Result<Vec<Measurement>, OutputError> {
        let (transmitted, received) = packet_counts(&record.output).ok_or_else(|| {
            OutputError::new("ping-flood", "ping printed no statistics")
                .with_output(record.output.trim())
        })?;
        if transmitted == 0 || record.elapsed_ns == 0 {
            return Err(
                OutputError::new("ping-flood", "ping transmitted nothing")
                    .with_output(record.output.trim()),
            );
        }
        if received < transmitted {
            return Err(OutputError::new(
                "ping-flood",
                format!(
                    "ping lost {} of {transmitted} packets on loopback",
                    transmitted - received
                ),
            ));
        }
        Ok(vec![Measurement {
            metric: "rate".into(),
            unit: "packets/s".into(),
            higher_is_better: true,
            value: transmitted as f64 / (record.elapsed_ns as f64 / 1e9),
        }])
    }

    fn describe(&self, params: &str) -> String {
        format!("ping -f -q -n -c {params} -s {} 127.0.0.1", self.size)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// iputils 20221126 in a markbench guest (TCG), `ping -f -q -c 2000 127.0.0.1`.
    const CAPTURED: &str = "PING 127.0.0.1 (127.0.0.1) 56(84) bytes of data.\n\n\
--- 127.0.0.1 ping statistics ---\n\
2000 packets transmitted, 2000 received, 0% packet loss, time 376ms\n\
rtt min/avg/max/mdev = 0.013/0.088/45.604/1.182 ms, pipe 2, ipg/ewma 0.188/0.035 ms\n";

    const PING: PingFloodSpec = PingFloodSpec { size: 56 };

    #[test]
    fn scaling_shrinks_the_packet_counts_and_merges_counts_that_round_alike() {
        let mut params = vec![2000, 100, 120];
        PING.clone().scale(&mut params, 0.01);
        assert_eq!(params, [20, 1]);
    }

    fn record(output: &str) -> RunRecord {
        crate::guest::workloads::finished_run("ping-flood/2000", output, 759_654_320)
    }

    #[test]
    fn captured_output_gives_packets_per_second() {
        assert_eq!(packet_counts(CAPTURED), Some((2000, 2000)));
        let m = PING.measure(&record(CAPTURED)).unwrap();
        assert_eq!(m[0].metric, "rate");
        assert_eq!(m[0].unit, "packets/s");
        assert!(m[0].higher_is_better);
        assert!((m[0].value - 2000.0 / 0.75965432).abs() < 1e-6);
    }

    #[test]
    fn losses_and_missing_statistics_are_errors() {
        let lossy = CAPTURED.replace("2000 received", "1990 received");
        assert!(PING.measure(&record(&lossy))
            .unwrap_err().to_string()
            .contains("lost 10 of 2000"));
        assert!(PING.measure(&record("ping: socket: Operation not permitted\n"))
            .unwrap_err().to_string()
            .contains("no statistics"));
    }

    #[test]
    fn command_floods_loopback_quietly() {
        assert_eq!(
            PING.command(5000).join(" "),
            "/usr/bin/ping -f -q -n -c 5000 -s 56 127.0.0.1"
        );
    }
}
