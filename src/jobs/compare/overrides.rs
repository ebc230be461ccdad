//! Command-line changes to a suite: to run a seed-scale suite at a size this
//! machine can take (`--scale 0.05 --cpus 2`), or a quick look with fewer
//! boots. They change the values the suite file gave and are checked as
//! those were; the suite itself stays what its file says.

use crate::base::error::{at_least_one, InputError};
use crate::guest::workloads::{Guest, WorkloadKind};
use crate::record::Overrides;
use crate::stages::suite::{self, Suite};

impl Overrides {
    /// The suite with these overrides applied, each value checked as the
    /// file's own would be (the same checks, naming the option instead of a
    /// line).
    pub fn apply(&self, file: &Suite) -> Result<Suite, InputError> {
        self.apply_saying_what_is_left_out(file)
            .map(|(suite, _)| suite)
    }

    /// [`Overrides::apply`], and what `--cpus` leaves out of the suite, in
    /// words: each workload none of whose CPU counts it names, each count
    /// it names at which no workload runs.
    pub fn apply_saying_what_is_left_out(
        &self,
        file: &Suite,
    ) -> Result<(Suite, Vec<String>), InputError> {
        let mut suite = file.clone();
        let mut left_out = Vec::new();
        let bad = |m: String| Err(InputError::new(m));
        if let Some(scale) = self.scale {
            if !(scale > 0.0 && scale.is_finite()) {
                return bad(format!("--scale must be a positive number, got {scale}"));
            }
            for w in &mut suite.workloads {
                w.scale(scale);
            }
        }
        if let Some(boots) = self.boots {
            suite.boots = at_least_one(boots, "--boots").map_err(InputError::new)?;
        }
        if let Some(iterations) = self.iterations {
            suite.iterations = at_least_one(iterations, "--iterations").map_err(InputError::new)?;
            for w in &mut suite.workloads {
                w.iterations = None;
            }
        }
        if let Some(scope) = self.compile_scope {
            for w in &mut suite.workloads {
                if let WorkloadKind::KernelCompile(k) = &mut w.kind {
                    k.set_scope(scope.into());
                }
            }
        }
        if let Some(seed) = self.seed {
            suite.seed = seed;
        }
        self.apply_arch(&mut suite)?;
        self.apply_precision(&mut suite)?;
        if self.aa {
            let baseline = suite.variants[0].clone();
            let mut again = baseline.clone();
            again.name = format!("{}-again", again.name);
            suite.variants = vec![baseline, again];
        }
        if let Some(params) = &self.params {
            if params.is_empty() || params.contains(&0) {
                return bad(format!(
                    "--params takes values of at least 1, got {params:?}"
                ));
            }
            for w in &mut suite.workloads {
                w.params = params.clone();
            }
        }
        if let Some(cpus) = &self.cpus {
            suite::check_cpu_counts(cpus)
                .map_err(|why| InputError::new(format!("--cpus {cpus:?}: {why}")))?;
            if self.cpus_replace_own {
                suite.cpus = cpus.clone();
                for w in &mut suite.workloads {
                    w.cpus = None;
                }
            } else {
                left_out = keep_to_cpus(&mut suite, cpus)?;
            }
        }
        // The workloads as the overrides left them pass the file's checks.
        let guest = Guest {
            cpus: &suite.cpus,
            memory_mib: suite.memory_mib,
        };
        for w in &suite.workloads {
            w.check(guest).map_err(|r| InputError::new(r.message))?;
        }
        if let Some(c) = crate::guest::workloads::collision(&suite.workloads, &suite.cpus) {
            return bad(format!(
                "{} (after the command line's {})",
                c.describe(&suite.workloads),
                self.describe().join(", ")
            ));
        }
        // Last: the split depends on the boots, CPU counts and params above.
        if let Some(sel) = self.shard {
            crate::stages::shard::check(&suite, sel)?;
        }
        Ok((suite, left_out))
    }
}

