//! The interconnect graph: link bandwidths from the hardware models, span tiers of hand-built
//! gangs, the cost ordering of tiers, and GPU index choice on PCIe-pair and NUMA-split nodes.

use gangplan::hardware::ModelLibrary;
use gangplan::instance::{parse_instance, Instance};
use gangplan::topology::bandwidth::{NIC_GBPS, POD_UPLINK_GBPS, RACK_UPLINK_GBPS};
use gangplan::topology::{choose_on, spread_penalty, LinkKind, Tier, Topology, Vertex};
use std::collections::BTreeMap;

/// Pod p0: rack ra (h1, h2), rack rb (h3, l1 L40S, a1 A100 PCIe pairs), rack rn (four GB200
/// trays of one NVL72 domain); pod p1: rack rc (h4).
fn cluster() -> Instance {
    let yaml = "nodes:
  - {name: h1, model: dgx-h100, rack: ra, pod: p0}
  - {name: h2, model: dgx-h100, rack: ra, pod: p0}
  - {name: h3, model: dgx-h100, rack: rb, pod: p0}
  - {name: l1, model: l40s-pcie-4x, rack: rb, pod: p0}
  - {name: a1, model: a100-pcie-8x, rack: rb, pod: p0}
  - {name: t0, model: gb200-nvl72-tray, rack: rn, pod: p0, nvlink_domain: nvl-a}
  - {name: t1, model: gb200-nvl72-tray, rack: rn, pod: p0, nvlink_domain: nvl-a}
  - {name: t2, model: gb200-nvl72-tray, rack: rn, pod: p0, nvlink_domain: nvl-a}
  - {name: t3, model: gb200-nvl72-tray, rack: rn, pod: p0, nvlink_domain: nvl-a}
  - {name: h4, model: dgx-h100, rack: rc, pod: p1}
";
    parse_instance(yaml, "t", &ModelLibrary::builtin()).unwrap()
}

fn gang(inst: &Instance, parts: &[(&str, &[u32])]) -> BTreeMap<usize, Vec<u32>> {
    parts
        .iter()
        .map(|(n, idx)| (inst.node_by_name[*n], idx.to_vec()))
        .collect()
}

#[test]
fn links_carry_the_bandwidths_of_every_shipped_model() {
    let lib = ModelLibrary::builtin();
    let mut yaml = String::from("nodes:\n");
    for name in lib.hardware.keys() {
        yaml += &format!("  - {{name: n-{name}, model: {name}, rack: r-{name}}}\n");
    }
    let inst = parse_instance(&yaml, "t", &lib).unwrap();
    let topo = Topology::new(&inst);
    for (name, model) in &lib.hardware {
        let n = inst.node_by_name[&format!("n-{name}")];
        let f = &topo.fabric[n];
        assert_eq!(f.bandwidth.nvlink, model.nvlink_gbps, "{name}");
        assert_eq!(f.bandwidth.pcie, model.pcie_gbps, "{name}");
        for g in 0..model.gpus {
            let gv = topo
                .graph
                .node_indices()
                .find(|&v| topo.graph[v] == Vertex::Gpu(n, g))
                .unwrap();
            for e in topo.graph.edges(gv) {
                let want = match e.weight().kind {
                    LinkKind::Nvlink => model.nvlink_gbps,
                    LinkKind::Pcie => model.pcie_gbps,
                    other => panic!("{name}: GPU {g} has a {other:?} link"),
                };
                assert_eq!(e.weight().gbps, want, "{name} GPU {g}");
            }
        }
        // GPUs 0 and 1: one island on every shipped model but the L40S (PCIe, same socket).
        let want = if model.nvlink_islands.is_empty() {
            model.pcie_gbps
        } else {
            model.nvlink_gbps
        };
        assert_eq!(topo.bottleneck_gbps((n, 0), (n, 1)), want, "{name}");
    }
    for e in topo.graph.edge_indices() {
        let link = topo.graph[e];
        match link.kind {
            LinkKind::Nic => assert_eq!(link.gbps, NIC_GBPS),
            LinkKind::RackUplink => assert_eq!(link.gbps, RACK_UPLINK_GBPS),
            LinkKind::PodUplink => assert_eq!(link.gbps, POD_UPLINK_GBPS),
            _ => {}
        }
    }
    // Across two nodes with PCIe Gen5 (128 GB/s) the NIC is the bottleneck; with the DGX
    // A100's PCIe Gen4 (64 GB/s) it is PCIe.
    let (a, b) = (
        inst.node_by_name["n-dgx-h100"],
        inst.node_by_name["n-dgx-b200"],
    );
    let c = inst.node_by_name["n-dgx-a100"];
    assert_eq!(topo.bottleneck_gbps((a, 0), (c, 0)), 64.0);
    assert_eq!(topo.tier_between((a, 0), (b, 0)), Tier::Pod);
    assert_eq!(topo.bottleneck_gbps((a, 0), (b, 0)), NIC_GBPS);
}

