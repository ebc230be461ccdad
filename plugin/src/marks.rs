//! The marker instructions: seven-byte NOPs with a magic displacement on
//! x86-64, and on arm64 a move into the zero register with the same code
//! in its immediate, that start and end a region, start and end a part, or
//! ask which vCPU runs them.

use std::ffi::c_void;

/// The marker instructions: `0f 1f 80` + a 32-bit displacement.
pub(crate) const MARK_START: [u8; 7] = [0x0f, 0x1f, 0x80, 0x01, 0x53, 0x42, 0x4d];
const MARK_END: [u8; 7] = [0x0f, 0x1f, 0x80, 0x02, 0x53, 0x42, 0x4d];
const MARK_PART_END: [u8; 7] = [0x0f, 0x1f, 0x80, 0x03, 0x53, 0x42, 0x4d];
/// "Which vCPU runs this": with `check=vcpu` the plugin records the vCPU
/// index QEMU gives its callback at every execution, and the index its
/// memory callback is given at the store the guest puts right after it.
const MARK_WHICH_VCPU: [u8; 7] = [0x0f, 0x1f, 0x80, 0x04, 0x53, 0x42, 0x4d];
/// A part's start carries its number in the displacement's low byte.
const PART_START_BYTE: u8 = 0x10;
/// Parts are numbered 0 to 15.
pub const PARTS: u8 = 16;

/// The arm64 marker with code `code` (NN in x86-64's `0x4d4253NN`):
/// `movk xzr, #0x4dNN, lsl #48`. Its only effect is a write to the zero
/// register, which the architecture discards, and no compiler emits it;
/// a defined data-processing instruction cannot be given another meaning
/// later, as the `hint #imm` space is (BTI, PAC and GCS were all added
/// there). The immediate carries the code as x86-64's displacement does.
const fn arm64_marker(code: u8) -> [u8; 4] {
    // MOVK, 64-bit: sf=1 opc=11 100101, hw=3 (lsl #48), imm16, Rd=31 (xzr).
    let word: u32 = 0xf2e0_0000 | ((0x4d00 | code as u32) << 5) | 31;
    word.to_le_bytes()
}

/// The code an arm64 marker's immediate carries, if `bytes` are one.
fn arm64_code(bytes: [u8; 4]) -> Option<u8> {
    let word = u32::from_le_bytes(bytes);
    // Everything but the immediate's low byte must be the marker's.
    let code_bits = 0xff << 5;
    (word & !code_bits == u32::from_le_bytes(arm64_marker(0)))
        .then_some(((word & code_bits) >> 5) as u8)
}

/// The mark of a marker's code, shared by both architectures.
fn of_code(code: u8) -> Option<Mark> {
    match code {
        0x01 => Some(Mark::Start),
        0x02 => Some(Mark::End),
        0x03 => Some(Mark::PartEnd),
        0x04 => Some(Mark::WhichVcpu),
        n if (PART_START_BYTE..PART_START_BYTE + PARTS).contains(&n) => {
            Some(Mark::PartStart(n - PART_START_BYTE))
        }
        _ => None,
    }
}

/// The sizes a marker instruction has: x86-64's, arm64's.
pub(crate) const MARKER_SIZES: [usize; 2] = [7, 4];

/// What a marker instruction does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mark {
    Start,
    End,
    PartStart(u8),
    PartEnd,
    WhichVcpu,
}

impl Mark {
    /// The marker an instruction's bytes are, if they are one.
    pub fn of(bytes: &[u8]) -> Option<Mark> {
        if let Ok(word) = <[u8; 4]>::try_from(bytes) {
            return arm64_code(word).and_then(of_code);
        }
        let bytes: [u8; 7] = bytes.try_into().ok()?;
        match bytes {
            MARK_START => Some(Mark::Start),
            MARK_END => Some(Mark::End),
            MARK_PART_END => Some(Mark::PartEnd),
            MARK_WHICH_VCPU => Some(Mark::WhichVcpu),
            [0x0f, 0x1f, 0x80, n, 0x53, 0x42, 0x4d]
                if (PART_START_BYTE..PART_START_BYTE + PARTS).contains(&n) =>
            {
                Some(Mark::PartStart(n - PART_START_BYTE))
            }
            _ => None,
        }
    }

    /// The callback's user datum (never null, so no marker reads as none).
    pub(crate) fn datum(self) -> *mut c_void {
        let n: usize = match self {
            Mark::Start => 1,
            Mark::End => 2,
            Mark::PartEnd => 3,
            Mark::WhichVcpu => 4,
            Mark::PartStart(k) => 0x100 + k as usize,
        };
        n as *mut c_void
    }

    pub(crate) fn from_datum(datum: *mut c_void) -> Option<Mark> {
        match datum as usize {
            1 => Some(Mark::Start),
            2 => Some(Mark::End),
            3 => Some(Mark::PartEnd),
            4 => Some(Mark::WhichVcpu),
            n if (0x100..0x100 + PARTS as usize).contains(&n) => {
                Some(Mark::PartStart((n - 0x100) as u8))
            }
            _ => None,
        }
    }
}

