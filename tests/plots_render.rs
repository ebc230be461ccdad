//! `plots::render` writes valid, readable, deterministic SVG and PNG files,
//! for a realistic sweep and for the degenerate inputs a real run can produce.
//!
//! To look at the plots, set MARKBENCH_PLOTS_PREVIEW_DIR to a
//! directory and run `cargo test --test plots_render`.

use std::path::{Path, PathBuf};

use markbench::base::plots::{render, PlotInput, RelPoint, SidePoint};

const WIDTH: u32 = 1000;
const HEIGHT: u32 = 620;

/// Aoki 2008's 2-CPU hackbench table (ia64): groups, without [s], with [s].
const AOKI_2008_TWO_CPUS: [(f64, f64, f64); 16] = [
    (50.0, 4.811, 4.872),
    (100.0, 9.854, 10.309),
    (150.0, 15.602, 15.040),
    (200.0, 20.489, 20.380),
    (250.0, 25.798, 25.652),
    (300.0, 31.260, 30.797),
    (350.0, 36.121, 35.770),
    (400.0, 42.288, 42.102),
    (450.0, 47.778, 47.253),
    (500.0, 51.953, 52.278),
    (550.0, 58.401, 57.700),
    (600.0, 63.334, 63.222),
    (650.0, 68.816, 68.511),
    (700.0, 74.667, 74.088),
    (750.0, 78.612, 79.582),
    (800.0, 85.431, 85.263),
];

/// Five boots spread around `mean` by a fixed, made-up pattern (no randomness:
/// the test must be deterministic too).
fn side_point(param: f64, mean: f64, spread: f64) -> SidePoint {
    let boot_means = [-1.0, 0.4, -0.3, 1.2, -0.3]
        .iter()
        .map(|k| mean * (1.0 + k * spread))
        .collect();
    SidePoint {
        param,
        mean,
        ci: Some((mean * (1.0 - spread), mean * (1.0 + spread))),
        boot_means,
    }
}

fn realistic_input() -> PlotInput {
    let a = AOKI_2008_TWO_CPUS
        .iter()
        .map(|&(groups, without, _)| side_point(groups, without, 0.006))
        .collect();
    let b = AOKI_2008_TWO_CPUS
        .iter()
        .map(|&(groups, _, with)| side_point(groups, with, 0.005))
        .collect();
    let rel = AOKI_2008_TWO_CPUS
        .iter()
        .map(|&(groups, without, with)| {
            let rel = with / without - 1.0;
            RelPoint {
                param: groups,
                rel,
                ci: Some((rel - 0.011, rel + 0.011)),
            }
        })
        .collect();
    PlotInput {
        title: "hackbench, 2 CPUs".to_string(),
        param_label: "groups".to_string(),
        metric_label: "time".to_string(),
        unit: "s".to_string(),
        higher_is_better: false,
        label_a: "markers-off".to_string(),
        label_b: "markers-on".to_string(),
        a,
        b,
        rel,
        margin: 0.02,
    }
}

fn expected_paths(dir: &Path, stem: &str) -> Vec<PathBuf> {
    ["metric.svg", "metric.png", "diff.svg", "diff.png"]
        .iter()
        .map(|suffix| dir.join(format!("{stem}-{suffix}")))
        .collect()
}

/// Renders into a fresh directory and checks every file; returns the directory.
fn render_and_check(input: &PlotInput, stem: &str) -> tempfile::TempDir {
    if let Some(preview_dir) = std::env::var_os("MARKBENCH_PLOTS_PREVIEW_DIR") {
        render(input, Path::new(&preview_dir), stem).unwrap();
    }
    let dir = tempfile::tempdir().unwrap();
    let written = render(input, dir.path(), stem).unwrap();
    assert_eq!(written, expected_paths(dir.path(), stem));
    for path in &written {
        let bytes = std::fs::read(path).unwrap();
        match path.extension().and_then(|e| e.to_str()) {
            Some("svg") => check_svg(path, &bytes, input),
            Some("png") => check_png(path, &bytes),
            other => panic!("unexpected extension {other:?}"),
        }
    }
    dir
}

