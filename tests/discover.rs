//! `gangplan discover`: recorded NVML inventories (tests/fixtures/nvml/*.json) -> node entries
//! and hardware models; the models load, and instances using them validate and solve; merging
//! into instance files; the error without NVML.

use gangplan::adapters::nvml::describe::{model_yaml, DiscoverError};
use gangplan::adapters::nvml::inventory::{NvLinkRecord, TopologyLevel};
use gangplan::adapters::nvml::{
    describe, merge_node, DescribeOptions, Discovery, MergeAction, Snapshot,
};
use gangplan::hardware::{Interconnect, ModelLibrary};
use gangplan::instance::raw::{RawInstance, RawNode, RawPending};
use gangplan::instance::validate::validate;
use gangplan::round::plan_round;
use gangplan::solve::PlannerKind;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

fn fixture_path(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/nvml")
        .join(name)
}

fn fixture(name: &str) -> Snapshot {
    let path = fixture_path(name);
    let text = std::fs::read_to_string(&path).expect("fixture readable");
    Snapshot::from_text(&text, &path.display().to_string()).expect("fixture parses")
}

fn opts(node: &str) -> DescribeOptions {
    DescribeOptions {
        node_name: node.to_string(),
        ..Default::default()
    }
}

fn run(s: &Snapshot) -> Discovery {
    describe(s, &opts("n1"), Some(&ModelLibrary::builtin())).expect("describes")
}

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_gangplan"))
}

const FIXTURES: &[&str] = &["dgx-h100.json", "a100-pcie-8x-bridged.json", "t4-2x.json"];

#[test]
fn recording_through_the_trait_reproduces_each_fixture() {
    for f in FIXTURES {
        let s = fixture(f);
        let mut again = Snapshot::record(&s, Duration::ZERO).expect("records");
        again.description = s.description.clone();
        assert_eq!(again, s, "{f}");
    }
}

#[test]
fn dgx_h100_is_one_nvswitch_island_over_two_numa_nodes() {
    let d = run(&fixture("dgx-h100.json"));
    let m = &d.model;
    assert_eq!(m.gpu_type, "H100");
    assert_eq!(m.gpus, 8);
    assert_eq!(m.interconnect, Interconnect::Nvswitch);
    assert_eq!(m.nvlink_islands, vec![(0..8).collect::<Vec<u32>>()]);
    assert_eq!(m.numa_nodes, vec![vec![0, 1, 2, 3], vec![4, 5, 6, 7]]);
    assert_eq!(m.gpu_memory_mib, Some(81559));
    assert_eq!(m.nvlink_gbps, 900.0);
    assert_eq!(m.pcie_gbps, 128.0);
    assert!(d.node.down.is_empty());
    // Same layout as the shipped dgx-h100 model, which the node entry then names.
    assert_eq!(d.matches_builtin.as_deref(), Some("dgx-h100"));
    assert_eq!(d.node.model.as_deref(), Some("dgx-h100"));
    assert_eq!(m.name, "h100-8x-nvswitch");
    for g in &d.gpus {
        assert_eq!(g.nvswitch_links, 18);
        assert_eq!(
            g.nvlink_peers.len(),
            7,
            "GPU {} reaches all others",
            g.index
        );
    }
}

#[test]
fn a100_pcie_bridges_make_pair_islands_and_numa_comes_from_pcie_distance() {
    let s = fixture("a100-pcie-8x-bridged.json");
    assert!(
        s.devices.iter().all(|d| d.numa_node.is_none()),
        "the fixture exercises the PCIe-ancestor fallback"
    );
    let d = run(&s);
    let m = &d.model;
    assert_eq!(m.gpu_type, "A100");
    assert_eq!(m.interconnect, Interconnect::NvlinkBridge);
    assert_eq!(
        m.nvlink_islands,
        vec![vec![0, 1], vec![2, 3], vec![4, 5], vec![6, 7]]
    );
    assert_eq!(m.numa_nodes, vec![vec![0, 1, 2, 3], vec![4, 5, 6, 7]]);
    assert_eq!(m.nvlink_gbps, 600.0);
    assert_eq!(m.pcie_gbps, 64.0);
    assert_eq!(d.gpus[2].nvlink_peers, vec![3]);
    assert_eq!(d.gpus[2].nvswitch_links, 0);
    assert_eq!(d.matches_builtin.as_deref(), Some("a100-pcie-8x"));
    // GPU 5: uncorrected ECC errors and a pending row remapping.
    assert_eq!(d.node.down, vec![5]);
    let why = d.gpus[5].down_reasons.join(" | ");
    assert!(why.contains("uncorrected ECC"), "{why}");
    assert!(why.contains("row remapping is pending"), "{why}");
    assert!(d
        .gpus
        .iter()
        .filter(|g| g.index != 5)
        .all(|g| g.down_reasons.is_empty()));
}

