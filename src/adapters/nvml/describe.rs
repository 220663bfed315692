//! From a [`Snapshot`] to what `discover` prints: the node entry of an instance
//! ([`RawNode`]), a hardware model ([`HardwareModel`], `models/hardware` format) and a per-GPU
//! report.

use super::health::down_reasons;
use super::inventory::{InventoryError, Snapshot, FORMAT};
use super::layout::{layout, Layout};
use super::tables::{gpu_type_of, nvlink_gbps_per_link, pcie_gbps_per_lane};
use crate::hardware::{HardwareModel, Interconnect, ModelLibrary};
use crate::instance::raw::RawNode;
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use thiserror::Error;

/// Why a node could not be described.
#[derive(Debug, Error)]
pub enum DiscoverError {
    /// NVML is missing, or a query failed.
    #[error(transparent)]
    Inventory(#[from] InventoryError),
    /// NVML answered but sees no GPU.
    #[error("NVML sees no GPUs on this node; check `nvidia-smi -L` (GPUs hidden by the container runtime or CUDA_VISIBLE_DEVICES are not seen either)")]
    NoGpus,
    /// The GPUs are of different types.
    #[error("the node has GPUs of different types ({0}); gangplan models one GPU type per node: describe it by hand as separate nodes")]
    MixedTypes(String),
    /// No GPU told its product name.
    #[error("no GPU told NVML its product name, so the GPU type is unknown")]
    NoName,
    /// A recording whose GPUs are not numbered `0..n` in order.
    #[error("GPU indices are {0:?}; expected 0..{1} in order")]
    BadIndices(Vec<u32>, usize),
}

/// What the caller knows that NVML does not.
#[derive(Debug, Clone, Default)]
pub struct DescribeOptions {
    /// Node name (default in the CLI: the host name).
    pub node_name: String,
    /// Hardware model name; derived from the GPU type, count and fabric when absent.
    pub model_name: Option<String>,
    /// Rack of the node.
    pub rack: Option<String>,
    /// Pod of the node.
    pub pod: Option<String>,
    /// Rack-scale NVLink domain of the node.
    pub nvlink_domain: Option<String>,
    /// Node CPU capacity (milli-CPUs), read from the host.
    pub cpu_milli: Option<u64>,
    /// Node memory (MiB), read from the host.
    pub memory_mib: Option<u64>,
}

/// One GPU as `discover` saw it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GpuReport {
    /// NVML index.
    pub index: u32,
    /// Product name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// UUID.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uuid: Option<String>,
    /// Memory, MiB.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_mib: Option<u64>,
    /// PCI bus id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pci_bus_id: Option<String>,
    /// NUMA node.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub numa_node: Option<u32>,
    /// MIG mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mig_enabled: Option<bool>,
    /// Active NVLinks.
    pub nvlinks: u32,
    /// Active NVLinks that end at an NVSwitch.
    pub nvswitch_links: u32,
    /// GPUs reached over NVLink.
    pub nvlink_peers: Vec<u32>,
    /// Why the GPU is `down`; empty when healthy.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub down_reasons: Vec<String>,
}

/// Everything `discover` prints.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Discovery {
    /// [`FORMAT`].
    pub format: String,
    /// The node entry for an instance file.
    pub node: RawNode,
    /// The hardware model read from the node (`models/hardware/<name>.yaml` format).
    #[serde(serialize_with = "without_nulls")]
    pub model: HardwareModel,
    /// A shipped model with the same layout, which `node.model` then names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub matches_builtin: Option<String>,
    /// Per-GPU details.
    pub gpus: Vec<GpuReport>,
    /// Things the user should check.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// What NVML answered (the recording the rest was derived from).
    pub inventory: Snapshot,
}

/// Serialise `m` leaving out keys whose value is null (absent optional fields), as the files in
/// `models/hardware/` are written.
fn without_nulls<S: serde::Serializer>(m: &HardwareModel, ser: S) -> Result<S::Ok, S::Error> {
    // serde_yaml's mapping keeps the field order of the struct.
    let mut v = serde_yaml::to_value(m).map_err(serde::ser::Error::custom)?;
    if let serde_yaml::Value::Mapping(map) = &mut v {
        map.retain(|_, x| !x.is_null());
    }
    serde::Serialize::serialize(&v, ser)
}

