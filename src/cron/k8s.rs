//! Kubernetes output: for each placed job, one `v1/Binding` per node of the placement, binding
//! the job's pod for that node to it. Pod naming convention: `<job>-<i>`, `i` = the node's
//! position (0-based) in the placement's sorted node list, the job id lowered to a DNS-1123
//! label (characters other than `a-z0-9-` become `-`). Annotations carry the job id and the
//! planned GPU indices (`gangplan.io/job`, `gangplan.io/gpus`) for a device plugin to honour.
//! The documents are printed as one multi-document YAML stream (`---` between objects).

use crate::plan::Plan;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// `metadata` of a Binding.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Metadata {
    /// Pod name.
    pub name: String,
    /// Namespace of the pod.
    pub namespace: String,
    /// gangplan annotations.
    pub annotations: BTreeMap<String, String>,
}

/// `target` of a Binding: the node.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Target {
    /// `v1`.
    pub api_version: String,
    /// `Node`.
    pub kind: String,
    /// Node name.
    pub name: String,
}

/// A `v1/Binding` object.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Binding {
    /// `v1`.
    pub api_version: String,
    /// `Binding`.
    pub kind: String,
    /// Pod name and namespace.
    pub metadata: Metadata,
    /// The node.
    pub target: Target,
}

/// Whether `s` is a DNS-1123 label (`[a-z0-9]([-a-z0-9]*[a-z0-9])?`, at most 63 characters).
pub fn is_dns_label(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 63
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !s.starts_with('-')
        && !s.ends_with('-')
}

/// Whether `s` is a DNS-1123 subdomain (dot-separated labels, at most 253 characters).
pub fn is_dns_subdomain(s: &str) -> bool {
    s.len() <= 253 && s.split('.').all(is_dns_label)
}

/// A job id as the stem of a pod name (a DNS-1123 label leaving room for `-<i>`).
pub fn pod_stem(job: &str) -> String {
    let mut s: String = job
        .chars()
        .map(|c| {
            let c = c.to_ascii_lowercase();
            if c.is_ascii_lowercase() || c.is_ascii_digit() {
                c
            } else {
                '-'
            }
        })
        .collect();
    s.truncate(56);
    let s = s.trim_matches('-').to_string();
    if s.is_empty() {
        "job".into()
    } else {
        s
    }
}

/// The Bindings of a plan, or the first node name Kubernetes would reject.
pub fn bindings(plan: &Plan, namespace: &str) -> Result<Vec<Binding>, String> {
    if !is_dns_label(namespace) {
        return Err(format!("namespace {namespace:?} is not a DNS-1123 label"));
    }
    let mut out = Vec::new();
    for p in &plan.placements {
        let stem = pod_stem(&p.job);
        for (i, (node, gpus)) in p.gpus.iter().enumerate() {
            if !is_dns_subdomain(node) {
                return Err(format!(
                    "node {node:?} (job {}) is not a valid Kubernetes node name",
                    p.job
                ));
            }
            let idx: Vec<String> = gpus.iter().map(u32::to_string).collect();
            out.push(Binding {
                api_version: "v1".into(),
                kind: "Binding".into(),
                metadata: Metadata {
                    name: format!("{stem}-{i}"),
                    namespace: namespace.into(),
                    annotations: BTreeMap::from([
                        ("gangplan.io/job".to_string(), p.job.clone()),
                        ("gangplan.io/gpus".to_string(), idx.join(",")),
                    ]),
                },
                target: Target {
                    api_version: "v1".into(),
                    kind: "Node".into(),
                    name: node.clone(),
                },
            });
        }
    }
    Ok(out)
}

/// The Bindings as one YAML stream.
pub fn to_yaml(bindings: &[Binding]) -> Result<String, String> {
    let mut out = String::new();
    for b in bindings {
        out.push_str("---\n");
        out.push_str(&serde_yaml::to_string(b).map_err(|e| e.to_string())?);
    }
    Ok(out)
}