#[test]
fn t4_pair_is_pcie_only() {
    let d = run(&fixture("t4-2x.json"));
    let m = &d.model;
    assert_eq!(m.gpu_type, "T4");
    assert_eq!(m.gpus, 2);
    assert_eq!(m.interconnect, Interconnect::Pcie);
    assert!(m.nvlink_islands.is_empty());
    assert_eq!(m.numa_nodes, vec![vec![0, 1]]);
    assert_eq!(m.nvlink_gbps, 0.0);
    assert_eq!(m.pcie_gbps, 32.0);
    assert_eq!(m.gpu_memory_mib, Some(15360));
    assert_eq!(d.matches_builtin, None);
    assert_eq!(d.node.model.as_deref(), Some("t4-2x-pcie"));
    assert!(d.node.down.is_empty());
}

#[test]
fn unknown_far_ends_fall_back_to_nvlink_p2p_status() {
    for (f, ic, islands) in [
        (
            "dgx-h100.json",
            Interconnect::Nvswitch,
            vec![(0..8).collect::<Vec<u32>>()],
        ),
        (
            "a100-pcie-8x-bridged.json",
            Interconnect::NvlinkBridge,
            vec![vec![0, 1], vec![2, 3], vec![4, 5], vec![6, 7]],
        ),
    ] {
        let mut s = fixture(f);
        for d in &mut s.devices {
            for l in &mut d.nvlinks {
                l.remote_pci_bus_id = None;
            }
        }
        let d = run(&s);
        assert_eq!(d.model.interconnect, ic, "{f}");
        assert_eq!(d.model.nvlink_islands, islands, "{f}");
    }
}

#[test]
fn a_gpu_with_failed_links_leaves_the_nvswitch_island() {
    let mut s = fixture("dgx-h100.json");
    s.devices[7].nvlinks.clear();
    for p in &mut s.pairs {
        if p.b == 7 {
            p.nvlink_p2p = Some(false);
        }
    }
    let d = run(&s);
    assert_eq!(d.model.interconnect, Interconnect::Nvswitch);
    assert_eq!(d.model.nvlink_islands, vec![(0..7).collect::<Vec<u32>>()]);
    assert_eq!(d.matches_builtin, None, "no longer the shipped layout");
    // Pinning the model keeps the node entry stable, with a warning about the difference.
    let pinned = describe(
        &s,
        &DescribeOptions {
            model_name: Some("dgx-h100".into()),
            ..opts("n1")
        },
        Some(&ModelLibrary::builtin()),
    )
    .expect("describes");
    assert_eq!(pinned.node.model.as_deref(), Some("dgx-h100"));
    assert!(pinned.warnings.iter().any(|w| w.contains("another layout")));
    assert!(!run(&fixture("dgx-h100.json"))
        .warnings
        .iter()
        .any(|w| w.contains("another layout")));
}

#[test]
fn health_signals_mark_gpus_down() {
    let base = fixture("t4-2x.json");
    let down_of = |edit: &dyn Fn(&mut Snapshot)| {
        let mut s = base.clone();
        edit(&mut s);
        run(&s).node.down
    };
    assert_eq!(down_of(&|_| {}), Vec::<u64>::new());
    assert_eq!(
        down_of(&|s| s.devices[1].error = Some("GPU is lost".into())),
        vec![1]
    );
    assert_eq!(
        down_of(&|s| s.devices[0].health.retirement_pending = Some(true)),
        vec![0]
    );
    assert_eq!(
        down_of(&|s| s.devices[0].health.retired_pages_dbe = Some(64)),
        vec![0]
    );
    assert_eq!(
        down_of(&|s| s.devices[0].health.retired_pages_dbe = Some(63)),
        Vec::<u64>::new(),
        "below the retirement limit the GPU keeps serving"
    );
    assert_eq!(
        down_of(&|s| s.devices[1].health.remap_failed = Some(true)),
        vec![1]
    );
    assert_eq!(
        down_of(&|s| s.devices[1].health.xid_errors = vec![79]),
        vec![1]
    );
    assert_eq!(
        down_of(&|s| s.devices[1].health.xid_errors = vec![13, 31]),
        Vec::<u64>::new(),
        "application XIDs do not take the GPU out"
    );
    assert_eq!(
        down_of(&|s| s.devices[0].health.ecc_uncorrected_aggregate = Some(3)),
        Vec::<u64>::new(),
        "lifetime counts alone do not"
    );
    assert_eq!(
        down_of(&|s| {
            s.devices[0].mig_enabled = Some(true);
            s.devices[1].health.ecc_uncorrected_volatile = Some(1);
        }),
        vec![0, 1]
    );
}

