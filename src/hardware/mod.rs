//! Hardware models (`models/hardware/*.yaml`) and workload communication profiles
//! (`models/workloads/*.yaml`). The shipped files are embedded in the binary; `--models DIR`
//! adds or overrides them. Schemas are documented in `models/README.md`.

use crate::error::{Error, InputIssue, Result};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

/// How GPUs inside a node talk to each other.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Interconnect {
    /// All GPUs all-to-all through NVSwitch.
    Nvswitch,
    /// NVLink bridges between pairs (or small groups) of GPUs.
    NvlinkBridge,
    /// PCIe only.
    Pcie,
}

/// A node hardware model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HardwareModel {
    /// Model name, equal to the file stem.
    pub name: String,
    /// One-line description.
    #[serde(default)]
    pub description: String,
    /// GPU type string used in instances.
    pub gpu_type: String,
    /// GPUs in the node.
    pub gpus: u32,
    /// Memory per GPU, MiB.
    #[serde(default)]
    pub gpu_memory_mib: Option<u64>,
    /// Node CPU capacity (thousandths of a CPU).
    #[serde(default)]
    pub cpu_milli: Option<u64>,
    /// Node memory, MiB.
    #[serde(default)]
    pub memory_mib: Option<u64>,
    /// Intra-node fabric.
    pub interconnect: Interconnect,
    /// Sets of GPU indices joined by NVLink/NVSwitch.
    #[serde(default)]
    pub nvlink_islands: Vec<Vec<u32>>,
    /// GPU indices per NUMA node / PCIe root.
    #[serde(default)]
    pub numa_nodes: Vec<Vec<u32>>,
    /// NVLink bandwidth per GPU, GB/s.
    #[serde(default)]
    pub nvlink_gbps: f64,
    /// PCIe bandwidth per GPU, GB/s.
    #[serde(default)]
    pub pcie_gbps: f64,
    /// GPUs in the rack-scale NVLink domain a tray of this model joins.
    #[serde(default)]
    pub rack_scale_domain_gpus: Option<u32>,
    /// Public sources of the numbers.
    #[serde(default)]
    pub sources: Vec<String>,
}

/// Slowdown factors (>= 1) of a gang placed less tightly than one NVLink island.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Slowdown {
    /// GPUs of one node split over NVLink islands.
    pub split_island: f64,
    /// Spans several nodes of one rack.
    pub span_nodes: f64,
    /// Spans several racks of one pod.
    pub span_racks: f64,
    /// Spans several pods.
    pub span_pods: f64,
}

impl Default for Slowdown {
    /// The profile used when no `default` workload file is loaded.
    fn default() -> Self {
        Slowdown {
            split_island: 1.1,
            span_nodes: 1.1,
            span_racks: 1.2,
            span_pods: 1.4,
        }
    }
}

/// A workload communication profile.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkloadProfile {
    /// Profile name, equal to the file stem.
    pub name: String,
    /// One-line description.
    #[serde(default)]
    pub description: String,
    /// Slowdown factors.
    pub slowdown: Slowdown,
    /// Public sources of the numbers.
    #[serde(default)]
    pub sources: Vec<String>,
}

/// All hardware models and workload profiles known to a run.
#[derive(Debug, Clone, Default)]
pub struct ModelLibrary {
    /// Hardware models by name.
    pub hardware: BTreeMap<String, HardwareModel>,
    /// Workload profiles by name.
    pub workloads: BTreeMap<String, WorkloadProfile>,
}

const BUILTIN: &[(&str, &str, &str)] = include!(concat!(env!("OUT_DIR"), "/builtin_models.rs"));

impl ModelLibrary {
    /// The models shipped in `models/`, embedded at build time.
    pub fn builtin() -> Self {
        let mut lib = ModelLibrary::default();
        for (kind, name, text) in BUILTIN {
            lib.add(kind, name, text, &format!("models/{kind}/{name}.yaml"))
                .expect("shipped model files are checked by the test suite");
        }
        lib
    }

