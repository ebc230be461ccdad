//! Tables: a workload's metric at one CPU count, one point per parameter.

use super::point::Point;
use crate::record::Sample;
use std::collections::BTreeMap;

/// What identifies one table: a workload's metric at one CPU count.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct TableKey {
    pub workload: String,
    pub metric: String,
    pub cpus: u32,
}

impl TableKey {
    /// The table a sample belongs in.
    pub fn of(s: &Sample) -> TableKey {
        TableKey {
            workload: s.workload.clone(),
            metric: s.metric.clone(),
            cpus: s.cpus,
        }
    }
}

/// What the sweep parameter of a workload is called in table headers.
pub fn param_label(workload: &str) -> &'static str {
    crate::guest::workloads::param_label(workload)
}

/// Unit, direction, and per variant the values of each boot, while grouping.
type PointAccumulator = (String, bool, Vec<BTreeMap<u32, Vec<f64>>>);

/// Groups samples into tables of points. `variants` names the variants in
/// the order of [`Point::sides`], baseline first; samples of other variants
/// and warm-ups are ignored.
pub fn tables(samples: &[Sample], variants: &[String]) -> BTreeMap<TableKey, Vec<Point>> {
    // (table, param) → variant → boot → values, in arrival order.
    let mut grouped: BTreeMap<(TableKey, u64), PointAccumulator> = BTreeMap::new();
    for s in samples.iter().filter(|s| !s.warmup) {
        let Some(side) = variants.iter().position(|v| *v == s.variant) else {
            continue;
        };
        let entry = grouped
            .entry((TableKey::of(s), s.param))
            .or_insert_with(|| {
                (
                    s.unit.clone(),
                    s.higher_is_better,
                    vec![BTreeMap::new(); variants.len()],
                )
            });
        entry.2[side].entry(s.boot).or_default().push(s.value);
    }
    let mut out: BTreeMap<TableKey, Vec<Point>> = BTreeMap::new();
    for ((key, param), (unit, higher_is_better, sides)) in grouped {
        out.entry(key).or_default().push(Point {
            param,
            unit,
            higher_is_better,
            sides: sides
                .into_iter()
                .map(|boots| boots.into_values().collect())
                .collect(),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(variant: &str, boot: u32, warmup: bool, value: f64) -> Sample {
        Sample {
            suite: "t".into(),
            workload: "hackbench".into(),
            metric: "time".into(),
            unit: "s".into(),
            higher_is_better: false,
            param: 4,
            cpus: 2,
            variant: variant.into(),
            boot,
            iteration: 1,
            warmup,
            value,
            started_at: String::new(),
        }
    }

    #[test]
    fn tables_group_by_boot_and_drop_warmups() {
        let samples = vec![
            sample("off", 0, true, 100.0),
            sample("off", 0, false, 1.0),
            sample("off", 1, false, 3.0),
            sample("on", 0, false, 2.0),
            sample("other", 0, false, 50.0),
        ];
        let t = tables(&samples, &["off".into(), "on".into()]);
        let points = &t[&TableKey::of(&samples[0])];
        assert_eq!(points.len(), 1);
        assert_eq!(
            points[0].sides,
            vec![vec![vec![1.0], vec![3.0]], vec![vec![2.0]]]
        );
        assert_eq!(points[0].mean(0), 2.0);
        assert!((points[0].sd(0) - 2f64.sqrt()).abs() < 1e-12);
        assert!(points[0].sd(1).is_nan());
    }

    #[test]
    fn every_named_variant_gets_a_side_in_its_order() {
        let samples = vec![
            sample("generic", 0, false, 3.0),
            sample("off", 0, false, 1.0),
            sample("on", 0, false, 2.0),
        ];
        let names = ["off", "on", "generic"].map(String::from);
        let t = tables(&samples, &names);
        let p = &t[&TableKey::of(&samples[0])][0];
        assert_eq!(p.sides.len(), 3);
        assert_eq!([p.mean(0), p.mean(1), p.mean(2)], [1.0, 2.0, 3.0]);
        // A variant with no samples at the point has no boots there.
        let t = tables(&samples[1..], &names);
        assert!(t[&TableKey::of(&samples[0])][0].sides[2].is_empty());
    }
}
