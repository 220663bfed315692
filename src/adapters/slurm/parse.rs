//! Reading Slurm's output. `squeue --json` and `sinfo --json` (22.05; numbers written either
//! plain or as 23.x's `{"set": .., "number": ..}` objects) give jobs and nodes; partitions and
//! the switch tree are text only in 22.05 (`scontrol -o show partition`,
//! `scontrol show topology`).

use super::cli::SlurmCli;
use super::hostlist;
use super::site::SitePolicy;
use super::SlurmError;
use serde::{Deserialize, Deserializer};
use serde_json::Value;
use std::collections::BTreeMap;

/// One job as `squeue --json` shows it (the fields the planner reads).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SlurmJob {
    /// Job id.
    pub id: u64,
    /// Job name.
    pub name: String,
    /// `PENDING`, `RUNNING`, `COMPLETING`, `COMPLETED`, ...
    pub state: String,
    /// Why it waits (`JobHeldUser` for a held job).
    pub reason: String,
    /// Account (the tenant).
    pub account: String,
    /// Partition.
    pub partition: String,
    /// Nice value (lower runs first).
    pub nice: i64,
    /// Comment (`--comment`).
    pub comment: String,
    /// Admin comment (set by operators; gangplan writes held jobs' reasons there).
    pub admin_comment: String,
    /// QOS.
    pub qos: String,
    /// Nodes asked for (`-N`).
    pub node_count: u32,
    /// Per-node TRES, e.g. `gres:gpu:4`.
    pub tres_per_node: String,
    /// Per-job TRES, e.g. `gres:gpu:8`.
    pub tres_per_job: String,
    /// Per node of the allocation, e.g. `gpu:3(IDX:0-2)`.
    pub gres_detail: Vec<String>,
    /// Allocated nodes, in the order of `gres_detail`.
    pub nodes: Vec<String>,
    /// Submission time (Unix seconds).
    pub submit_time: i64,
    /// Times the job was requeued.
    pub restart_cnt: u32,
    /// Earliest start (Unix seconds; in the future after a requeue).
    pub eligible_time: i64,
    /// Time limit in seconds (`--time`); `None` when unlimited (see [`UNLIMITED_MINUTES`]).
    pub time_limit: Option<i64>,
    /// When a running job's time limit ends it (Unix seconds; 0 when not started).
    pub end_time: i64,
    /// CPUs it asks (all nodes together; 0 when Slurm does not say).
    pub cpus: u32,
    /// Memory it asks per node, MB (`--mem`); `None` when not given per node.
    pub memory_per_node_mb: Option<u64>,
    /// Nodes it must run on (`--nodelist`, or pinned by gangplan or its plugin).
    pub required_nodes: Vec<String>,
}

/// A time limit of this many minutes or more is no limit: 22.05 shows a job without one
/// (`MaxTime=UNLIMITED`, no `--time`) as 525600 minutes (a year), and `INFINITE` and `NO_VAL`
/// as 2^32 - 1 and 2^32 - 2.
pub const UNLIMITED_MINUTES: i64 = 525_600;

impl SlurmJob {
    /// Whether the job is pending with a user hold (`sbatch --hold`, `scontrol uhold`,
    /// `scontrol requeuehold`).
    pub fn is_held(&self) -> bool {
        self.state == "PENDING" && self.reason == "JobHeldUser"
    }
}

/// One node as `sinfo --json` shows it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SlurmNode {
    /// Node name.
    pub name: String,
    /// Base state (`idle`, `mixed`, `allocated`, `down`, ...), lower case.
    pub state: String,
    /// State flags (`DRAIN`, `NOT_RESPONDING`, ...), upper case.
    pub flags: Vec<String>,
    /// GRES, e.g. `gpu:8` or `gpu:h100:8(S:0-1)`.
    pub gres: String,
    /// Partitions the node belongs to.
    pub partitions: Vec<String>,
    /// CPUs of the node and CPUs allocated to jobs (`None` when Slurm does not say).
    pub cpus: Option<(u32, u32)>,
    /// Memory of the node and memory allocated to jobs, MB (`None` when Slurm does not say).
    pub memory_mb: Option<(u64, u64)>,
}