fn check_svg(path: &Path, bytes: &[u8], input: &PlotInput) {
    let text =
        std::str::from_utf8(bytes).unwrap_or_else(|e| panic!("{}: not UTF-8: {e}", path.display()));
    let text = text.trim();
    assert!(
        text.starts_with("<svg"),
        "{}: does not start with <svg",
        path.display()
    );
    assert!(
        text.ends_with("</svg>"),
        "{}: does not end with </svg>",
        path.display()
    );
    assert_eq!(
        text.matches("<text").count(),
        text.matches("</text>").count(),
        "{}",
        path.display()
    );
    assert!(
        text.matches("<text").count() > 10,
        "{}: too little text",
        path.display()
    );
    for label in [&input.label_a, &input.label_b, &input.param_label] {
        assert!(
            text.contains(label.as_str()),
            "{}: missing {label:?}",
            path.display()
        );
    }
    let direction = if input.higher_is_better {
        "higher is better"
    } else {
        "lower is better"
    };
    assert!(
        text.contains(direction),
        "{}: missing {direction:?}",
        path.display()
    );
}

/// Signature, IHDR dimensions and format, every chunk's CRC, and IEND last.
fn check_png(path: &Path, bytes: &[u8]) {
    let name = path.display();
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n", "{name}: PNG signature");
    let mut offset = 8;
    let mut chunk_types = Vec::new();
    let mut image_data_len = 0;
    while offset < bytes.len() {
        let len = u32::from_be_bytes(bytes[offset..offset + 4].try_into().unwrap()) as usize;
        let chunk_type = &bytes[offset + 4..offset + 8];
        let data = &bytes[offset + 8..offset + 8 + len];
        let stored_crc = u32::from_be_bytes(
            bytes[offset + 8 + len..offset + 12 + len]
                .try_into()
                .unwrap(),
        );
        assert_eq!(
            crc32(&bytes[offset + 4..offset + 8 + len]),
            stored_crc,
            "{name}: CRC of a chunk"
        );
        if chunk_type == b"IHDR" {
            assert_eq!(
                u32::from_be_bytes(data[0..4].try_into().unwrap()),
                WIDTH,
                "{name}: width"
            );
            assert_eq!(
                u32::from_be_bytes(data[4..8].try_into().unwrap()),
                HEIGHT,
                "{name}: height"
            );
            assert_eq!(data[8], 8, "{name}: bit depth");
            assert_eq!(data[9], 2, "{name}: colour type RGB");
        }
        if chunk_type == b"IDAT" {
            image_data_len += len;
        }
        chunk_types.push(String::from_utf8_lossy(chunk_type).to_string());
        offset += 12 + len;
    }
    assert_eq!(offset, bytes.len(), "{name}: trailing bytes");
    assert_eq!(
        chunk_types.first().map(String::as_str),
        Some("IHDR"),
        "{name}"
    );
    assert_eq!(
        chunk_types.last().map(String::as_str),
        Some("IEND"),
        "{name}"
    );
    // A blank 1000x620 canvas deflates to a few kB; axes, text and data take far more.
    assert!(
        image_data_len > 10_000,
        "{name}: only {image_data_len} bytes of image data"
    );
}