/// The hardware model as a `models/hardware/<name>.yaml` file (optional fields that are absent
/// are left out).
pub fn model_yaml(m: &HardwareModel) -> Result<String, serde_yaml::Error> {
    struct W<'a>(&'a HardwareModel);
    impl Serialize for W<'_> {
        fn serialize<S: serde::Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
            without_nulls(self.0, ser)
        }
    }
    serde_yaml::to_string(&W(m))
}

/// A model name from the layout: `h100-8x-nvswitch`, `a100-8x-nvlink-bridge`, `t4-2x-pcie`.
pub fn derived_model_name(gpu_type: &str, gpus: u32, ic: Interconnect) -> String {
    let t: String = gpu_type
        .to_ascii_lowercase()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    let ic = match ic {
        Interconnect::Nvswitch => "nvswitch",
        Interconnect::NvlinkBridge => "nvlink-bridge",
        Interconnect::Pcie => "pcie",
    };
    format!("{t}-{gpus}x-{ic}")
}

fn normalized(sets: &[Vec<u32>]) -> Vec<Vec<u32>> {
    let mut v: Vec<Vec<u32>> = sets
        .iter()
        .map(|s| {
            let mut s = s.clone();
            s.sort();
            s
        })
        .collect();
    v.sort();
    v
}

/// The first shipped/loaded model (by name) with the same GPU type, count, fabric, NVLink
/// islands and NUMA groups as `m`.
pub fn matching_model(m: &HardwareModel, lib: &ModelLibrary) -> Option<String> {
    lib.hardware
        .values()
        .find(|h| same_layout(h, m))
        .map(|h| h.name.clone())
}

/// Same GPU type, count, fabric, NVLink islands and NUMA groups.
fn same_layout(h: &HardwareModel, m: &HardwareModel) -> bool {
    h.gpu_type == m.gpu_type
        && h.gpus == m.gpus
        && h.interconnect == m.interconnect
        && normalized(&h.nvlink_islands) == normalized(&m.nvlink_islands)
        && normalized(&h.numa_nodes) == normalized(&m.numa_nodes)
}