impl SlurmNode {
    /// Whether new work may start on the node: up, and not draining, failing or in maintenance.
    pub fn usable(&self) -> bool {
        let base_ok = matches!(
            self.state.as_str(),
            "idle" | "mixed" | "allocated" | "completing"
        );
        let bad_flag = self.flags.iter().any(|f| {
            matches!(
                f.as_str(),
                "DRAIN"
                    | "DRAINING"
                    | "DRAINED"
                    | "FAIL"
                    | "FAILING"
                    | "MAINT"
                    | "NOT_RESPONDING"
                    | "POWERED_DOWN"
                    | "POWER_DOWN"
                    | "POWERING_DOWN"
                    | "REBOOT_REQUESTED"
                    | "REBOOT_ISSUED"
            )
        });
        base_ok && !bad_flag
    }
}

/// A partition from `scontrol -o show partition`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Partition {
    /// `PriorityTier` (jobs of higher tiers rank higher).
    pub priority_tier: i64,
    /// Nodes of the partition.
    pub nodes: Vec<String>,
    /// `PreemptMode` (`OFF`: its jobs are never preempted), upper case.
    pub preempt_mode: String,
}

/// Where a node sits in the switch tree.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Place {
    /// The lowest-level switch holding the node (its rack).
    pub rack: Option<String>,
    /// The switch one level above the rack (its pod), if any.
    pub pod: Option<String>,
}

/// Everything read from Slurm for one round.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Snapshot {
    /// Every node, in `sinfo` order.
    pub nodes: Vec<SlurmNode>,
    /// Every job `squeue` lists (finished ones included).
    pub jobs: Vec<SlurmJob>,
    /// Partitions by name.
    pub partitions: BTreeMap<String, Partition>,
    /// Rack and pod of each node (empty when there is no topology plugin).
    pub places: BTreeMap<String, Place>,
    /// When the snapshot was taken (Unix seconds).
    pub now: i64,
    /// The site's policy (fair-share, QOS, preemption rule), from slurmdbd where it runs.
    pub site: SitePolicy,
}

impl Snapshot {
    /// Count the completing jobs among `ended` (told by their Epilog,
    /// [`super::epilog`]) as gone: their GPUs are free for the round, as they will be when
    /// their Epilog exits. Running or pending jobs stay as Slurm says. The ids forgotten.
    pub fn forget_ended(&mut self, ended: &std::collections::BTreeSet<String>) -> Vec<String> {
        let mut gone = Vec::new();
        self.jobs.retain(|j| {
            let ending = j.state == "COMPLETING" && ended.contains(&j.id.to_string());
            if ending {
                gone.push(j.id.to_string());
            }
            !ending
        });
        gone
    }

    /// Read the cluster through `cli`: four read-only commands and the site's policy
    /// (`scontrol show config`, and `sshare`, `sacctmgr show qos` where slurmdbd runs), all
    /// issued at once, each on a thread of its own (none depends on another's answer).
    pub fn read(cli: &dyn SlurmCli, now: i64) -> Result<Snapshot, SlurmError> {
        let run = |program: &'static str, args: &'static [&'static str]| {
            move || {
                cli.run(
                    program,
                    &args.iter().map(|a| a.to_string()).collect::<Vec<_>>(),
                )
            }
        };
        let (squeue, sinfo, parts, topo, site) = std::thread::scope(|s| {
            let squeue = s.spawn(run("squeue", &["--json"]));
            let sinfo = s.spawn(run("sinfo", &["--json"]));
            let parts = s.spawn(run("scontrol", &["-o", "show", "partition"]));
            let topo = s.spawn(run("scontrol", &["show", "topology"]));
            let site = SitePolicy::read(cli);
            (
                joined(squeue),
                joined(sinfo),
                joined(parts),
                joined(topo),
                site,
            )
        });
        // A cluster without topology/tree answers with an error or nothing: no racks then.
        let topo = topo.unwrap_or_default();
        Ok(Snapshot {
            jobs: parse_squeue(&squeue?)?,
            nodes: parse_sinfo(&sinfo?)?,
            partitions: parse_partitions(&parts?)?,
            places: parse_topology(&topo)?,
            now,
            site,
        })
    }
}

