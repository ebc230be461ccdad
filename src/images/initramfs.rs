//! The guest initramfs: the static agent as `/init`, static busybox, and the
//! benchmark programs with the shared libraries they link, as a cached newc
//! cpio archive. A boot's job rides in a second small archive appended to it
//! (the kernel unpacks concatenated archives), so nothing is rebuilt per boot.

use super::{cache_dir, key_of};
use crate::protocol::{Directive, JOB_HEADER};
use anyhow::{bail, Context, Result};
use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Host programs copied into every image, with their libraries.
pub const GUEST_PROGRAMS: &[&str] = &["/usr/bin/hackbench", "/usr/bin/ping"];
const BUSYBOX: &str = "/bin/busybox";

/// The guest agent, built static when markbench was built (build.rs): an
/// installed markbench needs neither its source tree nor rustc to pack it.
const AGENT: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/markbench-guest"));
/// Why build.rs could not build the agent (empty when it could).
const AGENT_BUILD_ERROR: &str = include_str!(concat!(env!("OUT_DIR"), "/markbench-guest.error"));

/// The embedded guest agent, or why this markbench has none.
fn agent() -> Result<&'static [u8]> {
    if AGENT.is_empty() {
        bail!(
            "this markbench was built without its guest agent, so it cannot pack the guest \
             initramfs; rebuild it where this works:\n{AGENT_BUILD_ERROR}"
        );
    }
    Ok(AGENT)
}

/// Writes the guest agent to `out` as an executable.
pub fn write_agent(out: &Path) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(out, agent()?).with_context(|| format!("writing {}", out.display()))?;
    std::fs::set_permissions(out, std::fs::Permissions::from_mode(0o755))?;
    if !crate::prereq::is_static_elf(out) {
        bail!("{}: the guest agent is not a static binary", out.display());
    }
    Ok(())
}

/// Libraries a dynamic executable needs, as `ldd` reports them (absolute paths).
pub fn shared_libraries(program: &Path) -> Result<Vec<PathBuf>> {
    let out = Command::new("ldd")
        .arg(program)
        .output()
        .with_context(|| format!("running ldd {}", program.display()))?;
    Ok(parse_ldd(&String::from_utf8_lossy(&out.stdout)))
}

/// Absolute library paths from `ldd` output (`name => /path (addr)` or `/path (addr)`).
pub fn parse_ldd(text: &str) -> Vec<PathBuf> {
    text.lines()
        .filter_map(|l| {
            let l = l.trim();
            let path = match l.split_once("=>") {
                Some((_, rhs)) => rhs.split_whitespace().next()?,
                None => l.split_whitespace().next()?,
            };
            path.starts_with('/').then(|| PathBuf::from(path))
        })
        .collect()
}

fn copy_into(root: &Path, host_path: &Path) -> Result<()> {
    let dest = root.join(host_path.strip_prefix("/").unwrap_or(host_path));
    std::fs::create_dir_all(dest.parent().unwrap_or(root))?;
    // Follow symlinks: the image gets the real bytes under the linked name.
    std::fs::copy(host_path, &dest)
        .with_context(|| format!("copying {} into the initramfs", host_path.display()))?;
    Ok(())
}

/// Packs a directory into a newc cpio archive owned by root.
pub(crate) fn pack_cpio(root: &Path, out: &Path) -> Result<()> {
    let list = Command::new("find")
        .arg(".")
        .current_dir(root)
        .output()
        .context("listing initramfs files")?;
    let mut names: Vec<&str> = std::str::from_utf8(&list.stdout)?.lines().collect();
    names.sort(); // a stable order makes the archive reproducible
    let file = std::fs::File::create(out)?;
    let mut child = Command::new("cpio")
        .args(["--quiet", "-o", "-H", "newc", "-R", "0:0", "--reproducible"])
        .current_dir(root)
        .stdin(Stdio::piped())
        .stdout(file)
        .spawn()
        .context("starting cpio")?;
    {
        let mut stdin = child.stdin.take().context("cpio stdin")?;
        for n in names {
            writeln!(stdin, "{n}")?;
        }
    }
    let status = child.wait()?;
    if !status.success() {
        bail!("cpio failed ({status})");
    }
    Ok(())
}

/// The cached base initramfs.
#[derive(Debug, Clone)]
pub struct BaseImage {
    pub path: PathBuf,
    pub key: String,
}