/// Describe the node recorded in `s`. With `lib`, a loaded model of the same layout is named
/// in the node entry (unless `opts.model_name` is given).
pub fn describe(
    s: &Snapshot,
    opts: &DescribeOptions,
    lib: Option<&ModelLibrary>,
) -> Result<Discovery, DiscoverError> {
    let n = s.devices.len();
    if n == 0 {
        return Err(DiscoverError::NoGpus);
    }
    let indices: Vec<u32> = s.devices.iter().map(|d| d.index).collect();
    if indices.iter().enumerate().any(|(k, &i)| i as usize != k) {
        return Err(DiscoverError::BadIndices(indices, n));
    }
    let gpus = n as u32;
    let types: BTreeSet<String> = s
        .devices
        .iter()
        .filter_map(|d| d.name.as_deref().map(gpu_type_of))
        .collect();
    let gpu_type = match types.len() {
        0 => return Err(DiscoverError::NoName),
        1 => types.into_iter().next().unwrap_or_default(),
        _ => {
            return Err(DiscoverError::MixedTypes(
                types.into_iter().collect::<Vec<_>>().join(", "),
            ))
        }
    };
    let product = s
        .devices
        .iter()
        .find_map(|d| d.name.clone())
        .unwrap_or_default();
    let Layout {
        islands,
        numa,
        interconnect,
        peers,
        switch_links,
        active_links,
        mut warnings,
    } = layout(s);

    let gpu_memory_mib = s
        .devices
        .iter()
        .filter_map(|d| d.memory_total_bytes)
        .min()
        .map(|b| b / (1024 * 1024));

    let mut sources = vec![format!(
        "NVML{} on {}: {gpus}x {product}; memory per GPU (smallest reported), NVLink state and far ends, NVLink P2P status, PCIe common ancestors, NUMA nodes",
        s.driver_version
            .as_deref()
            .map(|v| format!(" (driver {v})"))
            .unwrap_or_default(),
        opts.node_name
    )];

    let max_links = active_links.iter().copied().max().unwrap_or(0);
    let nvlink_gbps = if islands.is_empty() || max_links == 0 {
        0.0
    } else {
        let arch = s
            .devices
            .iter()
            .find_map(|d| d.architecture.clone())
            .unwrap_or_default();
        let (per_link, why) = match nvlink_gbps_per_link(&arch) {
            Some((g, w)) => (g, format!("{arch}; {w}")),
            None => {
                warnings.push(format!(
                    "architecture {arch:?} has no NVLink rate in the table; assumed 50 GB/s per link: check nvlink_gbps"
                ));
                (50.0, "assumed: architecture not in the table".to_string())
            }
        };
        sources.push(format!(
            "nvlink_gbps: {max_links} active NVLinks x {per_link} GB/s per link, bidirectional ({why})"
        ));
        f64::from(max_links) * per_link
    };
    let pcie = s
        .devices
        .iter()
        .filter_map(|d| {
            let gen = d.pcie_max_gen?;
            let width = d.pcie_max_width?;
            Some((pcie_gbps_per_lane(gen)? * f64::from(width), gen, width))
        })
        .fold(None::<(f64, u32, u32)>, |best, x| match best {
            Some(b) if b.0 >= x.0 => Some(b),
            _ => Some(x),
        });
    let pcie_gbps = match pcie {
        Some((g, gen, width)) => {
            sources.push(format!(
                "pcie_gbps: PCIe Gen{gen} x{width} (the most GPU and slot support together) = {g} GB/s bidirectional"
            ));
            g
        }
        None => {
            warnings.push("NVML did not report the PCIe link; pcie_gbps is 0".to_string());
            0.0
        }
    };

    let derived = derived_model_name(&gpu_type, gpus, interconnect);
    let model_name = opts.model_name.clone().unwrap_or(derived);
    let ic_words = match interconnect {
        Interconnect::Nvswitch => "all GPUs on NVSwitch",
        Interconnect::NvlinkBridge => "NVLink between some GPUs",
        Interconnect::Pcie => "PCIe only, no NVLink",
    };
    let model = HardwareModel {
        name: model_name.clone(),
        description: format!(
            "Read by `gangplan discover` from NVML: {gpus}x {product}, {ic_words}"
        ),
        gpu_type: gpu_type.clone(),
        gpus,
        gpu_memory_mib,
        cpu_milli: None,
        memory_mib: None,
        interconnect,
        nvlink_islands: islands,
        numa_nodes: numa,
        nvlink_gbps,
        pcie_gbps,
        rack_scale_domain_gpus: None,
        sources,
    };
    let matches_builtin = lib.and_then(|l| matching_model(&model, l));
    if let (Some(name), Some(l)) = (&opts.model_name, lib) {
        if let Some(h) = l.hardware.get(name) {
            if matches_builtin.as_deref() != Some(name.as_str()) && !same_layout(h, &model) {
                warnings.push(format!(
                    "model {name} is loaded with another layout than NVML shows ({} {}x {:?}, islands {:?}, NUMA {:?}); the node entry names {name} as asked",
                    model.gpu_type, model.gpus, model.interconnect, model.nvlink_islands, model.numa_nodes
                ));
            }
        }
    }
    let node_model = match (&opts.model_name, &matches_builtin) {
        (None, Some(b)) => b.clone(),
        _ => model_name,
    };

    let mut down = Vec::new();
    let mut reports = Vec::with_capacity(n);
    for (k, d) in s.devices.iter().enumerate() {
        let reasons = down_reasons(d);
        if !reasons.is_empty() {
            down.push(u64::from(d.index));
        }
        reports.push(GpuReport {
            index: d.index,
            name: d.name.clone(),
            uuid: d.uuid.clone(),
            memory_mib: d.memory_total_bytes.map(|b| b / (1024 * 1024)),
            pci_bus_id: d.pci_bus_id.clone(),
            numa_node: d.numa_node,
            mig_enabled: d.mig_enabled,
            nvlinks: active_links[k],
            nvswitch_links: switch_links[k],
            nvlink_peers: peers[k].clone(),
            down_reasons: reasons,
        });
    }
    if !down.is_empty() {
        warnings.push(format!(
            "GPU(s) {down:?} are marked down; see gpus[].down_reasons"
        ));
    }

    let node = RawNode {
        name: opts.node_name.clone(),
        gpus: Some(u64::from(gpus)),
        model: Some(node_model),
        gpu_type: Some(gpu_type),
        rack: opts.rack.clone(),
        pod: opts.pod.clone(),
        down,
        cpu_milli: opts.cpu_milli,
        memory_mib: opts.memory_mib,
        nvlink_domain: opts.nvlink_domain.clone(),
    };
    Ok(Discovery {
        format: FORMAT.to_string(),
        node,
        model,
        matches_builtin,
        gpus: reports,
        warnings,
        inventory: s.clone(),
    })
}