/// The result of a scoped thread; a panic in it goes on in the caller.
fn joined<T>(handle: std::thread::ScopedJoinHandle<'_, T>) -> T {
    handle
        .join()
        .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
}

/// A number written plain, as a string, as `{"set": bool, "number": n}` (23.x), or null.
fn num(v: &Value) -> Option<i64> {
    match v {
        Value::Number(n) => n.as_i64().or_else(|| n.as_u64().map(|u| u as i64)),
        Value::String(s) => s.parse().ok(),
        Value::Object(o) => {
            if o.get("set").and_then(Value::as_bool) == Some(false)
                || o.get("infinite").and_then(Value::as_bool) == Some(true)
            {
                return None;
            }
            o.get("number").and_then(num)
        }
        _ => None,
    }
}

/// A string, or the first of a list of strings (23.x writes states as lists).
fn text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Array(a) => a.first().map(text).unwrap_or_default(),
        Value::Number(n) => n.to_string(),
        _ => String::new(),
    }
}

fn strings(v: &Value) -> Vec<String> {
    match v {
        Value::Array(a) => a.iter().map(text).filter(|s| !s.is_empty()).collect(),
        Value::String(s) if !s.is_empty() => s.split(',').map(str::to_string).collect(),
        _ => Vec::new(),
    }
}

#[derive(Deserialize)]
struct Envelope {
    #[serde(default, deserialize_with = "null_vec")]
    jobs: Vec<Value>,
    #[serde(default, deserialize_with = "null_vec")]
    nodes: Vec<Value>,
    #[serde(default, deserialize_with = "null_vec")]
    errors: Vec<Value>,
}

fn null_vec<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Value>, D::Error> {
    Ok(Option::<Vec<Value>>::deserialize(d)?.unwrap_or_default())
}

fn envelope(text_in: &str, what: &str) -> Result<Envelope, SlurmError> {
    let env: Envelope = serde_json::from_str(text_in).map_err(|e| SlurmError::Parse {
        what: what.into(),
        message: e.to_string(),
    })?;
    if let Some(e) = env.errors.first() {
        return Err(SlurmError::Parse {
            what: what.into(),
            message: format!("Slurm reported an error: {e}"),
        });
    }
    Ok(env)
}