/// `--cpus`: `suite` kept to the CPU counts `cpus` names. A workload of
/// CPU counts of its own keeps those of them `cpus` names, and does not
/// run when it names none (the suite's SMP point under `--cpus 1`); one
/// without runs at every count of `cpus`, as it ran at every count of the
/// suite's. The suite runs at the counts of `cpus` some workload runs at.
/// What is left out, in words; nothing left to run is input to fix.
fn keep_to_cpus(suite: &mut Suite, cpus: &[u32]) -> Result<Vec<String>, InputError> {
    let named = cpus
        .iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join(",");
    let mut left_out = Vec::new();
    let mut own_counts = Vec::new();
    let mut kept = Vec::new();
    for (i, mut w) in std::mem::take(&mut suite.workloads).into_iter().enumerate() {
        if let Some(own) = &w.cpus {
            let within: Vec<u32> = own.iter().copied().filter(|c| cpus.contains(c)).collect();
            if within.is_empty() {
                left_out.push(format!(
                    "workload {}, {} (--cpus {named} names none of its CPU counts)",
                    i + 1,
                    w.describe(suite.iterations, suite.warmup)
                ));
                own_counts.push(format!("workload {} at {own:?}", i + 1));
                continue;
            }
            w.cpus = Some(within);
        }
        kept.push(w);
    }
    if kept.is_empty() {
        return Err(InputError::new(format!(
            "--cpus {named} leaves nothing to run: each workload of {} runs only at CPU counts \
             of its own, and --cpus names none of them ({}); name some of those counts",
            suite.path.display(),
            own_counts.join(", ")
        )));
    }
    suite.workloads = kept;
    suite.cpus = cpus
        .iter()
        .copied()
        .filter(|&c| suite.workloads.iter().any(|w| w.runs_at(c)))
        .collect();
    for &c in cpus.iter().filter(|c| !suite.cpus.contains(c)) {
        left_out.push(format!(
            "{c} vCPU{} (no workload of the suite runs at {c})",
            if c == 1 { "" } else { "s" }
        ));
    }
    Ok(left_out)
}

impl Overrides {
    /// `--precision`, `--budget` and `--max-boots` over the suite's
    /// `precision`, `budget` and `max_boots`, checked as the file's are.
    /// `--arch`: the suite's guests of another architecture, refused where
    /// a workload or the cycle model cannot run there.
    fn apply_arch(&self, suite: &mut Suite) -> Result<(), InputError> {
        let Some(arch) = self.arch else {
            return Ok(());
        };
        if let Some(why) = suite
            .workloads
            .iter()
            .find_map(|w| suite::refusal_on(w, arch))
        {
            return Err(InputError::new(format!(
                "--arch {arch}: {why} ({})",
                suite.describe_path()
            )));
        }
        if suite.model.is_some() && !arch.is_default() {
            return Err(InputError::new(format!(
                "--arch {arch}: {} asks for the cycle model: {}",
                suite.describe_path(),
                suite::model_refusal(arch)
            )));
        }
        suite.arch = arch;
        Ok(())
    }