#[test]
fn mixed_types_and_empty_nodes_are_refused() {
    let mut s = fixture("t4-2x.json");
    s.devices[1].name = Some("NVIDIA L4".into());
    match describe(&s, &opts("n"), None) {
        Err(DiscoverError::MixedTypes(t)) => assert!(t.contains("L4") && t.contains("T4")),
        other => panic!("expected MixedTypes, got {other:?}"),
    }
    let empty = Snapshot::default();
    assert!(matches!(
        describe(&empty, &opts("n"), None),
        Err(DiscoverError::NoGpus)
    ));
}

#[test]
fn pcie_distance_alone_groups_numa() {
    let mut s = fixture("t4-2x.json");
    for d in &mut s.devices {
        d.numa_node = None;
    }
    s.pairs[0].common_ancestor = Some(TopologyLevel::System);
    assert_eq!(run(&s).model.numa_nodes, vec![vec![0], vec![1]]);
    s.pairs[0].common_ancestor = Some(TopologyLevel::Node);
    assert_eq!(run(&s).model.numa_nodes, vec![vec![0, 1]]);
}

#[test]
fn bus_ids_match_across_spellings() {
    let mut s = fixture("a100-pcie-8x-bridged.json");
    // NVLink far ends reported with a 4-digit domain and upper case.
    for d in &mut s.devices {
        for NvLinkRecord {
            remote_pci_bus_id, ..
        } in &mut d.nvlinks
        {
            if let Some(r) = remote_pci_bus_id {
                *r = r.replacen("00000000:", "0000:", 1).to_ascii_uppercase();
            }
        }
    }
    for p in &mut s.pairs {
        p.nvlink_p2p = None;
    }
    let d = run(&s);
    assert_eq!(d.model.interconnect, Interconnect::NvlinkBridge);
    assert_eq!(d.model.nvlink_islands.len(), 4);
}

/// Write each discovered model to a folder, load it through ModelLibrary, and plan a round on
/// a cluster of such nodes.
#[test]
fn generated_models_load_validate_and_solve() {
    for f in FIXTURES {
        let s = fixture(f);
        let o = DescribeOptions {
            model_name: Some(format!("disc-{}", f.trim_end_matches(".json"))),
            ..opts("x")
        };
        let d = describe(&s, &o, Some(&ModelLibrary::builtin())).expect("describes");
        let dir = tempfile::tempdir().expect("tempdir");
        let hw = dir.path().join("hardware");
        std::fs::create_dir_all(&hw).expect("mkdir");
        let text = model_yaml(&d.model).expect("yaml");
        assert!(
            !text.contains("null"),
            "absent fields are left out:\n{text}"
        );
        std::fs::write(hw.join(format!("{}.yaml", d.model.name)), text).expect("write");
        let lib = ModelLibrary::with_dir(dir.path()).expect("model loads");
        assert_eq!(lib.hardware.get(&d.model.name), Some(&d.model), "{f}");

        let gpus = d.model.gpus as u64;
        let mut nodes = Vec::new();
        for k in 0..3 {
            let mut n = d.node.clone();
            n.name = format!("node{k}");
            n.rack = Some("r1".into());
            nodes.push(n);
        }
        let healthy = gpus - d.node.down.len() as u64;
        let raw = RawInstance {
            nodes,
            pending: vec![
                RawPending {
                    id: "whole-node".into(),
                    gpus: healthy,
                    within: Some("node".into()),
                    ..Default::default()
                },
                RawPending {
                    id: "pair".into(),
                    gpus: 2,
                    ..Default::default()
                },
            ],
            ..Default::default()
        };
        let inst = validate(&raw, &lib).unwrap_or_else(|e| panic!("{f}: {e:?}"));
        let plan = plan_round(inst, PlannerKind::Ilp, None).expect("plans");
        assert_eq!(plan.placements.len(), 2, "{f}: both jobs start");
        for p in &plan.placements {
            for gs in p.gpus.values() {
                for g in gs {
                    assert!(
                        !d.node.down.contains(&u64::from(*g)),
                        "{f}: down GPU {g} given to {}",
                        p.job
                    );
                }
            }
        }
        let pair = plan
            .placements
            .iter()
            .find(|p| p.job == "pair")
            .expect("pair placed");
        let gs: Vec<u32> = pair.gpus.values().flatten().copied().collect();
        if !d.model.nvlink_islands.is_empty() {
            assert!(
                d.model
                    .nvlink_islands
                    .iter()
                    .any(|i| gs.iter().all(|g| i.contains(g))),
                "{f}: the 2-GPU job sits inside one NVLink island: {gs:?}"
            );
        }
    }
}

