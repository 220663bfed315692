//! [`GpuInventory`] answered by NVML through the `nvml-wrapper` crate. NVML is loaded at run
//! time (`libnvidia-ml.so.1`), so gangplan builds and runs on machines without the NVIDIA
//! driver; only this module's [`NvmlInventory::open`] then fails, with an
//! [`InventoryError::Unavailable`] that says what to install.

use super::inventory::{
    DeviceRecord, GpuInventory, HealthRecord, InventoryError, NvLinkRecord, PairRecord,
    TopologyLevel,
};
use nvml_wrapper::bitmasks::event::EventTypes;
use nvml_wrapper::enum_wrappers::device::{
    EccCounter, MemoryError, P2pCapabilitiesIndex, P2pStatus, RetirementCause,
    TopologyLevel as NvmlLevel,
};
use nvml_wrapper::enums::event::XidError;
use nvml_wrapper::error::NvmlError;
use nvml_wrapper::{Device, Nvml};
use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::time::{Duration, Instant};

/// The NVML library the NVIDIA driver installs (the unversioned `libnvidia-ml.so` comes only
/// with development packages, so it is tried second).
pub const LIBRARY: &str = "libnvidia-ml.so.1";
/// Tried when [`LIBRARY`] cannot be loaded.
pub const FALLBACK_LIBRARY: &str = "libnvidia-ml.so";

/// What to install when NVML is missing.
pub const INSTALL_HINT: &str = "Install the NVIDIA driver, which ships NVML as libnvidia-ml.so.1 (Debian: libnvidia-ml1 with nvidia-driver; Ubuntu: nvidia-utils-<version> / libnvidia-compute-<version>; RHEL/Fedora: nvidia-driver-NVML); in a container, start it with the NVIDIA Container Toolkit (`--gpus all`) so the host's library is mounted; or pass --nvml-lib PATH";

/// Most NVLinks a GPU has (NVML's `NVML_NVLINK_MAX_LINKS`).
const MAX_LINKS: u32 = 18;

/// NVML, opened.
pub struct NvmlInventory {
    nvml: Nvml,
}

fn unavailable(library: &str, e: &NvmlError) -> InventoryError {
    let (reason, hint) = match e {
        NvmlError::LibloadingError(le) => (
            format!("the library could not be loaded ({le})"),
            INSTALL_HINT.to_string(),
        ),
        NvmlError::FailedToLoadSymbol(s) => (
            format!("the library lacks a function gangplan needs ({s})"),
            format!("The driver is too old: update it. {INSTALL_HINT}"),
        ),
        NvmlError::DriverNotLoaded => (
            format!("{library} loaded, but the NVIDIA kernel driver is not running"),
            "Load it (`modprobe nvidia`, or reboot after installing the driver) and check `nvidia-smi`".to_string(),
        ),
        NvmlError::NoPermission => (
            "NVML has no permission to talk to the driver".to_string(),
            "Run as a user that can open /dev/nvidia* (or as root)".to_string(),
        ),
        NvmlError::LibRmVersionMismatch => (
            format!("{library} and the loaded kernel driver are of different versions"),
            "Reboot (or reload the nvidia kernel module) after the driver upgrade".to_string(),
        ),
        other => (
            format!("NVML failed to start ({other})"),
            format!("Check `nvidia-smi`. {INSTALL_HINT}"),
        ),
    };
    InventoryError::Unavailable {
        library: library.to_string(),
        reason,
        hint,
    }
}

/// Whether an error only means "this GPU or driver does not report that".
fn unsupported(e: &NvmlError) -> bool {
    matches!(
        e,
        NvmlError::NotSupported
            | NvmlError::FunctionNotFound
            | NvmlError::FailedToLoadSymbol(_)
            | NvmlError::InvalidArg
            | NvmlError::NotFound
            | NvmlError::NoData
            | NvmlError::NoPermission
            | NvmlError::UnexpectedVariant(_)
            | NvmlError::VgpuEccNotSupported
    )
}

/// `Some` on success, `None` when unsupported; other errors are noted in `errs` (they mean the
/// GPU is in trouble).
fn soft<T>(r: Result<T, NvmlError>, what: &str, errs: &mut Vec<String>) -> Option<T> {
    match r {
        Ok(v) => Some(v),
        Err(e) if unsupported(&e) => None,
        Err(e) => {
            errs.push(format!("{what}: {e}"));
            None
        }
    }
}