/// Parse `squeue --json`.
pub fn parse_squeue(s: &str) -> Result<Vec<SlurmJob>, SlurmError> {
    let env = envelope(s, "squeue --json")?;
    let mut jobs = Vec::with_capacity(env.jobs.len());
    for (i, j) in env.jobs.iter().enumerate() {
        let id = num(&j["job_id"])
            .filter(|&v| v > 0)
            .ok_or_else(|| SlurmError::Parse {
                what: "squeue --json".into(),
                message: format!("jobs[{i}] has no job_id"),
            })?;
        let mut nodes: Vec<String> = j["job_resources"]["allocated_nodes"]
            .as_array()
            .map(|a| a.iter().map(|n| text(&n["nodename"])).collect())
            .unwrap_or_default();
        if nodes.is_empty() {
            nodes = hostlist::expand(&text(&j["nodes"]))?;
        }
        jobs.push(SlurmJob {
            id: id as u64,
            name: text(&j["name"]),
            state: text(&j["job_state"]).to_ascii_uppercase(),
            reason: text(&j["state_reason"]),
            account: text(&j["account"]),
            partition: text(&j["partition"]),
            nice: num(&j["nice"]).unwrap_or(0),
            comment: text(&j["comment"]),
            admin_comment: text(&j["admin_comment"]),
            qos: text(&j["qos"]),
            node_count: num(&j["node_count"]).unwrap_or(1).clamp(1, u32::MAX as i64) as u32,
            tres_per_node: text(&j["tres_per_node"]),
            tres_per_job: text(&j["tres_per_job"]),
            gres_detail: strings(&j["gres_detail"]),
            nodes,
            submit_time: num(&j["submit_time"]).unwrap_or(0),
            restart_cnt: num(&j["restart_cnt"]).unwrap_or(0).max(0) as u32,
            eligible_time: num(&j["eligible_time"]).unwrap_or(0),
            time_limit: num(&j["time_limit"])
                .filter(|&m| m > 0 && m < UNLIMITED_MINUTES)
                .map(|m| m * 60),
            end_time: num(&j["end_time"]).unwrap_or(0),
            cpus: num(&j["cpus"]).unwrap_or(0).clamp(0, u32::MAX as i64) as u32,
            memory_per_node_mb: num(&j["memory_per_node"])
                .filter(|&m| m >= 0)
                .map(|m| m as u64),
            // Only read for jobs gangplan pinned: a list it cannot expand is left empty.
            required_nodes: hostlist::expand(&text(&j["required_nodes"])).unwrap_or_default(),
        });
    }
    Ok(jobs)
}

/// Parse `sinfo --json`. A node listed several times (once per partition) is kept once.
pub fn parse_sinfo(s: &str) -> Result<Vec<SlurmNode>, SlurmError> {
    let env = envelope(s, "sinfo --json")?;
    let mut nodes: Vec<SlurmNode> = Vec::new();
    for n in &env.nodes {
        let name = text(&n["name"]);
        if name.is_empty() || nodes.iter().any(|x| x.name == name) {
            continue;
        }
        let state_v = &n["state"];
        let mut flags: Vec<String> = strings(&n["state_flags"]);
        // 23.x: state is a list, base state first, flags after.
        if let Value::Array(a) = state_v {
            flags.extend(a.iter().skip(1).map(text));
        }
        nodes.push(SlurmNode {
            name,
            state: text(state_v).to_ascii_lowercase(),
            flags: flags.into_iter().map(|f| f.to_ascii_uppercase()).collect(),
            gres: text(&n["gres"]),
            partitions: strings(&n["partitions"]),
            cpus: used_of(n, "cpus", "alloc_cpus")
                .map(|(c, a)| (c.min(u32::MAX as u64) as u32, a.min(u32::MAX as u64) as u32)),
            memory_mb: used_of(n, "real_memory", "alloc_memory"),
        });
    }
    Ok(nodes)
}

/// A node's capacity and what jobs hold of it, from two fields of `sinfo --json` (`None` when
/// the capacity is missing; a missing allocation counts as 0).
fn used_of(n: &Value, capacity: &str, allocated: &str) -> Option<(u64, u64)> {
    let cap = num(&n[capacity]).filter(|&c| c >= 0)?;
    let used = num(&n[allocated]).unwrap_or(0).clamp(0, cap);
    Some((cap as u64, used as u64))
}

/// `key=value` tokens of one `-o` line (values never contain spaces in these records).
fn fields(line: &str) -> BTreeMap<&str, &str> {
    line.split_whitespace()
        .filter_map(|t| t.split_once('='))
        .collect()
}