/// The base image's cache key: the agent's bytes and each host file's
/// (path, size and modification time).
fn base_key(agent: &[u8], stamps: &[(String, String)]) -> String {
    let mut parts: Vec<(&str, &[u8])> = vec![("recipe", b"initramfs v2"), ("agent", agent)];
    parts.extend(stamps.iter().map(|(f, s)| (f.as_str(), s.as_bytes())));
    key_of(&parts)
}

/// Returns the base initramfs, building it when its inputs changed.
pub fn ensure_base() -> Result<BaseImage> {
    let mut programs: Vec<PathBuf> = vec![PathBuf::from(BUSYBOX)];
    programs.extend(GUEST_PROGRAMS.iter().map(PathBuf::from));
    let mut files: BTreeSet<PathBuf> = BTreeSet::new();
    for p in &programs {
        if !p.is_file() {
            bail!("{} is missing; run `markbench setup`", p.display());
        }
        files.insert(p.clone());
        if p.as_path() != Path::new(BUSYBOX) {
            files.extend(shared_libraries(p)?);
        }
    }
    let mut stamps = Vec::new();
    for f in &files {
        let meta = std::fs::metadata(f)?;
        let stamp = format!("{} {:?}", meta.len(), meta.modified().ok());
        stamps.push((f.display().to_string(), stamp));
    }
    let key = base_key(agent()?, &stamps);
    let dir = cache_dir().join("initramfs");
    let path = dir.join(format!("base-{}.cpio", &key[..16]));
    if path.is_file() {
        return Ok(BaseImage { path, key });
    }
    std::fs::create_dir_all(&dir)?;
    let staging = tempfile::Builder::new()
        .prefix("initramfs-")
        .tempdir_in(&dir)?;
    let root = staging.path().join("root");
    for d in [
        "bin", "sbin", "usr/bin", "usr/sbin", "proc", "sys", "dev", "tmp", "run", "etc", "root",
    ] {
        std::fs::create_dir_all(root.join(d))?;
    }
    crate::message::note("building the guest agent and initramfs …");
    write_agent(&root.join("init"))?;
    for f in &files {
        copy_into(&root, f)?;
    }
    // Shell and the applets the agent and workloads call by name.
    for applet in ["sh", "mount", "ip", "poweroff", "stty", "sync", "cat", "ls"] {
        std::os::unix::fs::symlink("busybox", root.join("bin").join(applet))?;
    }
    std::fs::write(root.join("etc/passwd"), "root:x:0:0:root:/root:/bin/sh\n")?;
    std::fs::write(root.join("etc/group"), "root:x:0:\n")?;
    let partial = path.with_extension(format!("partial-{}", std::process::id()));
    pack_cpio(&root, &partial)?;
    std::fs::rename(&partial, &path)?;
    Ok(BaseImage { path, key })
}

/// The job file text for a list of directives.
pub fn job_text(directives: &[Directive]) -> Result<String> {
    let mut text = format!("{JOB_HEADER}\n");
    for d in directives {
        let line = d
            .to_line()
            .map_err(|e| anyhow::anyhow!("cannot encode job: {e}"))?;
        text.push_str(&line);
        text.push('\n');
    }
    Ok(text)
}

/// The guest's clock start under icount (its RTC base, 2020-01-01T00:00:00
/// UTC), in seconds since the epoch. Files packed for the guest carry fixed
/// times at or before it, so no file is "in the future" for a guest that
/// starts there, and no host time reaches the guest through an archive.
pub const GUEST_CLOCK_START_S: u64 = 1_577_836_800;

/// The modification time of everything in a job archive (any fixed time
/// would do).
const JOB_MTIME_S: u64 = GUEST_CLOCK_START_S;

/// Writes `base + job` to `out`: the initrd of one boot.
pub fn write_boot_initrd(base: &BaseImage, directives: &[Directive], out: &Path) -> Result<()> {
    write_boot_initrd_with_archives(base, &[], directives, out)
}