fn level(l: NvmlLevel) -> TopologyLevel {
    match l {
        NvmlLevel::Internal => TopologyLevel::Internal,
        NvmlLevel::Single => TopologyLevel::Single,
        NvmlLevel::Multiple => TopologyLevel::Multiple,
        NvmlLevel::HostBridge => TopologyLevel::HostBridge,
        NvmlLevel::Node => TopologyLevel::Node,
        NvmlLevel::System => TopologyLevel::System,
    }
}

impl NvmlInventory {
    /// Load NVML from `library`, or from [`LIBRARY`] then [`FALLBACK_LIBRARY`], and start it.
    pub fn open(library: Option<&OsStr>) -> Result<Self, InventoryError> {
        let candidates: Vec<&OsStr> = match library {
            Some(p) => vec![p],
            None => vec![OsStr::new(LIBRARY), OsStr::new(FALLBACK_LIBRARY)],
        };
        let mut first_err = None;
        for c in &candidates {
            match Nvml::builder().lib_path(c).init() {
                Ok(nvml) => return Ok(NvmlInventory { nvml }),
                Err(e) => {
                    let loading = matches!(e, NvmlError::LibloadingError(_));
                    let err = unavailable(&c.to_string_lossy(), &e);
                    // A library that loaded but failed says more than a later "not found".
                    if !loading {
                        return Err(err);
                    }
                    first_err.get_or_insert(err);
                }
            }
        }
        let mut err =
            first_err.unwrap_or_else(|| unavailable(LIBRARY, &NvmlError::LibraryNotFound));
        if let (None, InventoryError::Unavailable { library, .. }) = (library, &mut err) {
            *library = format!("{LIBRARY} and {FALLBACK_LIBRARY}");
        }
        Err(err)
    }

    fn handle(&self, index: u32) -> Result<Device<'_>, NvmlError> {
        self.nvml.device_by_index(index)
    }

    fn health(&self, dev: &Device<'_>, errs: &mut Vec<String>) -> HealthRecord {
        let retired = |cause| soft(dev.retired_pages(cause), "retired_pages", &mut Vec::new());
        let mut h = HealthRecord {
            retired_pages_sbe: retired(RetirementCause::MultipleSingleBitEccErrors)
                .map(|v| v.len() as u64),
            retired_pages_dbe: retired(RetirementCause::DoubleBitEccError).map(|v| v.len() as u64),
            retirement_pending: soft(dev.are_pages_pending_retired(), "pending_retired", errs),
            ecc_uncorrected_volatile: soft(
                dev.total_ecc_errors(MemoryError::Uncorrected, EccCounter::Volatile),
                "ecc_volatile",
                errs,
            ),
            ecc_uncorrected_aggregate: soft(
                dev.total_ecc_errors(MemoryError::Uncorrected, EccCounter::Aggregate),
                "ecc_aggregate",
                errs,
            ),
            remap_pending: None,
            remap_failed: None,
            xid_errors: Vec::new(),
        };
        if let Some((pending, failed)) = self.remapped_rows(dev) {
            h.remap_pending = Some(pending);
            h.remap_failed = Some(failed);
        }
        h
    }

    /// `nvmlDeviceGetRemappedRows` (Ampere and later), which nvml-wrapper does not wrap:
    /// `(pending, failure)`.
    fn remapped_rows(&self, dev: &Device<'_>) -> Option<(bool, bool)> {
        let f = self.nvml.lib().nvmlDeviceGetRemappedRows.as_ref().ok()?;
        let (mut corr, mut unc, mut pending, mut failed) = (0u32, 0u32, 0u32, 0u32);
        // SAFETY: `f` is the symbol NVML exports with this C signature; the handle comes from a
        // live `Device` of the same `Nvml`; the four out-pointers are valid for the call.
        let ret = unsafe { f(dev.handle(), &mut corr, &mut unc, &mut pending, &mut failed) };
        (ret == 0).then_some((pending != 0, failed != 0))
    }
}

impl GpuInventory for NvmlInventory {
    fn driver_version(&self) -> Result<Option<String>, InventoryError> {
        Ok(self.nvml.sys_driver_version().ok())
    }