    fn apply_precision(&self, suite: &mut Suite) -> Result<(), InputError> {
        if let Some(percent) = self.precision {
            suite::Precision::check_percent(percent)
                .map_err(|m| InputError::new(format!("--{m}")))?;
            let kept = suite.precision.unwrap_or(suite::Precision {
                percent,
                budget_s: None,
                max_boots: None,
            });
            suite.precision = Some(suite::Precision { percent, ..kept });
        }
        if self.budget_s.is_none() && self.max_boots.is_none() {
            return Ok(());
        }
        let Some(precision) = suite.precision.as_mut() else {
            let flag = if self.budget_s.is_some() {
                "--budget"
            } else {
                "--max-boots"
            };
            return Err(InputError::new(format!(
                "{flag} bounds a run with a precision target, and {} has none: add --precision PCT (e.g. 0.5)",
                suite.path.display()
            )));
        };
        if let Some(budget) = self.budget_s {
            precision.budget_s = Some(budget);
        }
        if let Some(max_boots) = self.max_boots {
            precision.max_boots =
                Some(at_least_one(max_boots, "--max-boots").map_err(InputError::new)?);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::guest::workloads::kernel_compile::{
        CompileDriver, CompileScope, DEFAULT_COMPILE_TARGETS,
    };
    use crate::stages::suite::tests::{parse, COMPILE, GOOD};

    #[test]
    fn a_workload_can_run_at_some_of_the_suites_cpu_counts() {
        let text = GOOD.replace("cpus = [2]", "cpus = [1, 2]").replace(
            "loops = 10\n",
            "loops = 10\ncpus = [1]\n[[workload]]\nkind = \"hackbench\"\nparams = [4]\nloops = 10\ncpus = [2]\n",
        );
        let mut s = parse(&text).unwrap();
        let units = crate::stages::plan::expand(&s);
        for u in &units {
            let ids: Vec<String> = u.steps.iter().map(|st| st.id().to_wire(&s)).collect();
            let want: &[&str] = if u.cpus == 1 {
                &["0:hackbench/2", "0:hackbench/4"]
            } else {
                &["1:hackbench/4"]
            };
            assert_eq!(ids, want, "{u:?}");
            assert_eq!(u.steps[0].workload, usize::from(u.cpus == 2));
        }
        let e = parse(&GOOD.replace("loops = 10\n", "loops = 10\ncpus = [4]\n"))
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("s.toml:13:1:")
                && e.contains("must be one or more of the suite's CPU counts [2]"),
            "{e}"
        );
        let e = parse(&text.replace("cpus = [1, 2]", "cpus = [1, 2, 4]"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("no workload runs at 4 CPUs"), "{e}");
        // Runs of formats before 4 replaced every workload's own counts
        // with --cpus: where two then run one command at one point, each
        // would number its runs from 0 and a boot would record every
        // sample twice, so it is refused, naming both.
        let replacing = |cpus: Vec<u32>| Overrides {
            cpus: Some(cpus),
            cpus_replace_own: true,
            ..Overrides::default()
        };
        let e = replacing(vec![4]).apply(&s).unwrap_err().to_string();
        assert!(
            e.contains("workloads 1 and 2 both run") && e.contains("after the command line's"),
            "{e}"
        );
        let mut apart = s.clone();
        apart.workloads[1].params = vec![8];
        s = replacing(vec![4]).apply(&apart).unwrap();
        assert!(crate::stages::plan::expand(&s)
            .iter()
            .all(|u| u.steps.len() == 3));
    }

    /// A suite as `--cpus` leaves it: each workload's kind and CPU counts,
    /// the suite's counts, and what is left out.
    type Kept = (Vec<String>, Vec<u32>, Vec<String>);

    /// The suite of `text` as `--cpus cpus` leaves it.
    fn kept_to(text: &str, cpus: &[u32]) -> Result<Kept, String> {
        let (suite, left_out) = Overrides {
            cpus: Some(cpus.to_vec()),
            ..Overrides::default()
        }
        .apply_saying_what_is_left_out(&parse(text).unwrap())
        .map_err(|e| e.to_string())?;
        let workloads = suite
            .workloads
            .iter()
            .map(|w| format!("{} {:?}", w.kind(), w.cpus))
            .collect();
        Ok((workloads, suite.cpus, left_out))
    }

    #[test]
    fn cpus_on_the_command_line_keep_each_workload_to_its_own_counts() {
        // The default suite's shape: two 1-vCPU points and an SMP point.
        let text = GOOD.replace("cpus = [2]", "cpus = [1, 2]").replace(
            "loops = 10\n",
            "loops = 10\ncpus = [1]\n[[workload]]\nkind = \"ping-flood\"\nparams = [200]\n\
             cpus = [1]\n[[workload]]\nkind = \"hackbench\"\nparams = [2, 4]\nloops = 10\n\
             cpus = [2]\n",
        );
        let (workloads, cpus, left_out) = kept_to(&text, &[1]).unwrap();
        assert_eq!(workloads, ["hackbench Some([1])", "ping-flood Some([1])"]);
        assert_eq!(cpus, [1]);
        assert_eq!(left_out.len(), 1, "{left_out:?}");
        assert!(
            left_out[0].starts_with("workload 3, hackbench -g {2, 4}")
                && left_out[0].ends_with("on 2 vCPUs (--cpus 1 names none of its CPU counts)"),
            "{left_out:?}"
        );
        let (workloads, cpus, left_out) = kept_to(&text, &[2]).unwrap();
        assert_eq!(
            (workloads, cpus),
            (vec!["hackbench Some([2])".into()], vec![2])
        );
        assert_eq!(left_out.len(), 2, "{left_out:?}");
        // A count no workload runs at is left out, and said to be.
        let (workloads, cpus, left_out) = kept_to(&text, &[2, 4, 1]).unwrap();
        assert_eq!(workloads.len(), 3);
        assert_eq!(cpus, [2, 1]);
        assert_eq!(left_out, ["4 vCPUs (no workload of the suite runs at 4)"]);
        // Nothing left to run is input to fix, naming each workload's counts.
        let e = kept_to(&text, &[4]).unwrap_err();
        assert_eq!(
            e,
            "--cpus 4 leaves nothing to run: each workload of s.toml runs only at CPU counts of \
             its own, and --cpus names none of them (workload 1 at [1], workload 2 at [1], \
             workload 3 at [2]); name some of those counts"
        );
        // A workload without counts of its own runs at every count named,
        // as it ran at every count of the suite's.
        let (workloads, cpus, left_out) = kept_to(GOOD, &[1, 4]).unwrap();
        assert_eq!(
            (workloads, cpus),
            (vec!["hackbench None".into()], vec![1, 4])
        );
        assert!(left_out.is_empty(), "{left_out:?}");
        // A workload of several counts keeps those named.
        let both = GOOD
            .replace("cpus = [2]", "cpus = [1, 2, 4]")
            .replace("loops = 10\n", "loops = 10\ncpus = [1, 2, 4]\n");
        let (workloads, cpus, _) = kept_to(&both, &[4, 2]).unwrap();
        assert_eq!(
            (workloads, cpus),
            (vec!["hackbench Some([2, 4])".into()], vec![4, 2])
        );
    }

    #[test]
    fn a_compile_can_run_fewer_iterations_than_the_rest_until_the_command_line_says() {
        let text = format!(
            "{}{COMPILE}iterations = 1\nwarmup = 0\n",
            GOOD.replace("cpus = [2]", "cpus = [2]\nmemory_mib = 2048")
        );
        let mut s = parse(&text).unwrap();
        let (hackbench, compile) = (&s.workloads[0], &s.workloads[1]);
        assert_eq!(
            hackbench.iterations_in(s.iterations, s.warmup),
            (s.iterations, s.warmup)
        );
        assert_eq!(compile.iterations_in(s.iterations, s.warmup), (1, 0));
        match &compile.kind {
            WorkloadKind::KernelCompile(k) => assert_eq!(k.driver(), CompileDriver::Objects),
            other => panic!("parsed as {other:?}"),
        }
        s = Overrides {
            iterations: Some(4),
            ..Overrides::default()
        }
        .apply(&s)
        .unwrap();
        assert_eq!(s.workloads[1].iterations_in(s.iterations, s.warmup), (4, 0));
    }

    #[test]
    fn overrides_that_would_pool_unlike_workloads_or_repeat_a_param_are_refused() {
        // Apart at their own CPU counts in the file, together under --cpus.
        let text = GOOD.replace("cpus = [2]", "cpus = [1, 2]").replace(
            "loops = 10\n",
            "loops = 10\ncpus = [1]\n[[workload]]\nkind = \"hackbench\"\nparams = [4]\nloops = 50\ncpus = [2]\n",
        );
        let s = parse(&text).unwrap();
        let e = Overrides {
            cpus: Some(vec![2]),
            cpus_replace_own: true,
            ..Overrides::default()
        }
        .apply(&s)
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("workloads 1 and 2 both measure groups 4 at 2 vCPU(s)")
                && e.contains("would pool")
                && e.contains("cpus=[2]"),
            "{e}"
        );
        // Kept to their own counts, they stay apart; --params can make
        // two workloads of the same counts meet.
        assert!(Overrides {
            cpus: Some(vec![2]),
            ..Overrides::default()
        }
        .apply(&s)
        .is_ok());
        let same_counts = text
            .replace("cpus = [1]\n", "")
            .replace("cpus = [2]\n", "")
            .replace("params = [4]\nloops = 50", "params = [8]\nloops = 50");
        let e = Overrides {
            params: Some(vec![2]),
            ..Overrides::default()
        }
        .apply(&parse(&same_counts).unwrap())
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("workloads 1 and 2 both measure groups 2") && e.contains("params=[2]"),
            "{e}"
        );
        let e = Overrides {
            params: Some(vec![2, 2]),
            ..Overrides::default()
        }
        .apply(&parse(GOOD).unwrap())
        .unwrap_err()
        .to_string();
        assert!(e.contains("params lists 2 twice"), "{e}");
    }

