//! The marker instructions: seven-byte NOPs with a magic displacement
//! that start and end a region, start and end a part, or ask which vCPU
//! runs them.

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
}
