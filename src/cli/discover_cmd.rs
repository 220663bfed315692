//! `gangplan discover`: describe this node's GPUs (NVML) as an instance node entry and a
//! hardware model; optionally merge the node into an instance file. See docs/discover.md.

use super::{exit, Failure};
use anyhow::anyhow;
use clap::{Args, ValueEnum};
use gangplan::adapters::nvml::{
    describe, merge_node, DescribeOptions, DiscoverError, Discovery, GpuInventory, InventoryError,
    MergeAction, NvmlInventory, Snapshot,
};
use gangplan::fsutil::write_atomic;
use gangplan::hardware::ModelLibrary;
use gangplan::instance::load::{parse_document, read_document};
use gangplan::instance::raw::RawInstance;
use gangplan::instance::validate::validate;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Output format.
#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum Format {
    /// YAML.
    Yaml,
    /// JSON.
    Json,
}

/// Describe this node's GPUs.
#[derive(Debug, Args)]
pub struct DiscoverArgs {
    /// Output format of the description.
    #[arg(long, value_enum, default_value_t = Format::Yaml)]
    pub format: Format,
    /// Update (or add) this node in an instance file, atomically; the file is created when absent.
    #[arg(long, value_name = "INSTANCE")]
    pub merge: Option<PathBuf>,
    /// Output file for the description, written atomically; `-` or absent: stdout.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Write the hardware model to DIR/hardware/<model>.yaml, loadable with `--models DIR`.
    #[arg(long, value_name = "DIR")]
    pub model_out: Option<PathBuf>,
    /// Node name (default: the host name).
    #[arg(long)]
    pub name: Option<String>,
    /// Hardware model name (default: a shipped model of the same layout, else e.g. `h100-8x-nvswitch`).
    #[arg(long)]
    pub model_name: Option<String>,
    /// Rack of the node.
    #[arg(long)]
    pub rack: Option<String>,
    /// Pod of the node.
    #[arg(long)]
    pub pod: Option<String>,
    /// Rack-scale NVLink domain of the node (GB200 NVL72 trays of one rack share one).
    #[arg(long)]
    pub nvlink_domain: Option<String>,
    /// Folder with hardware/ and workloads/ model files, added to the shipped ones.
    #[arg(long, value_name = "DIR")]
    pub models: Option<PathBuf>,
    /// NVML library to load (default: libnvidia-ml.so.1, then libnvidia-ml.so).
    #[arg(long, value_name = "PATH")]
    pub nvml_lib: Option<PathBuf>,
    /// Listen this long for critical XID events before describing the node (0: do not listen).
    #[arg(long, value_name = "MS", default_value_t = 0)]
    pub xid_wait_ms: u64,
    /// Describe a recorded inventory (a `tests/fixtures/nvml/*.json` file, or an earlier
    /// `discover` output) instead of asking NVML; the host's CPUs and memory are then not read.
    #[arg(long, value_name = "FILE")]
    pub from: Option<PathBuf>,
}

fn bad(m: String) -> Failure {
    Failure::new(exit::BAD_INPUT, anyhow!(m))
}

fn host_name() -> Option<String> {
    ["/proc/sys/kernel/hostname", "/etc/hostname"]
        .iter()
        .find_map(|p| std::fs::read_to_string(p).ok())
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

/// Hardware threads of the host x 1000, from /sys (all online CPUs, not this process's share).
fn host_cpu_milli() -> Option<u64> {
    let online = std::fs::read_to_string("/sys/devices/system/cpu/online").ok()?;
    let mut n = 0u64;
    for part in online.trim().split(',') {
        let (a, b) = match part.split_once('-') {
            Some((a, b)) => (a.parse::<u64>().ok()?, b.parse::<u64>().ok()?),
            None => {
                let a = part.parse::<u64>().ok()?;
                (a, a)
            }
        };
        n += b.checked_sub(a)? + 1;
    }
    (n > 0).then_some(n * 1000)
}

/// MemTotal of the host, MiB.
fn host_memory_mib() -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = info.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024)
}

fn encode<T: serde::Serialize>(v: &T, format: Format) -> anyhow::Result<String> {
    Ok(match format {
        Format::Json => serde_json::to_string_pretty(v)? + "\n",
        Format::Yaml => gangplan::yaml_text::to_yaml(v)?,
    })
}

fn discover_error(e: DiscoverError) -> Failure {
    match e {
        DiscoverError::Inventory(InventoryError::Unavailable { .. }) => {
            Failure::new(exit::NO_NVML, anyhow!(e))
        }
        DiscoverError::Inventory(InventoryError::Query { .. }) => {
            Failure::new(exit::NO_NVML, anyhow!(e))
        }
        DiscoverError::NoGpus => Failure::new(exit::NO_NVML, anyhow!(e)),
        other => Failure::new(exit::BAD_INPUT, anyhow!(other)),
    }
}