#[test]
fn merge_updates_a_node_in_place_and_keeps_the_rest() {
    let mut inst = RawInstance {
        nodes: vec![
            RawNode {
                name: "a".into(),
                gpus: Some(4),
                gpu_type: Some("L4".into()),
                rack: Some("r9".into()),
                ..Default::default()
            },
            RawNode {
                name: "b".into(),
                gpus: Some(8),
                ..Default::default()
            },
        ],
        pending: vec![RawPending {
            id: "j".into(),
            gpus: 1,
            ..Default::default()
        }],
        ..Default::default()
    };
    let d = describe(&fixture("a100-pcie-8x-bridged.json"), &opts("a"), None).expect("ok");
    assert_eq!(merge_node(&mut inst, d.node.clone()), MergeAction::Updated);
    assert_eq!(inst.nodes.len(), 2);
    let a = &inst.nodes[0];
    assert_eq!(a.gpus, Some(8));
    assert_eq!(a.gpu_type.as_deref(), Some("A100"));
    assert_eq!(a.down, vec![5]);
    assert_eq!(a.rack.as_deref(), Some("r9"), "rack kept");
    assert_eq!(inst.nodes[1].name, "b");
    assert_eq!(inst.pending.len(), 1);
    let mut c = d.node.clone();
    c.name = "c".into();
    assert_eq!(merge_node(&mut inst, c), MergeAction::Added);
    assert_eq!(inst.nodes.len(), 3);
}

#[test]
fn cli_merges_into_an_instance_file_atomically() {
    let dir = tempfile::tempdir().expect("tempdir");
    let inst = dir.path().join("cluster.yaml");
    std::fs::write(
        &inst,
        "nodes:\n  - {name: gpu7, gpus: 4, gpu_type: L4, rack: r2, pod: p1}\n  - {name: other, gpus: 8, gpu_type: H100}\ntenants:\n  - {name: research, weight: 2}\npending:\n  - {id: job1, gpus: 2, tenant: research}\n",
    )
    .expect("write");
    let out = bin()
        .args(["discover", "--from"])
        .arg(fixture_path("dgx-h100.json"))
        .args(["--name", "gpu7", "--merge"])
        .arg(&inst)
        .output()
        .expect("runs");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("updated node gpu7"));
    let text = std::fs::read_to_string(&inst).expect("read");
    let raw: RawInstance = serde_yaml::from_str(&text).expect("still an instance");
    assert_eq!(raw.nodes.len(), 2);
    let n = &raw.nodes[0];
    assert_eq!(n.name, "gpu7");
    assert_eq!(n.model.as_deref(), Some("dgx-h100"));
    assert_eq!(n.gpus, Some(8));
    assert_eq!(n.gpu_type.as_deref(), Some("H100"));
    assert_eq!(n.rack.as_deref(), Some("r2"));
    assert_eq!(n.pod.as_deref(), Some("p1"));
    assert_eq!(raw.tenants.as_ref().map(|t| t.len()), Some(1));
    assert_eq!(raw.pending[0].tenant.as_deref(), Some("research"));
    assert!(validate(&raw, &ModelLibrary::builtin()).is_ok());
    // The solver accepts the merged file.
    let solve = bin().arg("solve").arg(&inst).output().expect("runs");
    assert_eq!(
        solve.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&solve.stderr)
    );
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .expect("ls")
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().to_string())
        .filter(|n| n.ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn cli_adds_a_node_with_its_own_model_and_json_stays_json() {
    let dir = tempfile::tempdir().expect("tempdir");
    let inst = dir.path().join("cluster.json");
    std::fs::write(
        &inst,
        r#"{"nodes": [{"name": "a", "gpus": 8, "gpu_type": "H100"}]}"#,
    )
    .expect("write");
    let models = dir.path().join("models");
    let out = bin()
        .args(["discover", "--from"])
        .arg(fixture_path("t4-2x.json"))
        .args(["--name", "t4node", "--rack", "r5", "--merge"])
        .arg(&inst)
        .arg("--model-out")
        .arg(&models)
        .output()
        .expect("runs");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&inst).expect("read");
    assert!(text.trim_start().starts_with('{'), "JSON in, JSON out");
    let raw: RawInstance = serde_json::from_str(&text).expect("parses");
    assert_eq!(raw.nodes.len(), 2);
    assert_eq!(raw.nodes[1].name, "t4node");
    assert_eq!(raw.nodes[1].rack.as_deref(), Some("r5"));
    assert_eq!(raw.nodes[1].model.as_deref(), Some("t4-2x-pcie"));
    assert!(models.join("hardware/t4-2x-pcie.yaml").is_file());
    // Without the model folder the instance does not load; with it, it plans.
    let without = bin().arg("solve").arg(&inst).output().expect("runs");
    assert_eq!(without.status.code(), Some(2));
    let with = bin()
        .arg("solve")
        .arg(&inst)
        .arg("--models")
        .arg(&models)
        .output()
        .expect("runs");
    assert_eq!(
        with.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&with.stderr)
    );
}

