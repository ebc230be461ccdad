//! What a run puts in a guest: kernel and initramfs images (built,
//! cached, sealed) and the workloads that run there and parse their output.

pub mod images;
pub mod workloads;
