//! A cache entry damaged after it was made is found before it is used: a
//! kernel whose `bzImage` was cut short (a full disk, a killed copy) is
//! named and passed over to be built again, never handed to a boot; `cache
//! --verify` names it and exits 7; `cache prune` removes what a killed
//! build left. The cache is a temporary directory (`MARKBENCH_CACHE`)
//! holding an entry shaped like a real one; no kernel is built.

use assert_cmd::Command;
use markbench::guest::images::kernel::{self, KernelImage};
use markbench::guest::images::seal::{seal_of, SealVerdict};
use std::path::Path;

/// A file shaped like a bzImage: one setup sector and the boot header
/// (`HdrS`) declaring `paragraphs` of 16 bytes after it.
fn bzimage(paragraphs: u32) -> Vec<u8> {
    let mut bytes = vec![0x5au8; 1024 + paragraphs as usize * 16];
    bytes[0x1f1] = 1;
    bytes[0x1f4..0x1f8].copy_from_slice(&paragraphs.to_le_bytes());
    bytes[0x202..0x206].copy_from_slice(b"HdrS");
    bytes
}

/// A kernel entry as `ensure_kernel` leaves it; `sealed`: with the seals
/// it records now, else as kernels cached before them.
fn kernel_entry(cache: &Path, name: &str, sealed: bool) -> std::path::PathBuf {
    let dir = cache
        .join("kernels")
        .join(format!("{name}-0123456789abcdef"));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("bzImage"), bzimage(4096)).unwrap();
    std::fs::write(dir.join("config"), "CONFIG_TRACEPOINTS=y\n").unwrap();
    let mut image = KernelImage {
        name: name.into(),
        key: "0123456789abcdef".into(),
        dir: dir.clone(),
        bzimage: dir.join("bzImage"),
        config: dir.join("config"),
        build_log: dir.join("build.log"),
        source_identity: "linux-source-6.1".into(),
        compiler: "gcc".into(),
        fragment_sha256: Default::default(),
        config_sha256: "0".into(),
        build_seconds: 1.0,
        base: String::new(),
        source_files_rebuilt: None,
        ..Default::default()
    };
    if sealed {
        for f in kernel::SEALED_FILES {
            image
                .seals
                .insert(f.to_string(), seal_of(&dir.join(f)).unwrap());
        }
    }
    std::fs::write(dir.join("kernel.toml"), toml::to_string(&image).unwrap()).unwrap();
    dir
}

fn cut_short(path: &Path, by: usize) {
    let bytes = std::fs::read(path).unwrap();
    std::fs::write(path, &bytes[..bytes.len() - by]).unwrap();
}

fn markbench(cache: &Path, args: &[&str]) -> (i32, String, String) {
    let out = Command::cargo_bin("markbench")
        .unwrap()
        .env("MARKBENCH_CACHE", cache)
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().expect("markbench died of a signal"),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_truncated_sealed_bzimage_is_damaged_and_never_served() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = kernel_entry(tmp.path(), "markers-on", true);
    let (image, verdict) = kernel::check_entry(&dir);
    assert_eq!(verdict, SealVerdict::Sound);
    assert_eq!(image.unwrap().bzimage, dir.join("bzImage"));

    cut_short(&dir.join("bzImage"), 4096);
    let (image, verdict) = kernel::check_entry(&dir);
    assert!(image.is_none(), "a damaged kernel was served");
    let SealVerdict::Damaged(why) = verdict else {
        panic!("a truncated bzImage went unnoticed");
    };
    assert!(
        why.contains("bzImage") && why.contains("when it was made"),
        "{why}"
    );

    // Same length, other bytes: the hash tells.
    let mut bytes = bzimage(4096);
    bytes[5000] ^= 1;
    std::fs::write(dir.join("bzImage"), bytes).unwrap();
    let (image, verdict) = kernel::check_entry(&dir);
    assert!(image.is_none());
    assert!(matches!(verdict, SealVerdict::Damaged(why) if why.contains("SHA-256")));
}

#[test]
fn a_kernel_cached_before_seals_is_checked_by_its_header_then_sealed() {
    let tmp = tempfile::tempdir().unwrap();
    let whole = kernel_entry(tmp.path(), "markers-off", false);
    let (_, verdict) = kernel::check_entry(&whole);
    assert_eq!(verdict, SealVerdict::SealedNow);
    let record = std::fs::read_to_string(whole.join("kernel.toml")).unwrap();
    assert!(record.contains("[seals.bzImage]"), "{record}");
    assert_eq!(kernel::check_entry(&whole).1, SealVerdict::Sound);

    let cut = kernel_entry(tmp.path(), "markers-on", false);
    cut_short(&cut.join("bzImage"), 100);
    let (image, verdict) = kernel::check_entry(&cut);
    assert!(image.is_none());
    assert!(
        matches!(&verdict, SealVerdict::Damaged(why) if why.contains("its header declares")),
        "{verdict:?}"
    );
    // Not sealed as it is: it stays damaged.
    let record = std::fs::read_to_string(cut.join("kernel.toml")).unwrap();
    assert!(!record.contains("[seals"), "{record}");
}

#[test]
fn cache_verify_names_the_damaged_entries_and_prune_removes_debris() {
    let tmp = tempfile::tempdir().unwrap();
    let cache = tmp.path();
    let good = kernel_entry(cache, "markers-off", true);
    let bad = kernel_entry(cache, "markers-on", true);
    cut_short(&bad.join("bzImage"), 512);
    // What a killed build left: a pid no process has (above pid_max).
    let debris = cache
        .join("kernels")
        .join("markers-on-fedcba9876543210.partial-99999999");
    std::fs::create_dir_all(&debris).unwrap();
    std::fs::write(debris.join("build.log"), "make: *** killed\n").unwrap();
    let images = cache.join("initramfs");
    std::fs::create_dir_all(&images).unwrap();
    std::fs::write(images.join("base-0123456789abcdef.cpio"), b"070701...").unwrap();

    let (code, stdout, stderr) = markbench(cache, &["cache", "--verify"]);
    // A damaged entry is the check's verdict, not a failure of markbench.
    assert_eq!(
        code,
        markbench::base::exit::ExitStatus::CacheDamaged.code(),
        "{stdout}{stderr}"
    );
    assert_eq!(code, 7, "{stdout}{stderr}");
    let line = |name: &str| {
        stdout
            .lines()
            .find(|l| l.contains(name))
            .unwrap_or_else(|| panic!("{name} not listed:\n{stdout}"))
            .to_string()
    };
    assert!(
        line("markers-off-0123456789abcdef").starts_with("ok "),
        "{stdout}"
    );
    let damaged = line("markers-on-0123456789abcdef");
    assert!(
        damaged.starts_with("DAMAGED ") && damaged.contains("bzImage"),
        "{stdout}"
    );
    assert!(
        line(".partial-99999999").starts_with("DAMAGED "),
        "{stdout}"
    );
    assert!(
        line("base-0123456789abcdef.cpio").starts_with("sealed "),
        "{stdout}"
    );
    assert!(stderr.contains("2 of 4 entries damaged"), "{stderr}");

    let (code, stdout, stderr) = markbench(cache, &["cache", "prune"]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(stdout.contains("what a killed build left"), "{stdout}");
    assert!(!debris.exists());
    assert!(
        good.exists() && bad.exists(),
        "prune without limits removes only debris"
    );

    std::fs::write(bad.join("bzImage"), bzimage(4096)).unwrap();
    let (code, stdout, _) = markbench(cache, &["cache", "--verify"]);
    assert_eq!(code, 0, "{stdout}");
}
