//! `gangplan discover`: a GPU node describes its own GPUs through NVML.
//!
//! The pipeline is split so that everything but the NVML calls runs (and is tested) without a
//! GPU:
//!
//! * [`inventory`]: the [`GpuInventory`] trait (the questions asked) and the recorded answers
//!   ([`Snapshot`], the format of `tests/fixtures/nvml/*.json`);
//! * [`live`]: the trait answered by NVML (`nvml-wrapper`, `libnvidia-ml.so.1` loaded at run time);
//! * [`layout`]: NVLink islands, NUMA groups and the interconnect kind;
//! * [`health`]: which GPUs are `down` and why;
//! * [`tables`]: product names -> GPU types, NVLink and PCIe rates;
//! * [`describe`]: the node entry ([`crate::instance::raw::RawNode`]) and hardware model
//!   ([`crate::hardware::HardwareModel`]);
//! * [`merge`]: the node put into an instance.
//!
//! ```
//! use gangplan::adapters::nvml::{describe, DescribeOptions, Snapshot};
//! use gangplan::adapters::nvml::inventory::{DeviceRecord, PairRecord, TopologyLevel};
//!
//! let gpu = |index, bus: &str, numa| DeviceRecord {
//!     index,
//!     name: Some("Tesla T4".into()),
//!     memory_total_bytes: Some(16 * 1024 * 1024 * 1024),
//!     pci_bus_id: Some(bus.into()),
//!     numa_node: Some(numa),
//!     ..Default::default()
//! };
//! let snap = Snapshot {
//!     devices: vec![gpu(0, "00000000:3b:00.0", 0), gpu(1, "00000000:d8:00.0", 1)],
//!     pairs: vec![PairRecord { a: 0, b: 1, common_ancestor: Some(TopologyLevel::System), nvlink_p2p: Some(false) }],
//!     ..Default::default()
//! };
//! let opts = DescribeOptions { node_name: "t4-box".into(), ..Default::default() };
//! let d = describe(&snap, &opts, None).unwrap();
//! assert_eq!(d.model.gpu_type, "T4");
//! assert!(d.model.nvlink_islands.is_empty());
//! assert_eq!(d.model.numa_nodes, vec![vec![0], vec![1]]);
//! assert_eq!(d.node.model.as_deref(), Some("t4-2x-pcie"));
//! ```

pub mod describe;
pub mod health;
pub mod inventory;
pub mod layout;
pub mod live;
pub mod merge;
pub mod tables;

pub use describe::{describe, DescribeOptions, DiscoverError, Discovery, GpuReport};
pub use inventory::{GpuInventory, InventoryError, Snapshot};
pub use live::NvmlInventory;
pub use merge::{merge_node, MergeAction};
