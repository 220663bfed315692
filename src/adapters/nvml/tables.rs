//! Fixed tables: NVML product names -> gangplan GPU types, NVLink bandwidth per link by
//! architecture, PCIe bandwidth per lane by generation. Documented in `docs/discover.md`.

/// GPU types recognised in NVML product names, most specific first. A product name matches
/// the first entry equal (case-insensitive) to one of its words, where words are split at
/// spaces, `-` and `_` (`NVIDIA A100-SXM4-80GB` -> `A100`).
pub const GPU_TYPES: &[&str] = &[
    "GB300", "GB200", "B300", "B200", "B100", "GH200", "H200", "H100", "H800", "H20", "A100",
    "A800", "A40", "A30", "A16", "A10G", "A10", "A2", "L40S", "L40", "L20", "L4", "V100", "T4",
    "P100", "P40", "P4",
];

/// The gangplan GPU type of an NVML product name: the table entry that is a word of the name,
/// else the name without its vendor words (`NVIDIA`, `Tesla`, `GeForce`, `Quadro`) with spaces
/// turned into `-` (`NVIDIA GeForce RTX 4090` -> `RTX-4090`).
pub fn gpu_type_of(product: &str) -> String {
    let words: Vec<&str> = product
        .split([' ', '-', '_'])
        .filter(|w| !w.is_empty())
        .collect();
    for t in GPU_TYPES {
        if words.iter().any(|w| w.eq_ignore_ascii_case(t)) {
            return (*t).to_string();
        }
    }
    let rest: Vec<&str> = product
        .split_whitespace()
        .filter(|w| {
            !["nvidia", "tesla", "geforce", "quadro"]
                .iter()
                .any(|v| w.eq_ignore_ascii_case(v))
        })
        .collect();
    if rest.is_empty() {
        "generic".to_string()
    } else {
        rest.join("-")
    }
}

/// Bidirectional NVLink bandwidth of one link, GB/s, by architecture name (as NVML reports it),
/// with the datasheet figure it is derived from.
pub fn nvlink_gbps_per_link(architecture: &str) -> Option<(f64, &'static str)> {
    let a = architecture.to_ascii_lowercase();
    Some(match a.as_str() {
        "pascal" => (40.0, "P100 SXM2: 4 NVLinks, 160 GB/s"),
        "volta" => (50.0, "V100 SXM2: 6 NVLinks, 300 GB/s"),
        "ampere" => (50.0, "A100: 12 NVLinks, 600 GB/s"),
        "hopper" => (50.0, "H100 SXM: 18 NVLinks, 900 GB/s"),
        "blackwell" => (100.0, "B200: 18 NVLinks, 1.8 TB/s"),
        _ => return None,
    })
}

/// Bidirectional PCIe bandwidth of one lane, GB/s, by generation (x16 Gen3 = 32, Gen4 = 64,
/// Gen5 = 128, as NVIDIA datasheets quote them).
pub fn pcie_gbps_per_lane(gen: u32) -> Option<f64> {
    match gen {
        1..=6 => Some(0.5 * f64::from(1u32 << (gen - 1))),
        _ => None,
    }
}

/// NVIDIA's limit on retired pages per GPU (page retirement, pre-Ampere): "a maximum of 64
/// retirements for the frame buffer". A GPU at the limit cannot retire the next bad page.
pub const RETIRED_PAGE_LIMIT: u64 = 64;

/// Critical XIDs that take a GPU out of service until it is reset, the node rebooted or the
/// board replaced (judgement from NVIDIA's XID catalogue): 48 double-bit ECC error, 64 row
/// remapping failure, 74 NVLink error, 79 GPU fallen off the bus, 92 high single-bit ECC rate,
/// 95 uncontained ECC error, 119/120 GSP (GPU system processor) errors, 140 unrecovered ECC.
pub const XID_DOWN: &[u64] = &[48, 64, 74, 79, 92, 95, 119, 120, 140];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn product_names_map_to_types() {
        for (name, t) in [
            ("NVIDIA H100 80GB HBM3", "H100"),
            ("NVIDIA H200", "H200"),
            ("NVIDIA H20", "H20"),
            ("NVIDIA GH200 480GB", "GH200"),
            ("NVIDIA A100-SXM4-80GB", "A100"),
            ("NVIDIA A100 80GB PCIe", "A100"),
            ("NVIDIA A10G", "A10G"),
            ("NVIDIA L40S", "L40S"),
            ("NVIDIA L4", "L4"),
            ("Tesla V100-SXM2-32GB", "V100"),
            ("Tesla T4", "T4"),
            ("NVIDIA B200", "B200"),
            ("NVIDIA GB200", "GB200"),
            ("NVIDIA GeForce RTX 4090", "RTX-4090"),
            ("NVIDIA", "generic"),
        ] {
            assert_eq!(gpu_type_of(name), t, "{name}");
        }
    }

    #[test]
    fn pcie_lanes() {
        assert_eq!(pcie_gbps_per_lane(3).map(|g| g * 16.0), Some(32.0));
        assert_eq!(pcie_gbps_per_lane(4).map(|g| g * 16.0), Some(64.0));
        assert_eq!(pcie_gbps_per_lane(5).map(|g| g * 16.0), Some(128.0));
        assert_eq!(pcie_gbps_per_lane(0), None);
        assert_eq!(pcie_gbps_per_lane(9), None);
    }
}
