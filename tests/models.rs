//! The shipped hardware models and workload profiles load, and instances can use them.

use gangplan::hardware::{Interconnect, ModelLibrary};

#[test]
fn shipped_models_load() {
    let lib = ModelLibrary::builtin();
    for name in [
        "dgx-h100",
        "dgx-a100",
        "a100-pcie-8x",
        "l40s-pcie-4x",
        "gb200-nvl72-tray",
    ] {
        assert!(
            lib.hardware.contains_key(name),
            "missing hardware model {name}"
        );
    }
    let h100 = &lib.hardware["dgx-h100"];
    assert_eq!((h100.gpus, h100.interconnect), (8, Interconnect::Nvswitch));
    assert_eq!(h100.nvlink_islands, vec![(0..8).collect::<Vec<u32>>()]);
    let pcie = &lib.hardware["a100-pcie-8x"];
    assert_eq!(pcie.nvlink_islands.len(), 4, "NVLink bridge pairs");
    assert_eq!(
        lib.hardware["gb200-nvl72-tray"].rack_scale_domain_gpus,
        Some(72)
    );
    for (name, w) in &lib.workloads {
        let s = w.slowdown;
        assert!(
            1.0 <= s.span_nodes && s.span_nodes <= s.span_racks && s.span_racks <= s.span_pods,
            "{name}: {s:?}"
        );
        assert!(!w.sources.is_empty(), "{name} cites no source");
    }
    assert!(lib.workloads.contains_key("default"));
}

#[test]
fn pcie_pairs_keep_a_two_gpu_job_on_one_bridge() {
    let lib = ModelLibrary::builtin();
    let yaml = "nodes:\n  - {name: p1, model: a100-pcie-8x}\nrunning:\n  - {id: r, gpus: {p1: [0, 2, 4]}}\npending:\n  - {id: pair, gpus: 2, within: node}\n";
    let inst = gangplan::instance::parse_instance(yaml, "t", &lib).unwrap();
    let plan = gangplan::round::plan_round(inst, gangplan::solve::PlannerKind::Ilp, None).unwrap();
    // Free: 1,3,5,6,7; the only whole free bridge pair is (6,7).
    assert_eq!(plan.placements[0].gpus["p1"], vec![6, 7]);
}

#[test]
fn nvl72_trays_share_one_nvlink_domain() {
    let lib = ModelLibrary::builtin();
    let mut yaml = String::from("nodes:\n");
    for i in 0..4 {
        yaml += &format!(
            "  - {{name: t{i}, model: gb200-nvl72-tray, rack: r{}, nvlink_domain: nvl-a}}\n",
            i % 2
        );
    }
    yaml += "pending:\n  - {id: gang, gpus: 16}\n";
    let inst = gangplan::instance::parse_instance(&yaml, "t", &lib).unwrap();
    let topo = gangplan::topology::Topology::new(&inst);
    assert_eq!(
        topo.unit_of
            .iter()
            .collect::<std::collections::BTreeSet<_>>()
            .len(),
        1
    );
    let plan = gangplan::round::plan_round(inst, gangplan::solve::PlannerKind::Ilp, None).unwrap();
    assert_eq!(
        plan.placements[0].gpus.len(),
        4,
        "16 GPUs over four 4-GPU trays"
    );
}