    #[test]
    fn a_full_kernel_compile_shrinks_to_the_subset_on_the_command_line() {
        let text = format!(
            "{}{COMPILE}scope = \"full\"\n",
            GOOD.replace("cpus = [2]", "cpus = [2]\nmemory_mib = 2048")
        );
        let mut s = parse(&text).unwrap();
        let o = Overrides {
            compile_scope: Some(CompileScope::Subset.into()),
            ..Overrides::default()
        };
        s = o.apply(&s).unwrap();
        match &s.workloads[1].kind {
            WorkloadKind::KernelCompile(k) => {
                assert_eq!(k.make_targets(), DEFAULT_COMPILE_TARGETS);
                assert_eq!(k.driver(), CompileDriver::Objects);
            }
            other => panic!("parsed as {other:?}"),
        }
        assert_eq!(o.describe(), ["compile-scope=subset"]);
    }

    #[test]
    fn hackbench_group_counts_beyond_the_guests_task_limit_are_refused() {
        // The seed's largest point, 800 groups of 40 tasks, fits.
        let s = parse(&GOOD.replace("params = [2, 4]", "params = [50, 800]")).unwrap();
        let e = parse(&GOOD.replace("params = [2, 4]", "params = [2, 900]"))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("s.toml:") && e.contains("-g 900 -f 20 starts 36000 tasks"),
            "{e}"
        );
        let e = Overrides {
            params: Some(vec![1000]),
            ..Overrides::default()
        }
        .apply(&s)
        .unwrap_err()
        .to_string();
        assert!(e.contains("-g 1000"), "{e}");
    }

    #[test]
    fn overrides_shrink_a_suite_and_are_recorded() {
        let mut s = parse(GOOD).unwrap();
        let o = Overrides {
            scale: Some(0.05),
            boots: Some(1),
            cpus: Some(vec![1, 2]),
            params: Some(vec![3]),
            ..Default::default()
        };
        s = o.apply(&s).unwrap();
        assert_eq!(s.boots, 1);
        assert_eq!(s.cpus, vec![1, 2]);
        match &s.workloads[0].kind {
            WorkloadKind::Hackbench(h) => {
                assert_eq!(h.loops, 1); // 10 × 0.05 rounds to 0: at least one loop
                assert_eq!(s.workloads[0].params, vec![3]);
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(
            o.describe(),
            ["scale=0.05", "boots=1", "cpus=[1, 2]", "params=[3]"]
        );
        let e = Overrides {
            cpus: Some(vec![16]),
            ..Default::default()
        }
        .apply(&s)
        .unwrap_err();
        assert!(e.to_string().contains("--cpus"), "{e}");
    }
}