/// What the which-vCPU check saw, in order: the marker's instruction
/// callback or the memory callback of the store after it, each with the
/// vCPU index QEMU gave it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WhichVcpuSeen {
    Mark(u32),
    Store(u32),
}

/// The file `check=vcpu` writes: a header, then one callback a line, its
/// kind and its vCPU index (`mark 1`, `store 1`).
pub fn which_vcpu_text(seen: &[WhichVcpuSeen]) -> String {
    let mut text = String::from("# markbench-which-vcpu 2\n");
    for s in seen {
        let line = match s {
            WhichVcpuSeen::Mark(vcpu) => format!("mark {vcpu}\n"),
            WhichVcpuSeen::Store(vcpu) => format!("store {vcpu}\n"),
        };
        text.push_str(&line);
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_which_vcpu_file_names_each_callback_and_its_vcpu_in_order() {
        let seen = [
            WhichVcpuSeen::Mark(0),
            WhichVcpuSeen::Store(0),
            WhichVcpuSeen::Mark(1),
            WhichVcpuSeen::Store(1),
        ];
        assert_eq!(
            which_vcpu_text(&seen),
            "# markbench-which-vcpu 2\nmark 0\nstore 0\nmark 1\nstore 1\n"
        );
        assert_eq!(which_vcpu_text(&[]), "# markbench-which-vcpu 2\n");
    }

    #[test]
    fn marker_bytes_read_as_their_marks_and_other_nops_as_none() {
        assert_eq!(Mark::of(&MARK_START), Some(Mark::Start));
        assert_eq!(Mark::of(&MARK_END), Some(Mark::End));
        assert_eq!(Mark::of(&MARK_PART_END), Some(Mark::PartEnd));
        let part = |n: u8| [0x0f, 0x1f, 0x80, n, 0x53, 0x42, 0x4d];
        assert_eq!(Mark::of(&part(0x10)), Some(Mark::PartStart(0)));
        assert_eq!(Mark::of(&part(0x1f)), Some(Mark::PartStart(15)));
        assert_eq!(Mark::of(&part(0x20)), None);
        assert_eq!(Mark::of(&part(0x04)), Some(Mark::WhichVcpu));
        assert_eq!(Mark::of(&part(0x05)), None);
        // nopl 0x4d425301(%rbx): another register is another instruction.
        assert_eq!(Mark::of(&[0x0f, 0x1f, 0x83, 0x01, 0x53, 0x42, 0x4d]), None);
        assert_eq!(Mark::of(&MARK_START[..6]), None);
        for mark in [
            Mark::Start,
            Mark::End,
            Mark::PartEnd,
            Mark::WhichVcpu,
            Mark::PartStart(0),
            Mark::PartStart(15),
        ] {
            assert!(!mark.datum().is_null());
            assert_eq!(Mark::from_datum(mark.datum()), Some(mark));
        }
        assert_eq!(Mark::from_datum(std::ptr::null_mut()), None);
    }

    /// The bytes of the agent's arm64 markers, as `aarch64-linux-gnu-as`
    /// assembles `movk xzr, #0x4d01, lsl #48` and the others.
    #[test]
    fn arm64_marker_bytes_read_as_their_marks() {
        assert_eq!(arm64_marker(0x01), [0x3f, 0xa0, 0xe9, 0xf2]);
        assert_eq!(Mark::of(&[0x3f, 0xa0, 0xe9, 0xf2]), Some(Mark::Start));
        assert_eq!(Mark::of(&[0x5f, 0xa0, 0xe9, 0xf2]), Some(Mark::End));
        assert_eq!(Mark::of(&[0x7f, 0xa0, 0xe9, 0xf2]), Some(Mark::PartEnd));
        assert_eq!(Mark::of(&[0x9f, 0xa0, 0xe9, 0xf2]), Some(Mark::WhichVcpu));
        assert_eq!(Mark::of(&arm64_marker(0x10)), Some(Mark::PartStart(0)));
        assert_eq!(Mark::of(&arm64_marker(0x1f)), Some(Mark::PartStart(15)));
        assert_eq!(Mark::of(&arm64_marker(0x20)), None);
        assert_eq!(Mark::of(&arm64_marker(0x05)), None);
        // nop, and movk x0 (not xzr) with the same immediate: not markers.
        assert_eq!(Mark::of(&[0x1f, 0x20, 0x03, 0xd5]), None);
        assert_eq!(Mark::of(&[0x20, 0xa0, 0xe9, 0xf2]), None);
        // Another immediate's high byte, another shift: not markers.
        assert_eq!(Mark::of(&[0x3f, 0xa0, 0xeb, 0xf2]), None);
        assert_eq!(Mark::of(&[0x3f, 0xa0, 0xc9, 0xf2]), None);
        // The 32-bit form (movk wzr) is not one either.
        assert_eq!(Mark::of(&[0x3f, 0xa0, 0xa9, 0x72]), None);
        assert!(MARKER_SIZES.contains(&MARK_START.len()));
        assert!(MARKER_SIZES.contains(&arm64_marker(1).len()));
    }
}
