//! A run's stages, in the order data flows through them: the suite
//! file, the plan, the shards, booting guests, the run's images, machine
//! and slots, its events, the boot loop and profiled boots, the analysis and the report.

pub mod analysis;
pub mod events;
pub mod machine;
pub mod plan;
pub mod profile;
pub mod report;
pub mod run;
pub mod run_images;
pub mod shard;
pub mod slots;
pub mod suite;
pub mod vm;