/// Run `discover`.
pub fn run(a: DiscoverArgs) -> Result<i32, Failure> {
    if a.xid_wait_ms > 600_000 {
        return Err(bad(format!(
            "--xid-wait-ms is {}; expected at most 600000 (10 minutes)",
            a.xid_wait_ms
        )));
    }
    let lib = match &a.models {
        Some(d) => ModelLibrary::with_dir(d).map_err(Failure::from_lib)?,
        None => ModelLibrary::builtin(),
    };
    let (snapshot, live) = match &a.from {
        Some(f) => {
            let text = read_document(f).map_err(Failure::from_lib)?;
            let s =
                Snapshot::from_text(&text, &f.display().to_string()).map_err(Failure::from_lib)?;
            (s, false)
        }
        None => {
            let inv = NvmlInventory::open(a.nvml_lib.as_deref().map(|p| p.as_os_str()))
                .map_err(|e| discover_error(e.into()))?;
            let s = Snapshot::record(
                &inv as &dyn GpuInventory,
                Duration::from_millis(a.xid_wait_ms),
            )
            .map_err(|e| discover_error(e.into()))?;
            (s, true)
        }
    };
    let node_name = match a.name.clone().or_else(host_name) {
        Some(n) => n,
        None => return Err(bad("the host name is unknown; pass --name".to_string())),
    };
    let opts = DescribeOptions {
        node_name,
        model_name: a.model_name.clone(),
        rack: a.rack.clone(),
        pod: a.pod.clone(),
        nvlink_domain: a.nvlink_domain.clone(),
        cpu_milli: if live { host_cpu_milli() } else { None },
        memory_mib: if live { host_memory_mib() } else { None },
    };
    let d = describe(&snapshot, &opts, Some(&lib)).map_err(discover_error)?;
    for w in &d.warnings {
        super::note(format!("warning: {w}"));
    }

    if let Some(dir) = &a.model_out {
        write_model(dir, &d)?;
    }
    if let Some(path) = &a.merge {
        merge_into(path, &d, &lib, a.model_out.is_some())?;
    }
    if a.merge.is_none() || a.out.is_some() {
        let text = encode(&d, a.format).map_err(|e| Failure::new(exit::INTERNAL, e))?;
        match a.out.as_deref().filter(|p| p.as_os_str() != "-") {
            Some(p) => {
                write_atomic(p, text.as_bytes()).map_err(|e| Failure::new(exit::IO, e.into()))?
            }
            None => print!("{text}"),
        }
    }
    Ok(exit::OK)
}

fn write_model(dir: &Path, d: &Discovery) -> Result<(), Failure> {
    let hw = dir.join("hardware");
    std::fs::create_dir_all(&hw)
        .map_err(|e| Failure::new(exit::IO, anyhow!("{}: {e}", hw.display())))?;
    let path = hw.join(format!("{}.yaml", d.model.name));
    let text = format!(
        "# Written by `gangplan discover`; see docs/discover.md.\n{}",
        gangplan::adapters::nvml::describe::model_yaml(&d.model)
            .map_err(|e| Failure::new(exit::INTERNAL, e.into()))?
    );
    write_atomic(&path, text.as_bytes()).map_err(|e| Failure::new(exit::IO, e.into()))?;
    super::note(format!("wrote hardware model {}", path.display()));
    Ok(())
}

fn merge_into(
    path: &Path,
    d: &Discovery,
    lib: &ModelLibrary,
    model_written: bool,
) -> Result<(), Failure> {
    let name = path.display().to_string();
    let (mut raw, json) = if path.exists() {
        let text = read_document(path).map_err(Failure::from_lib)?;
        let raw: RawInstance = parse_document(&text, &name).map_err(Failure::from_lib)?;
        (raw, text.trim_start().starts_with('{'))
    } else {
        (RawInstance::default(), false)
    };
    let node_model = d.node.model.clone().unwrap_or_default();
    let known = lib.hardware.contains_key(&node_model);
    if !known && !model_written {
        // The next `gangplan solve` would refuse a node naming a model it cannot find.
        return Err(bad(format!(
            "{name}: node {} names hardware model {node_model}, which is not shipped, so the \
             merged instance would not load and was not written; pass --model-out DIR to write \
             the model (then plan with --models DIR), or --model-name NAME of a shipped model",
            d.node.name
        )));
    }
    let action = merge_node(&mut raw, d.node.clone());
    // Check the result with the discovered model known, so that a bad merge never lands.
    let mut lib = lib.clone();
    if !known {
        lib.hardware.insert(d.model.name.clone(), d.model.clone());
    }
    if let Err(issues) = validate(&raw, &lib) {
        let list: Vec<String> = issues.iter().map(|i| format!("  - {i}")).collect();
        return Err(bad(format!(
            "{name}: after merging node {} the instance is invalid, so it was not written:\n{}",
            d.node.name,
            list.join("\n")
        )));
    }
    let text = if json {
        serde_json::to_string_pretty(&raw)
            .map(|s| s + "\n")
            .map_err(anyhow::Error::from)
    } else {
        gangplan::yaml_text::to_yaml(&raw).map_err(anyhow::Error::from)
    }
    .map_err(|e| Failure::new(exit::INTERNAL, e))?;
    write_atomic(path, text.as_bytes()).map_err(|e| Failure::new(exit::IO, e.into()))?;
    let verb = match action {
        MergeAction::Updated => "updated",
        MergeAction::Added => "added",
    };
    super::note(format!("{verb} node {} in {name}", d.node.name));
    if !known {
        super::note(format!(
            "node {} names model {node_model}, written with --model-out: plan with --models DIR",
            d.node.name
        ));
    }
    Ok(())
}