/// Parse `scontrol -o show partition`.
pub fn parse_partitions(s: &str) -> Result<BTreeMap<String, Partition>, SlurmError> {
    let mut out = BTreeMap::new();
    for line in s.lines().filter(|l| l.starts_with("PartitionName=")) {
        let f = fields(line);
        let name = f.get("PartitionName").copied().unwrap_or_default();
        let nodes = match f.get("Nodes").copied() {
            None | Some("(null)") => Vec::new(),
            Some(list) => hostlist::expand(list)?,
        };
        let priority_tier = f
            .get("PriorityTier")
            .and_then(|v| v.parse().ok())
            .unwrap_or(1);
        out.insert(
            name.to_string(),
            Partition {
                priority_tier,
                nodes,
                preempt_mode: f
                    .get("PreemptMode")
                    .copied()
                    .unwrap_or_default()
                    .to_ascii_uppercase(),
            },
        );
    }
    Ok(out)
}

/// Parse `scontrol show topology`: a node's rack is the level-0 switch holding it, its pod the
/// switch whose `Switches=` lists that rack.
pub fn parse_topology(s: &str) -> Result<BTreeMap<String, Place>, SlurmError> {
    let mut places: BTreeMap<String, Place> = BTreeMap::new();
    let mut parent: BTreeMap<String, String> = BTreeMap::new();
    let mut leaves: Vec<(String, Vec<String>)> = Vec::new();
    for line in s
        .lines()
        .filter(|l| l.trim_start().starts_with("SwitchName="))
    {
        let f = fields(line);
        let name = f.get("SwitchName").copied().unwrap_or_default().to_string();
        if let Some(children) = f.get("Switches") {
            for c in hostlist::expand(children)? {
                parent.entry(c).or_insert_with(|| name.clone());
            }
        }
        if f.get("Level").copied() == Some("0") {
            if let Some(nodes) = f.get("Nodes") {
                leaves.push((name, hostlist::expand(nodes)?));
            }
        }
    }
    for (rack, nodes) in leaves {
        for n in nodes {
            places.entry(n).or_insert_with(|| Place {
                rack: Some(rack.clone()),
                pod: parent.get(&rack).cloned(),
            });
        }
    }
    Ok(places)
}

/// One `gpu` entry of a GRES string: optional type and count.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GpuGres {
    /// GPU type (`gpu:h100:8` -> `h100`).
    pub gpu_type: Option<String>,
    /// Count.
    pub count: u32,
    /// GPU indices, where the string gives them (`IDX:0-2,5`).
    pub indices: Option<Vec<u32>>,
}

/// Split at commas outside parentheses.
fn split_outside_parens(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut depth, mut start) = (0i32, 0usize);
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                out.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&s[start..]);
    out
}

/// The GPU entries of a GRES or TRES string (`gpu:8`, `gpu:h100:4(S:0),gpu:a100:4(S:1)`,
/// `gres:gpu:4`, `gres/gpu:4`, `gpu:3(IDX:0-2)`). Other GRES (`mps`, ...) are skipped.
pub fn gpu_gres(s: &str) -> Result<Vec<GpuGres>, SlurmError> {
    let bad = |m: String| SlurmError::Parse {
        what: "GRES".into(),
        message: format!("{s:?}: {m}"),
    };
    let mut out = Vec::new();
    for item in split_outside_parens(s) {
        let item = item.trim();
        let item = item
            .strip_prefix("gres:")
            .or_else(|| item.strip_prefix("gres/"))
            .unwrap_or(item);
        let (head, paren) = match item.find('(') {
            Some(p) => (&item[..p], Some(item[p + 1..].trim_end_matches(')'))),
            None => (item, None),
        };
        let parts: Vec<&str> = head.split(':').collect();
        if parts.first() != Some(&"gpu") {
            continue;
        }
        let (gpu_type, count) = match parts.as_slice() {
            ["gpu"] => (None, 1),
            ["gpu", c] if c.parse::<u32>().is_ok() => (None, c.parse().unwrap_or(0)),
            ["gpu", t] => (Some(t.to_string()), 1),
            ["gpu", t, c] => (
                Some(t.to_string()),
                c.parse().map_err(|_| bad(format!("bad count {c:?}")))?,
            ),
            _ => return Err(bad("unexpected form".into())),
        };
        let indices = match paren.and_then(|p| p.split_once("IDX:")) {
            Some((_, idx)) if idx != "N/A" => Some(index_list(idx).map_err(bad)?),
            _ => None,
        };
        out.push(GpuGres {
            gpu_type,
            count,
            indices,
        });
    }
    Ok(out)
}

