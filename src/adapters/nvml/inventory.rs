//! The questions `discover` asks a GPU node, as a trait ([`GpuInventory`]), and the answers as
//! plain serde records. The live implementation talks to NVML ([`super::live`]); tests and
//! offline runs feed a recorded [`Snapshot`] (the JSON files under `tests/fixtures/nvml/`).

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::time::Duration;
use thiserror::Error;

/// Format tag of `discover`'s output; [`Snapshot::from_text`] takes the inventory out of one.
pub const FORMAT: &str = "gangplan-discover/1";

/// Why the inventory could not be read.
#[derive(Debug, Error)]
pub enum InventoryError {
    /// NVML itself is missing or cannot talk to the driver: nothing can be discovered.
    #[error("NVML is not available: {reason}. gangplan looked for {library}. {hint}")]
    Unavailable {
        /// The shared library looked for (`libnvidia-ml.so.1`).
        library: String,
        /// What failed (the loader's or NVML's words).
        reason: String,
        /// What to install or start.
        hint: String,
    },
    /// One NVML query failed in a way that is not "this GPU does not support it".
    #[error("NVML query {query} failed: {detail}")]
    Query {
        /// The query (`device_count`, `device(3)`, ...).
        query: String,
        /// NVML's words.
        detail: String,
    },
}

/// PCIe distance between two GPUs, NVML's `nvmlGpuTopologyLevel_t` (nearest first).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TopologyLevel {
    /// Same board (dual-GPU card).
    Internal,
    /// Behind one PCIe switch.
    Single,
    /// Behind several PCIe switches, no host bridge crossed.
    Multiple,
    /// Same host bridge (root complex).
    HostBridge,
    /// Same NUMA node, different host bridges.
    Node,
    /// Across NUMA nodes (the CPU interconnect).
    System,
}

/// One active NVLink of a GPU.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NvLinkRecord {
    /// Link number on the GPU (0..18).
    pub link: u32,
    /// PCI bus id of the device at the far end: another GPU (bridge / direct link) or an
    /// NVSwitch. `None` when NVML could not say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote_pci_bus_id: Option<String>,
}

/// Health counters of one GPU. Every field is `None` where the GPU or driver does not report it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HealthRecord {
    /// Pages retired after repeated single-bit ECC errors (pre-Ampere page retirement).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retired_pages_sbe: Option<u64>,
    /// Pages retired after a double-bit ECC error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retired_pages_dbe: Option<u64>,
    /// A page retirement waits for a GPU reset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retirement_pending: Option<bool>,
    /// Uncorrected ECC errors since the driver loaded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ecc_uncorrected_volatile: Option<u64>,
    /// Uncorrected ECC errors over the GPU's life.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ecc_uncorrected_aggregate: Option<u64>,
    /// A row remapping (Ampere and later) waits for a GPU reset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remap_pending: Option<bool>,
    /// A row remapping failed (no spare rows left).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remap_failed: Option<bool>,
    /// Critical XID errors NVML delivered while `discover` listened (`--xid-wait-ms`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub xid_errors: Vec<u64>,
}

/// What NVML says about one GPU.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeviceRecord {
    /// NVML index (the index `nvidia-smi` and `CUDA_VISIBLE_DEVICES` use by default).
    pub index: u32,
    /// Product name (`NVIDIA H100 80GB HBM3`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// GPU UUID.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uuid: Option<String>,
    /// Total framebuffer memory in bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_total_bytes: Option<u64>,
    /// PCI bus id (`00000000:18:00.0`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pci_bus_id: Option<String>,
    /// Architecture (`Volta`, `Turing`, `Ampere`, `Ada`, `Hopper`, `Blackwell`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub architecture: Option<String>,
    /// NUMA node the GPU's PCIe root sits on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub numa_node: Option<u32>,
    /// Highest PCIe generation this GPU and slot support together.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pcie_max_gen: Option<u32>,
    /// Widest PCIe link (lanes) this GPU and slot support together.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pcie_max_width: Option<u32>,
    /// Current MIG mode (`None` on GPUs without MIG).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mig_enabled: Option<bool>,
    /// Active NVLinks.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub nvlinks: Vec<NvLinkRecord>,
    /// Health counters.
    #[serde(default)]
    pub health: HealthRecord,
    /// Set when NVML could not query the GPU at all (lost, fallen off the bus, ...): NVML's words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// What NVML says about a pair of GPUs (`a < b`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PairRecord {
    /// Lower GPU index.
    pub a: u32,
    /// Higher GPU index.
    pub b: u32,
    /// Their nearest common PCIe ancestor.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub common_ancestor: Option<TopologyLevel>,
    /// Whether peer-to-peer over NVLink works between them (`nvmlDeviceGetP2PStatus`, NVLINK).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nvlink_p2p: Option<bool>,
}

