//! The instance file as written (SPEC.md "Instance"), before any check.
//!
//! Every struct denies unknown fields: a typo must not be silently ignored.
//! Numbers are read wide (u64/i64/f64) so that range checks in
//! [`super::validate`] can name the field, the value and the allowed range.

use serde::de::{Deserializer, Error as _, MapAccess, Visitor};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::marker::PhantomData;

/// The whole instance document.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RawInstance {
    /// Nodes of the cluster (required, non-empty).
    pub nodes: Vec<RawNode>,
    /// Tenants; absent means one tenant `default` with weight 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenants: Option<Vec<RawTenant>>,
    /// Jobs holding GPUs now.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub running: Vec<RawRunning>,
    /// Jobs waiting to start.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pending: Vec<RawPending>,
    /// Planning policy; every field has a default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy: Option<RawPolicy>,
}

/// One node.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RawNode {
    /// Unique node name.
    #[serde(deserialize_with = "required_text")]
    pub name: String,
    /// GPU count (may come from `model`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpus: Option<u64>,
    /// Hardware model name (`models/hardware/<model>.yaml`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// GPU type (may come from `model`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_type: Option<String>,
    /// Rack (leaf switch); nodes without a rack share one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rack: Option<String>,
    /// Pod (spine group of racks).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod: Option<String>,
    /// GPU indices out of service.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub down: Vec<u64>,
    /// CPU capacity in thousandths of a CPU.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_milli: Option<u64>,
    /// Memory capacity in MiB.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_mib: Option<u64>,
    /// Extension: nodes naming the same `nvlink_domain` share one rack-scale NVLink fabric
    /// (GB200 NVL72 trays). A gang spread over such nodes pays no node-span cost.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nvlink_domain: Option<String>,
}

/// One tenant.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RawTenant {
    /// Tenant name.
    #[serde(deserialize_with = "required_text")]
    pub name: String,
    /// Fair-share weight (> 0).
    #[serde(default = "one")]
    pub weight: f64,
    /// Hard cap on GPUs held after the round.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quota: Option<u64>,
}

fn one() -> f64 {
    1.0
}

/// A running job.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RawRunning {
    /// Unique job id.
    #[serde(deserialize_with = "required_text")]
    pub id: String,
    /// Tenant name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    /// Priority (higher is more important).
    #[serde(default)]
    pub priority: i64,
    /// Whether the job may be preempted.
    #[serde(default)]
    pub preemptible: bool,
    /// Work lost if preempted now, GPU-seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoint_cost: Option<f64>,
    /// GPUs held, per node.
    #[serde(default, deserialize_with = "unique_keys")]
    pub gpus: BTreeMap<String, Vec<u64>>,
    /// Share of one GPU for a sharing job (1..999).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_milli: Option<u64>,
    /// CPU total for the job.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_milli: Option<u64>,
    /// Memory total for the job.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_mib: Option<u64>,
    /// Extension: seconds until the job ends (from its time limit); absent: unknown, planned
    /// as never ending.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ends_in: Option<f64>,
}

/// `gpu_type` of a pending job: one type or a list of acceptable types.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(untagged)]
pub enum GpuTypes {
    /// One acceptable type.
    One(String),
    /// Several acceptable types.
    Many(Vec<String>),
}

impl GpuTypes {
    /// The acceptable types as a list.
    pub fn to_vec(&self) -> Vec<String> {
        match self {
            GpuTypes::One(t) => vec![t.clone()],
            GpuTypes::Many(v) => v.clone(),
        }
    }
}