/// Writes `base + archives… + job` to `out`. Later archives win where paths
/// overlap, as the kernel unpacks them in order.
pub fn write_boot_initrd_with_archives(
    base: &BaseImage,
    archives: &[PathBuf],
    directives: &[Directive],
    out: &Path,
) -> Result<()> {
    let staging = tempfile::tempdir()?;
    let root = staging.path().join("root");
    std::fs::create_dir_all(&root)?;
    std::fs::write(root.join("job"), job_text(directives)?)?;
    // cpio records modification times: left alone, the same job packed a
    // second later gives a different initrd, and under icount that alone
    // was seen to change a boot's timings. A fixed time makes a unit's
    // initrd, and so its boot, the same in every run.
    for path in [root.join("job"), root.clone()] {
        std::fs::File::open(&path)
            .and_then(|f| {
                f.set_modified(std::time::UNIX_EPOCH + std::time::Duration::from_secs(JOB_MTIME_S))
            })
            .with_context(|| format!("setting the time of {}", path.display()))?;
    }
    let job_cpio = staging.path().join("job.cpio");
    pack_cpio(&root, &job_cpio)?;
    // Streamed, not read whole: the compile tree is hundreds of megabytes.
    let mut initrd = std::io::BufWriter::new(
        std::fs::File::create(out).with_context(|| format!("writing {}", out.display()))?,
    );
    for part in std::iter::once(&base.path)
        .chain(archives)
        .chain(std::iter::once(&job_cpio))
    {
        let mut file =
            std::fs::File::open(part).with_context(|| format!("reading {}", part.display()))?;
        std::io::copy(&mut file, &mut initrd)
            .with_context(|| format!("appending {} to {}", part.display(), out.display()))?;
    }
    initrd
        .flush()
        .with_context(|| format!("writing {}", out.display()))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_embedded_agent_is_a_static_executable() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("init");
        write_agent(&path).unwrap();
        assert!(crate::prereq::is_static_elf(&path));
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(
            std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o755
        );
    }

    #[test]
    fn the_base_image_key_follows_the_agent_and_the_host_files() {
        let stamps = vec![("/bin/busybox".to_string(), "100 t".to_string())];
        let key = base_key(b"agent", &stamps);
        assert_eq!(key, base_key(b"agent", &stamps));
        assert_ne!(key, base_key(b"agent 2", &stamps));
        let touched = vec![("/bin/busybox".to_string(), "100 t2".to_string())];
        assert_ne!(key, base_key(b"agent", &touched));
    }

    #[test]
    fn ldd_output_gives_library_paths() {
        let text = "\tlinux-vdso.so.1 (0x00007ffd)\n\
                    \tlibpthread.so.0 => /lib/x86_64-linux-gnu/libpthread.so.0 (0x00007f91)\n\
                    \tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f91)\n\
                    \t/lib64/ld-linux-x86-64.so.2 (0x00007f91)\n";
        assert_eq!(
            parse_ldd(text),
            vec![
                PathBuf::from("/lib/x86_64-linux-gnu/libpthread.so.0"),
                PathBuf::from("/lib/x86_64-linux-gnu/libc.so.6"),
                PathBuf::from("/lib64/ld-linux-x86-64.so.2"),
            ]
        );
    }

    #[test]
    fn the_same_job_gives_the_same_initrd_bytes_whenever_it_is_written() {
        let dir = tempfile::tempdir().unwrap();
        let base_path = dir.path().join("base.cpio");
        std::fs::write(&base_path, b"base").unwrap();
        let base = BaseImage {
            path: base_path,
            key: "k".into(),
        };
        let job = vec![Directive::Run {
            id: "hackbench/2".into(),
            iterations: 2,
            argv: vec!["/usr/bin/hackbench".into()],
        }];
        let (first, second) = (dir.path().join("1"), dir.path().join("2"));
        write_boot_initrd(&base, &job, &first).unwrap();
        // cpio stores whole seconds: make sure the clock has moved on.
        std::thread::sleep(std::time::Duration::from_millis(1100));
        write_boot_initrd(&base, &job, &second).unwrap();
        assert_eq!(
            std::fs::read(first).unwrap(),
            std::fs::read(second).unwrap()
        );
    }

    #[test]
    fn job_text_round_trips_through_the_agent_parser() {
        let directives = vec![
            Directive::Setup {
                argv: vec!["/bin/ip".into(), "link".into()],
            },
            Directive::Run {
                id: "hackbench/4".into(),
                iterations: 3,
                argv: vec!["/usr/bin/hackbench".into(), "-g".into(), "4".into()],
            },
        ];
        let text = job_text(&directives).unwrap();
        let parsed: Vec<Directive> = text
            .lines()
            .filter_map(|l| Directive::parse_line(l).unwrap())
            .collect();
        assert_eq!(parsed, directives);
    }
}