/// The questions `discover` asks. Implementations answer from NVML or from a recording.
pub trait GpuInventory {
    /// Driver version, where known.
    fn driver_version(&self) -> Result<Option<String>, InventoryError>;
    /// Number of GPUs NVML sees.
    fn device_count(&self) -> Result<u32, InventoryError>;
    /// Facts about GPU `index` (`0..device_count`). A GPU NVML cannot reach comes back with
    /// [`DeviceRecord::error`] set rather than as an `Err`.
    fn device(&self, index: u32) -> Result<DeviceRecord, InventoryError>;
    /// Facts about the pair `a < b`.
    fn pair(&self, a: u32, b: u32) -> Result<PairRecord, InventoryError>;
    /// Critical XID errors per GPU index seen while listening for `listen` (zero: none asked).
    fn critical_xids(&self, listen: Duration) -> Result<BTreeMap<u32, Vec<u64>>, InventoryError>;
}

/// Everything one inventory answered: the recorded form of a node (fixture files, and the
/// `inventory` field of `discover`'s output).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Snapshot {
    /// What machine the record is of, for humans.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// Driver version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub driver_version: Option<String>,
    /// One record per GPU, in index order.
    pub devices: Vec<DeviceRecord>,
    /// One record per pair `a < b`.
    #[serde(default)]
    pub pairs: Vec<PairRecord>,
}

impl Snapshot {
    /// Ask `inv` everything `discover` needs.
    pub fn record(inv: &dyn GpuInventory, xid_listen: Duration) -> Result<Self, InventoryError> {
        let driver_version = inv.driver_version()?;
        let n = inv.device_count()?;
        let mut devices = Vec::with_capacity(n as usize);
        for i in 0..n {
            devices.push(inv.device(i)?);
        }
        if !xid_listen.is_zero() {
            for (i, xids) in inv.critical_xids(xid_listen)? {
                if let Some(d) = devices.get_mut(i as usize) {
                    d.health.xid_errors.extend(xids);
                }
            }
        }
        let mut pairs = Vec::new();
        for a in 0..n {
            for b in a + 1..n {
                pairs.push(inv.pair(a, b)?);
            }
        }
        Ok(Snapshot {
            description: String::new(),
            driver_version,
            devices,
            pairs,
        })
    }

    /// Parse a recorded snapshot (JSON or YAML): a snapshot document, or a whole `discover`
    /// output (`format: gangplan-discover/1`), whose `inventory` is taken.
    pub fn from_text(text: &str, source_name: &str) -> crate::Result<Self> {
        let parse = crate::instance::load::parse_document::<Self>;
        if let Ok(v) = serde_yaml::from_str::<serde_yaml::Value>(text) {
            let is_output = v.get("format").and_then(|f| f.as_str()) == Some(FORMAT);
            if let (true, Some(inv)) = (is_output, v.get("inventory")) {
                let inner = serde_json::to_string(inv)
                    .map_err(|e| crate::Error::input(source_name, "inventory", e.to_string()))?;
                return parse(&inner, &format!("{source_name} (inventory)"));
            }
        }
        parse(text, source_name)
    }
}

impl GpuInventory for Snapshot {
    fn driver_version(&self) -> Result<Option<String>, InventoryError> {
        Ok(self.driver_version.clone())
    }

    fn device_count(&self) -> Result<u32, InventoryError> {
        u32::try_from(self.devices.len()).map_err(|_| InventoryError::Query {
            query: "device_count".into(),
            detail: "more devices than u32 can count".into(),
        })
    }

    fn device(&self, index: u32) -> Result<DeviceRecord, InventoryError> {
        self.devices
            .iter()
            .find(|d| d.index == index)
            .cloned()
            .ok_or_else(|| InventoryError::Query {
                query: format!("device({index})"),
                detail: "the recording has no such device".into(),
            })
    }

    fn pair(&self, a: u32, b: u32) -> Result<PairRecord, InventoryError> {
        let (lo, hi) = (a.min(b), a.max(b));
        Ok(self
            .pairs
            .iter()
            .find(|p| p.a == lo && p.b == hi)
            .cloned()
            .unwrap_or(PairRecord {
                a: lo,
                b: hi,
                common_ancestor: None,
                nvlink_p2p: None,
            }))
    }

    fn critical_xids(&self, _listen: Duration) -> Result<BTreeMap<u32, Vec<u64>>, InventoryError> {
        // Recorded XIDs already sit in each device's health record.
        Ok(BTreeMap::new())
    }
}
