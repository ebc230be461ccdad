#!/usr/bin/env python3
"""Where a guest boot's wall time goes before the workload starts.

Boots KERNEL with INITRD under QEMU the way markbench does (TCG, icount
shift 4, the same kernel arguments and serial ports), stamps every console
line with the host's wall time since QEMU started, and prints the phases:
QEMU, firmware and the kernel's decompression (to the first console line),
the kernel's start (to "Unpacking initramfs"), the initramfs unpacking, the
rest to /init, and /init to QEMU's exit. Without a job in the initrd the
guest agent says hello, reports that it has no job and powers off at once.

    scripts/boot-phases.py KERNEL INITRD [CPUS] [EXTRA KERNEL ARGUMENTS]

e.g. with the cache's markers-off kernel and base image:

    scripts/boot-phases.py ~/.cache/markbench/kernels/markers-off-*/bzImage \\
        ~/.cache/markbench/initramfs/base-*.cpio 2

BIOS=/usr/share/qemu/qboot.rom boots with another firmware; REPEAT=N boots
N times and prints each.
"""
import os
import subprocess
import sys
import tempfile
import time

MARKS = [
    ("kernel start", "Unpacking initramfs"),
    ("initramfs unpacked", "Freeing initrd memory"),
    ("/init started", "Run /init as init process"),
]


def boot(kernel, initrd, cpus, extra):
    results = tempfile.NamedTemporaryFile(suffix=".txt", delete=False).name
    args = [
        "qemu-system-x86_64", "-nodefaults", "-no-user-config", "-display", "none",
        "-no-reboot", "-accel", "tcg", "-cpu", "max", "-smp", cpus, "-m", "512",
        "-kernel", kernel, "-initrd", initrd,
        "-append", f"console=ttyS0 panic=-1 oops=panic rdinit=/init {extra}".strip(),
        "-serial", "stdio", "-serial", f"file:{results}", "-monitor", "none",
        "-icount", "shift=4,sleep=off", "-rtc", "base=2020-01-01T00:00:00,clock=vm",
        "-seed", "1",
    ]
    if os.environ.get("BIOS"):
        args[1:1] = ["-bios", os.environ["BIOS"]]
    start = time.monotonic()
    qemu = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    seen = {}
    for raw in qemu.stdout:
        now = time.monotonic() - start
        line = raw.decode(errors="replace")
        seen.setdefault("first console line", now)
        for name, text in MARKS:
            if text in line:
                seen.setdefault(name, now)
        if now > 120:
            qemu.kill()
            break
    qemu.wait()
    seen["QEMU exited"] = time.monotonic() - start
    hello = "hello" in open(results, errors="replace").read()
    os.unlink(results)
    return seen, hello


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    kernel, initrd = sys.argv[1], sys.argv[2]
    cpus = sys.argv[3] if len(sys.argv) > 3 else "1"
    extra = " ".join(sys.argv[4:])
    for _ in range(int(os.environ.get("REPEAT", "1"))):
        seen, hello = boot(kernel, initrd, cpus, extra)
        phases = " | ".join(f"{name} {t:.2f} s" for name, t in seen.items())
        print(f"{phases} | agent said hello: {'yes' if hello else 'no'}")


if __name__ == "__main__":
    main()
