//! When a GPU is out of service (`down`), and why, from what NVML reports.

use super::inventory::DeviceRecord;
use super::tables::{RETIRED_PAGE_LIMIT, XID_DOWN};

/// Reasons GPU `d` must not be given out; empty when it is healthy. Each reason is a sentence
/// that says what to do.
pub fn down_reasons(d: &DeviceRecord) -> Vec<String> {
    let mut r = Vec::new();
    if let Some(e) = &d.error {
        r.push(format!(
            "NVML cannot query the GPU ({e}); check `nvidia-smi` and the kernel log, then reset the GPU or reboot"
        ));
    }
    let h = &d.health;
    if h.retirement_pending == Some(true) {
        r.push("a memory page retirement is pending; reset the GPU to apply it".to_string());
    }
    let retired = h.retired_pages_sbe.unwrap_or(0) + h.retired_pages_dbe.unwrap_or(0);
    if retired >= RETIRED_PAGE_LIMIT {
        r.push(format!(
            "{retired} memory pages are retired, the most a GPU can retire ({RETIRED_PAGE_LIMIT}); have the board serviced"
        ));
    }
    if h.remap_failed == Some(true) {
        r.push(
            "a memory row remapping failed (no spare rows left); have the board serviced"
                .to_string(),
        );
    }
    if h.remap_pending == Some(true) {
        r.push("a memory row remapping is pending; reset the GPU to apply it".to_string());
    }
    if let Some(n) = h.ecc_uncorrected_volatile.filter(|&n| n > 0) {
        r.push(format!(
            "{n} uncorrected ECC error(s) since the driver loaded; reset the GPU"
        ));
    }
    let mut xids: Vec<u64> = h
        .xid_errors
        .iter()
        .copied()
        .filter(|x| XID_DOWN.contains(x))
        .collect();
    xids.sort();
    xids.dedup();
    for x in xids {
        r.push(format!(
            "critical XID {x} reported; see NVIDIA's XID catalogue, then reset the GPU or reboot"
        ));
    }
    if d.mig_enabled == Some(true) {
        r.push(
            "MIG mode is on: the GPU is split into MIG instances, which gangplan cannot give out as a whole GPU; disable MIG (`nvidia-smi -i N -mig 0`) to schedule it"
                .to_string(),
        );
    }
    r
}