#[test]
fn cli_refuses_a_merge_that_breaks_the_instance() {
    let dir = tempfile::tempdir().expect("tempdir");
    let inst = dir.path().join("cluster.yaml");
    // A running job holds GPU 9 of node n: after discovery n has 2 GPUs.
    let before = "nodes:\n  - {name: n, gpus: 16}\nrunning:\n  - {id: r, gpus: {n: [9]}}\n";
    std::fs::write(&inst, before).expect("write");
    let out = bin()
        .args(["discover", "--from"])
        .arg(fixture_path("t4-2x.json"))
        .args(["--name", "n", "--merge"])
        .arg(&inst)
        .arg("--model-out")
        .arg(dir.path().join("models"))
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not written"));
    assert_eq!(std::fs::read_to_string(&inst).expect("read"), before);
}

#[test]
fn cli_json_output_carries_the_inventory_it_was_derived_from() {
    let out = bin()
        .args(["discover", "--format", "json", "--name", "h", "--from"])
        .arg(fixture_path("a100-pcie-8x-bridged.json"))
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["format"], "gangplan-discover/1");
    assert_eq!(v["node"]["down"], serde_json::json!([5]));
    assert!(
        v["model"].get("cpu_milli").is_none(),
        "absent fields left out"
    );
    let inv: Snapshot = serde_json::from_value(v["inventory"].clone()).expect("inventory");
    assert_eq!(inv, fixture("a100-pcie-8x-bridged.json"));
    // A whole output is a recording too.
    let again = Snapshot::from_text(&String::from_utf8_lossy(&out.stdout), "out.json")
        .expect("output reads back");
    assert_eq!(again, inv);
}

#[test]
fn without_nvml_the_cli_says_what_to_install() {
    let out = bin()
        .args(["discover", "--nvml-lib", "/nonexistent/libnvidia-ml.so.1"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(7), "documented exit code, no panic");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("NVML"), "{err}");
    assert!(err.contains("libnvidia-ml.so.1"), "{err}");
    assert!(err.contains("NVIDIA driver"), "{err}");
    assert!(!err.contains("internal error"), "{err}");
    assert!(out.stdout.is_empty());
}

#[test]
fn bad_recordings_are_input_errors() {
    let dir = tempfile::tempdir().expect("tempdir");
    let f = dir.path().join("bad.json");
    std::fs::write(&f, r#"{"devices": [{"index": 0, "nmae": "x"}]}"#).expect("write");
    let out = bin()
        .args(["discover", "--name", "n", "--from"])
        .arg(&f)
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("nmae"));
}

/// A merge that would name a model the next `solve` cannot find is refused: the instance
/// stays as it was, and the message says how to keep the model.
#[test]
fn cli_refuses_to_merge_a_node_of_an_unshipped_model_without_its_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let inst = dir.path().join("cluster.yaml");
    let before = "nodes:\n  - {name: a, gpus: 8, gpu_type: H100}\n";
    std::fs::write(&inst, before).expect("write");
    let out = bin()
        .args(["discover", "--from"])
        .arg(fixture_path("t4-2x.json"))
        .args(["--name", "t4node", "--merge"])
        .arg(&inst)
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("t4-2x-pcie") && err.contains("--model-out"),
        "{err}"
    );
    assert_eq!(std::fs::read_to_string(&inst).expect("read"), before);
    // The instance as it is still plans.
    let solve = bin().arg("solve").arg(&inst).output().expect("runs");
    assert_eq!(solve.status.code(), Some(0));
}