#[test]
fn span_tiers_of_hand_built_gangs() {
    let inst = cluster();
    let topo = Topology::new(&inst);
    let all: &[u32] = &[0, 1, 2, 3, 4, 5, 6, 7];
    let four: &[u32] = &[0, 1, 2, 3];
    type Gang<'a> = &'a [(&'a str, &'a [u32])];
    let cases: [(Gang, Tier); 7] = [
        (&[("h1", all)], Tier::Nvlink),
        (&[("l1", &[0, 1])], Tier::Nvlink),
        (&[("l1", &[1, 2])], Tier::Node),
        (&[("t0", four), ("t2", four)], Tier::NvlinkDomain),
        (&[("h1", four), ("h2", four)], Tier::Rack),
        (&[("h1", four), ("h3", four)], Tier::Pod),
        (&[("h1", four), ("h4", four)], Tier::Cluster),
    ];
    for (parts, tier) in cases {
        let g = gang(&inst, parts);
        assert_eq!(topo.span(&inst, &g).tier(), tier, "{parts:?}");
        let (first, last) = (parts[0], parts[parts.len() - 1]);
        let pair = (
            (inst.node_by_name[first.0], first.1[0]),
            (inst.node_by_name[last.0], *last.1.last().unwrap()),
        );
        let between = topo.tier_between(pair.0, pair.1);
        // Two GPUs of one socket on the L40S meet over PCIe, of one DGX over NVLink.
        let want = if tier == Tier::Nvlink && first.0 == "l1" {
            Tier::Pcie
        } else {
            tier
        };
        assert_eq!(between, want, "{parts:?}");
    }
    // The NVL72 domain keeps tray-to-tray traffic at the tray's NVLink bandwidth.
    let (t0, t2) = (inst.node_by_name["t0"], inst.node_by_name["t2"]);
    assert_eq!(topo.bottleneck_gbps((t0, 0), (t2, 3)), 1800.0);
    assert_eq!(topo.bottleneck_gbps((t0, 0), (t0, 3)), 1800.0);
}

#[test]
fn communication_heavy_gangs_cost_more_at_each_wider_tier() {
    let inst = cluster();
    let topo = Topology::new(&inst);
    let s = ModelLibrary::builtin().slowdown(Some("recommender"));
    let four: &[u32] = &[0, 1, 2, 3];
    let cost = |parts: &[(&str, &[u32])]| {
        spread_penalty(&topo.span(&inst, &gang(&inst, parts)), 1, 8, &s, 1.0)
    };
    let node = cost(&[("h1", &[0, 1, 2, 3, 4, 5, 6, 7])]);
    let domain = cost(&[("t0", four), ("t1", four)]);
    let rack = cost(&[("h1", four), ("h2", four)]);
    let pod = cost(&[("h1", four), ("h3", four)]);
    let cluster = cost(&[("h1", four), ("h4", four)]);
    // recommender: span_nodes 1.3, span_racks 1.6, span_pods 2.0; 8 GPUs, weight 1.
    let close = |a: f64, b: f64| (a - b).abs() < 1e-9;
    assert!(close(node, 0.0));
    // The NVL72 domain runs at the tray's NVLink bandwidth: no node-span cost.
    assert!(close(domain, 0.0));
    assert!(close(rack, 8.0 * 0.3), "{rack}");
    assert!(close(pod, 8.0 * (0.3 + 0.6)), "{pod}");
    assert!(close(cluster, 8.0 * (0.3 + 0.6 + 1.0)), "{cluster}");
    assert!(node <= domain && domain < rack && rack < pod && pod < cluster);
    // A split across the L40S sockets costs split_island (1.3) - 1 per split node.
    let split = spread_penalty(
        &topo.span(&inst, &gang(&inst, &[("l1", &[1, 2])])),
        1,
        2,
        &s,
        1.0,
    );
    assert!(close(split, 2.0 * 0.3), "{split}");
}

#[test]
fn gpu_indices_on_a_pcie_pair_node() {
    let inst = cluster();
    let topo = Topology::new(&inst);
    let f = &topo.fabric[inst.node_by_name["a1"]];
    let all: Vec<u32> = (0..8).collect();
    assert_eq!(choose_on(f, &all, 2).unwrap(), vec![0, 1]);
    // Best fit: a whole pair, not GPU 1 left alone with a partner of another pair.
    assert_eq!(choose_on(f, &[1, 2, 3, 4, 5, 6, 7], 2).unwrap(), vec![2, 3]);
    assert_eq!(choose_on(f, &all, 4).unwrap(), vec![0, 1, 2, 3]);
    // Socket 0 offers only two unpaired GPUs: the four come from socket 1's two pairs.
    assert_eq!(
        choose_on(f, &[0, 2, 4, 5, 6, 7], 4).unwrap(),
        vec![4, 5, 6, 7]
    );
    assert!(f.split(&[0, 2]));
    assert!(!f.split(&[0, 1, 2, 3]));
    // Two pairs on two sockets: the PCIe traffic crosses the socket link it need not.
    assert!(f.split(&[0, 1, 4, 5]));
    assert_eq!(choose_on(f, &all, 9), None);
}

#[test]
fn gpu_indices_on_a_numa_split_node() {
    let inst = cluster();
    let topo = Topology::new(&inst);
    let f = &topo.fabric[inst.node_by_name["l1"]];
    assert_eq!(choose_on(f, &[0, 1, 2, 3], 2).unwrap(), vec![0, 1]);
    // GPUs 1 and 2 sit on two sockets; 2 and 3 share one.
    assert_eq!(choose_on(f, &[1, 2, 3], 2).unwrap(), vec![2, 3]);
    assert_eq!(choose_on(f, &[1, 2], 2).unwrap(), vec![1, 2]);
    assert!(f.split(&[1, 2]));
    assert!(!f.split(&[2, 3]));
    assert!(!f.split(&[0, 1, 2, 3]));
    assert_eq!(topo.largest_island[inst.node_by_name["l1"]], 1);
}