/// `0-2,5` -> [0, 1, 2, 5].
fn index_list(s: &str) -> Result<Vec<u32>, String> {
    let mut out = Vec::new();
    for item in s.split(',').map(str::trim).filter(|i| !i.is_empty()) {
        let (a, b) = item.split_once('-').unwrap_or((item, item));
        let a: u32 = a.parse().map_err(|_| format!("bad index {item:?}"))?;
        let b: u32 = b.parse().map_err(|_| format!("bad index {item:?}"))?;
        if a > b || b > 4096 {
            return Err(format!("bad index range {item:?}"));
        }
        out.extend(a..=b);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gres_forms() {
        let g = gpu_gres("gpu:8(S:0-1)").unwrap();
        assert_eq!((g[0].gpu_type.clone(), g[0].count), (None, 8));
        let g = gpu_gres("gres:gpu:h100:4").unwrap();
        assert_eq!((g[0].gpu_type.as_deref(), g[0].count), (Some("h100"), 4));
        let g = gpu_gres("gpu:3(IDX:0-1,5),mps:100(IDX:0)").unwrap();
        assert_eq!(g.len(), 1);
        assert_eq!(g[0].indices, Some(vec![0, 1, 5]));
        assert!(gpu_gres("").unwrap().is_empty());
        assert!(gpu_gres("gpu:a:b:c").is_err());
        assert!(gpu_gres("gpu:2(IDX:3-1)").is_err());
    }

    #[test]
    fn numbers_plain_and_wrapped() {
        assert_eq!(num(&serde_json::json!(5)), Some(5));
        assert_eq!(num(&serde_json::json!({"set": true, "number": 7})), Some(7));
        assert_eq!(num(&serde_json::json!({"set": false, "number": 0})), None);
        assert_eq!(num(&Value::Null), None);
    }

    #[test]
    fn topology_racks_and_pods() {
        let t = "SwitchName=rack1 Level=0 LinkSpeed=1 Nodes=node[1-2]\n\
                 SwitchName=rack2 Level=0 LinkSpeed=1 Nodes=node[3-4]\n\
                 SwitchName=spine Level=1 LinkSpeed=1 Nodes=node[1-4] Switches=rack[1-2]\n";
        let p = parse_topology(t).unwrap();
        assert_eq!(p["node3"].rack.as_deref(), Some("rack2"));
        assert_eq!(p["node1"].pod.as_deref(), Some("spine"));
        assert_eq!(p.len(), 4);
    }

    #[test]
    fn only_completing_jobs_told_ended_are_forgotten() {
        let job = |id: u64, state: &str| SlurmJob {
            id,
            state: state.into(),
            ..Default::default()
        };
        let mut snap = Snapshot {
            jobs: vec![
                job(1, "COMPLETING"),
                job(2, "RUNNING"),
                job(3, "COMPLETING"),
            ],
            ..Default::default()
        };
        let ended = ["1", "2", "9"].iter().map(|s| s.to_string()).collect();
        assert_eq!(snap.forget_ended(&ended), vec!["1".to_string()]);
        let left: Vec<u64> = snap.jobs.iter().map(|j| j.id).collect();
        assert_eq!(left, vec![2, 3], "a running job told ended keeps its GPUs");
    }

    #[test]
    fn squeue_errors_are_reported() {
        let e = parse_squeue(r#"{"errors": [{"error": "boom"}], "jobs": []}"#).unwrap_err();
        assert!(e.to_string().contains("boom"));
        assert!(parse_squeue("not json").is_err());
    }
}