/// A pending job.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RawPending {
    /// Unique job id.
    #[serde(deserialize_with = "required_text")]
    pub id: String,
    /// Tenant name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    /// Gang size.
    pub gpus: u64,
    /// Priority.
    #[serde(default)]
    pub priority: i64,
    /// Seconds waited so far.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wait: Option<f64>,
    /// Acceptable GPU types.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_type: Option<GpuTypes>,
    /// Hard locality: node | rack | pod.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub within: Option<String>,
    /// Hard cap on nodes spanned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_nodes: Option<u64>,
    /// Fixed GPUs on every node used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpus_per_node: Option<u64>,
    /// Communication profile name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workload: Option<String>,
    /// Share of one GPU (1..999) for a sharing 1-GPU job.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_milli: Option<u64>,
    /// CPU total.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_milli: Option<u64>,
    /// Memory total.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_mib: Option<u64>,
    /// Extension: the job's time limit in seconds (it ends at most this long after it
    /// starts); absent: no limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_limit: Option<f64>,
}

/// The policy block.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RawPolicy {
    /// Seconds for the whole solve, fallback included.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_limit: Option<f64>,
    /// Relative MIP gap at which the solve stops.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mip_gap: Option<f64>,
    /// Objective weights by name (see `Weights`).
    #[serde(
        default,
        skip_serializing_if = "BTreeMap::is_empty",
        deserialize_with = "unique_keys"
    )]
    pub weights: BTreeMap<String, f64>,
    /// Extension: allow preemption this round (default true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preemption: Option<bool>,
    /// Extension: solver random seed (default 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// Extension: the most blocked jobs reserved for per round, 0..=64 (default 1). Read as a
    /// signed number so that a negative one is refused with the allowed range.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reservations: Option<i64>,
    /// Extension: the task distribution the greedy measures fragmentation against when it
    /// chooses a node for a one-node job (absent: best fit).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_distribution: Option<Vec<RawTaskType>>,
    /// Extension: score one-node placements against the task distribution as the FGD
    /// artifact does (an integer score, ties to the first node of a random node order drawn
    /// from this seed); needs `task_distribution`. Written into the rounds `simulate
    /// --artifact-score --dump-rounds` cuts, so that they plan as in the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifact_score: Option<u64>,
}

/// One task type of `policy.task_distribution`: what one task asks of one node, and its share
/// of the workload (shares are normalised to sum to 1).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RawTaskType {
    /// GPUs per task (1 for a sharer).
    pub gpus: u64,
    /// Share of one GPU (1..999) for a sharing task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_milli: Option<u64>,
    /// CPU per task, thousandths (default 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_milli: Option<u64>,
    /// Memory per task, MiB (default 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_mib: Option<u64>,
    /// Acceptable GPU types (default: any).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_type: Option<GpuTypes>,
    /// Relative frequency (> 0).
    pub share: f64,
}

/// A required name or id. YAML's `~` and `null` (and JSON's null) are refused: a YAML reader
/// asked for a string would otherwise read `name: ~` as the name "~".
fn required_text<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    Option::<String>::deserialize(d)?.ok_or_else(|| {
        D::Error::custom(
            "is null; expected a name (write it in quotes, \"~\", if that is the name)",
        )
    })
}

/// A mapping whose keys must be unique: YAML and JSON parsers keep the last of two equal keys,
/// which would silently drop data (a running job listing one node twice). Used by the maps whose
/// keys are data, in the instance and in the plan (`placements[].gpus`).
pub fn unique_keys<'de, D, V>(d: D) -> Result<BTreeMap<String, V>, D::Error>
where
    D: Deserializer<'de>,
    V: Deserialize<'de>,
{
    struct UniqueKeys<V>(PhantomData<V>);
    impl<'de, V: Deserialize<'de>> Visitor<'de> for UniqueKeys<V> {
        type Value = BTreeMap<String, V>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a map")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<Self::Value, A::Error> {
            let mut map = BTreeMap::new();
            while let Some(key) = access.next_key::<String>()? {
                if map.contains_key(&key) {
                    return Err(A::Error::custom(format!(
                        "duplicate entry with key {:?}",
                        super::text::shorten(&key, super::text::ECHO_CHARS)
                    )));
                }
                let value = access.next_value()?;
                map.insert(key, value);
            }
            Ok(map)
        }
    }
    d.deserialize_map(UniqueKeys(PhantomData))
}