    fn device_count(&self) -> Result<u32, InventoryError> {
        self.nvml.device_count().map_err(|e| InventoryError::Query {
            query: "device_count".into(),
            detail: e.to_string(),
        })
    }

    fn device(&self, index: u32) -> Result<DeviceRecord, InventoryError> {
        let mut rec = DeviceRecord {
            index,
            ..Default::default()
        };
        let dev = match self.handle(index) {
            Ok(d) => d,
            Err(e) => {
                rec.error = Some(e.to_string());
                return Ok(rec);
            }
        };
        let mut errs = Vec::new();
        rec.name = soft(dev.name(), "name", &mut errs);
        rec.uuid = soft(dev.uuid(), "uuid", &mut errs);
        rec.memory_total_bytes = soft(dev.memory_info(), "memory_info", &mut errs).map(|m| m.total);
        rec.pci_bus_id = soft(dev.pci_info(), "pci_info", &mut errs).map(|p| p.bus_id);
        rec.architecture = soft(dev.architecture(), "architecture", &mut errs)
            .map(|a| a.to_string())
            .filter(|a| a != "Unknown");
        rec.numa_node = soft(dev.numa_node_id(), "numa_node_id", &mut errs);
        rec.pcie_max_gen = soft(dev.max_pcie_link_gen(), "max_pcie_link_gen", &mut errs);
        rec.pcie_max_width = soft(dev.max_pcie_link_width(), "max_pcie_link_width", &mut errs);
        rec.mig_enabled = soft(dev.mig_mode(), "mig_mode", &mut errs).map(|m| m.current != 0);
        for link in 0..MAX_LINKS {
            let l = dev.link_wrapper_for(link);
            // Links past the GPU's count answer InvalidArg / NotSupported: not active.
            if l.is_active().unwrap_or(false) {
                rec.nvlinks.push(NvLinkRecord {
                    link,
                    remote_pci_bus_id: l.remote_pci_info().ok().map(|p| p.bus_id),
                });
            }
        }
        rec.health = self.health(&dev, &mut errs);
        if !errs.is_empty() {
            rec.error = Some(errs.join("; "));
        }
        Ok(rec)
    }

    fn pair(&self, a: u32, b: u32) -> Result<PairRecord, InventoryError> {
        let mut rec = PairRecord {
            a,
            b,
            common_ancestor: None,
            nvlink_p2p: None,
        };
        let (Ok(da), Ok(db)) = (self.handle(a), self.handle(b)) else {
            return Ok(rec);
        };
        rec.common_ancestor = da.topology_common_ancestor(db).ok().map(level);
        if let Ok(db) = self.handle(b) {
            rec.nvlink_p2p = da
                .p2p_status(&db, P2pCapabilitiesIndex::NvLink)
                .ok()
                .map(|s| s == P2pStatus::Ok);
        }
        Ok(rec)
    }

    fn critical_xids(&self, listen: Duration) -> Result<BTreeMap<u32, Vec<u64>>, InventoryError> {
        let mut out: BTreeMap<u32, Vec<u64>> = BTreeMap::new();
        if listen.is_zero() {
            return Ok(out);
        }
        let q = |e: String| InventoryError::Query {
            query: "critical XID events".into(),
            detail: e,
        };
        let mut set = self.nvml.create_event_set().map_err(|e| q(e.to_string()))?;
        let n = self.device_count()?;
        let mut uuid_ix: BTreeMap<String, u32> = BTreeMap::new();
        for i in 0..n {
            let Ok(dev) = self.handle(i) else { continue };
            if let Ok(u) = dev.uuid() {
                uuid_ix.insert(u, i);
            }
            set = dev
                .register_events(EventTypes::CRITICAL_XID_ERROR, set)
                .map_err(|e| q(e.to_string()))?;
        }
        let deadline = Instant::now() + listen;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            let ms = u32::try_from(left.as_millis()).unwrap_or(u32::MAX).max(1);
            match set.wait(ms) {
                Ok(ev) => {
                    let ix = ev.device.uuid().ok().and_then(|u| uuid_ix.get(&u).copied());
                    if let (Some(ix), Some(XidError::Value(x))) = (ix, ev.event_data) {
                        out.entry(ix).or_default().push(x);
                    }
                }
                Err(NvmlError::Timeout) => break,
                Err(e) => return Err(q(e.to_string())),
            }
        }
        Ok(out)
    }
}