/// CRC-32 as PNG defines it (ISO 3309, reflected polynomial 0xEDB88320).
fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = 0xFFFF_FFFFu32;
    for &byte in bytes {
        crc ^= u32::from(byte);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0xEDB8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

#[test]
fn realistic_sweep_writes_four_valid_files() {
    let input = realistic_input();
    let dir = render_and_check(&input, "hackbench-2cpus");
    let metric_svg =
        std::fs::read_to_string(dir.path().join("hackbench-2cpus-metric.svg")).unwrap();
    assert!(metric_svg.contains("time [s]"));
    assert!(metric_svg.contains("per-boot means"));
    let diff_svg = std::fs::read_to_string(dir.path().join("hackbench-2cpus-diff.svg")).unwrap();
    assert!(diff_svg.contains("equivalence margin ±2 %"));
    assert!(diff_svg.contains("difference [%]"));
}

#[test]
fn rendering_twice_gives_identical_bytes() {
    let input = realistic_input();
    let first = render_and_check(&input, "same");
    let second = render_and_check(&input, "same");
    for (one, other) in expected_paths(first.path(), "same")
        .iter()
        .zip(expected_paths(second.path(), "same"))
    {
        assert!(
            std::fs::read(one).unwrap() == std::fs::read(&other).unwrap(),
            "{} differs",
            one.display()
        );
    }
}

#[test]
fn single_parameter_value_without_intervals_or_boots() {
    let mut input = realistic_input();
    input.a = vec![SidePoint {
        param: 50.0,
        mean: 4.811,
        ci: None,
        boot_means: vec![],
    }];
    input.b = vec![SidePoint {
        param: 50.0,
        mean: 4.872,
        ci: None,
        boot_means: vec![],
    }];
    input.rel = vec![RelPoint {
        param: 50.0,
        rel: 0.0127,
        ci: None,
    }];
    let dir = render_and_check(&input, "single");
    // One value is not a number line: no ticks at values never run around
    // it, the value said once in the axis description.
    for file in ["single-metric.svg", "single-diff.svg"] {
        let svg = std::fs::read_to_string(dir.path().join(file)).unwrap();
        let texts = svg_texts(&svg);
        let described = format!("{} 50", input.param_label);
        assert!(texts.contains(&described), "{file}: {texts:?}");
        let near_the_value: Vec<&String> = texts
            .iter()
            .filter(|t| t.parse::<f64>().is_ok_and(|v| (40.0..=60.0).contains(&v)))
            .collect();
        assert!(near_the_value.is_empty(), "{file}: {near_the_value:?}");
    }
}

/// The contents of an SVG's `<text>` elements, unescaped enough to compare.
fn svg_texts(svg: &str) -> Vec<String> {
    svg.split("<text")
        .skip(1)
        .filter_map(|t| t.split_once('>'))
        .filter_map(|(_, rest)| rest.split_once("</text>"))
        .map(|(content, _)| content.trim().to_string())
        .collect()
}

#[test]
fn all_equal_values_still_get_a_y_range() {
    let mut input = realistic_input();
    for side in [&mut input.a, &mut input.b] {
        for point in side.iter_mut() {
            point.mean = 10.0;
            point.ci = Some((10.0, 10.0));
            point.boot_means = vec![10.0; 3];
        }
    }
    for point in &mut input.rel {
        point.rel = 0.0;
        point.ci = Some((0.0, 0.0));
    }
    input.margin = 0.0;
    render_and_check(&input, "flat");
}

#[test]
fn non_finite_values_are_skipped() {
    let mut input = realistic_input();
    input.a[3].mean = f64::NAN;
    input.a[4].ci = Some((f64::NEG_INFINITY, 3.0));
    input.a[5].boot_means.push(f64::NAN);
    input.b[0].param = f64::NAN;
    input.b[7].mean = f64::INFINITY;
    input.rel[2].rel = f64::NAN;
    input.rel[9].ci = Some((f64::NAN, 0.01));
    input.margin = f64::NAN;
    render_and_check(&input, "nan");
}

#[test]
fn higher_is_better_throughput_with_unsorted_sparse_params() {
    let mut input = realistic_input();
    input.title = "ping flood, 4 CPUs".to_string();
    input.param_label = "payload [bytes]".to_string();
    input.metric_label = "throughput".to_string();
    input.unit = "packets/s".to_string();
    input.higher_is_better = true;
    let params = [1400.0, 56.0, 512.0];
    input.a = params
        .iter()
        .map(|&p| side_point(p, 180_000.0 - p * 20.0, 0.01))
        .collect();
    input.b = params
        .iter()
        .map(|&p| side_point(p, 178_500.0 - p * 20.0, 0.01))
        .collect();
    input.rel = params
        .iter()
        .map(|&p| RelPoint {
            param: p,
            rel: -0.008,
            ci: Some((-0.02, 0.004)),
        })
        .collect();
    let dir = render_and_check(&input, "ping");
    let metric_svg = std::fs::read_to_string(dir.path().join("ping-metric.svg")).unwrap();
    assert!(metric_svg.contains("throughput [packets/s]"));
}

#[test]
fn no_points_at_all_still_renders_labelled_axes() {
    let mut input = realistic_input();
    input.a.clear();
    input.b.clear();
    input.rel.clear();
    render_and_check(&input, "empty");
}

#[test]
fn markup_in_labels_is_escaped_in_svg() {
    let mut input = realistic_input();
    input.label_b = "markers-on <jump_label & probe>".to_string();
    let dir = tempfile::tempdir().unwrap();
    render(&input, dir.path(), "escape").unwrap();
    let svg = std::fs::read_to_string(dir.path().join("escape-metric.svg")).unwrap();
    assert!(svg.contains("markers-on &lt;jump_label &amp; probe&gt;"));
    assert!(!svg.contains("<jump_label"));
}