    /// The shipped models plus every `hardware/*.yaml` and `workloads/*.yaml` under `dir`
    /// (files there override shipped ones of the same name).
    pub fn with_dir(dir: &Path) -> Result<Self> {
        let mut lib = Self::builtin();
        if !dir.is_dir() {
            return Err(Error::input(
                &dir.display().to_string(),
                "",
                "is not a directory; pass a folder holding hardware/ and workloads/ subfolders",
            ));
        }
        for kind in ["hardware", "workloads"] {
            let sub = dir.join(kind);
            let Ok(entries) = std::fs::read_dir(&sub) else {
                continue;
            };
            let mut files: Vec<_> = entries.filter_map(|e| e.ok()).map(|e| e.path()).collect();
            files.sort();
            for f in files
                .into_iter()
                .filter(|f| f.extension().is_some_and(|e| e == "yaml"))
            {
                let text = std::fs::read_to_string(&f).map_err(|e| Error::Io {
                    path: f.display().to_string(),
                    source: e,
                })?;
                let stem = f
                    .file_stem()
                    .and_then(|s| s.to_str())
                    .unwrap_or_default()
                    .to_string();
                lib.add(kind, &stem, &text, &f.display().to_string())?;
            }
        }
        Ok(lib)
    }

    fn add(&mut self, kind: &str, stem: &str, text: &str, source_name: &str) -> Result<()> {
        let bad = |path: &str, message: String, line: Option<usize>| Error::Input {
            source_name: source_name.to_string(),
            issues: vec![InputIssue {
                path: path.to_string(),
                message,
                line,
            }],
        };
        let parse_err =
            |e: serde_yaml::Error| bad("", e.to_string(), e.location().map(|l| l.line()));
        if kind == "hardware" {
            let m: HardwareModel = serde_yaml::from_str(text).map_err(parse_err)?;
            if m.name != stem {
                return Err(bad(
                    "name",
                    format!(
                        "is {:?} but the file is {stem}.yaml; make them equal",
                        m.name
                    ),
                    None,
                ));
            }
            if m.gpus == 0 || m.gpus > 1024 {
                return Err(bad(
                    "gpus",
                    format!("is {}; expected 1..=1024", m.gpus),
                    None,
                ));
            }
            for (i, set) in m
                .nvlink_islands
                .iter()
                .chain(m.numa_nodes.iter())
                .enumerate()
            {
                if let Some(g) = set.iter().find(|&&g| g >= m.gpus) {
                    return Err(bad(
                        &format!("nvlink_islands/numa_nodes[{i}]"),
                        format!("GPU index {g} is out of range 0..{}", m.gpus),
                        None,
                    ));
                }
            }
            self.hardware.insert(m.name.clone(), m);
        } else {
            let w: WorkloadProfile = serde_yaml::from_str(text).map_err(parse_err)?;
            if w.name != stem {
                return Err(bad(
                    "name",
                    format!(
                        "is {:?} but the file is {stem}.yaml; make them equal",
                        w.name
                    ),
                    None,
                ));
            }
            let s = w.slowdown;
            for (field, v) in [
                ("split_island", s.split_island),
                ("span_nodes", s.span_nodes),
                ("span_racks", s.span_racks),
                ("span_pods", s.span_pods),
            ] {
                if !(1.0..=100.0).contains(&v) {
                    return Err(bad(
                        &format!("slowdown.{field}"),
                        format!("is {v}; expected a factor in 1.0..=100.0"),
                        None,
                    ));
                }
            }
            self.workloads.insert(w.name.clone(), w);
        }
        Ok(())
    }

    /// The profile for a job: its named workload, else `default`, else built-in defaults.
    pub fn slowdown(&self, workload: Option<&str>) -> Slowdown {
        workload
            .or(Some("default"))
            .and_then(|w| self.workloads.get(w))
            .map(|w| w.slowdown)
            .unwrap_or_default()
    }
}
