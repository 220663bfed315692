//! The nodes a large round's relaxation looks at.
//!
//! The relaxation ([`super::relax`]) has columns per eligible node and per job holding GPUs
//! there; on a round of ten thousand nodes HiGHS does not solve it in its time (measured: a
//! 12,500-node round gave up after 10 s, where 1,250 nodes took 0.1-2.3 s). Above
//! [`MOST_NODES`] eligible nodes the model is built over a few candidate nodes: those where an
//! estimate finds the job's GPUs cheapest. The cost of k GPUs on node n takes its free GPUs
//! at no cost, then the jobs holding GPUs there, the cheapest per GPU they free on n first
//! (each at the relaxation's price for the whole job, the change it would make), then added
//! GPUs at their price, in the families the solve allows. A node is ranked by its cheapest
//! price per GPU over the counts the job could take there:
//!
//! ```text
//! want_n = gpus_per_node, or min(g, usable_n)      (at least 1)
//! least  = gpus_per_node, or ceil(g / node limit)  (at most want_n)
//! est_n  = min_{least <= k <= want_n} cost_n(k) / k
//! ```
//!
//! so a node with free GPUs costs nothing for a job that may spread over many nodes, and a
//! node is priced by its whole share for a job that must sit on few. Where the tenant's
//! quota lacks room for the job, a job of the tenant counts at half its price: stopping it
//! frees quota too.
//!
//! A job that must sit in one rack or pod (`within`) ranks each domain by the cost of its
//! cheapest nodes (ascending est_n) until they hold g GPUs, at most the job's node limit of
//! them, and looks at the nodes of the [`DOMAINS`] cheapest domains ([`NODES`] at most
//! each, cheapest first); any other job at the [`NODES`] cheapest nodes, more while they hold
//! fewer than twice its GPUs. Every node a candidate keeps is modelled exactly, so each
//! answer is a real change; a cheaper one on nodes left out is possible, and the explanation
//! says where the search was cut ([`Candidates::note`]).

use crate::instance::{Instance, Locality, PendingJob};
use crate::plan::reasons::{AfterRound, Holder};
use std::collections::BTreeMap;

/// Eligible nodes above which the relaxation looks at candidates only.
pub const MOST_NODES: usize = 2048;
/// Candidate nodes of a job without a rack or pod limit, and the most of each domain.
pub const NODES: usize = 64;
/// Candidate domains of a job that must sit in one rack or pod.
pub const DOMAINS: usize = 4;

/// What a GPU held by a job costs to free: the whole job's price in the relaxation, or
/// `None` where its family of change is not allowed in this solve.
pub trait HolderPrice {
    /// The price of freeing what `holder` holds (the whole job).
    fn price(&self, holder: Holder) -> Option<f64>;
    /// The price of one added GPU, `None` where adding hardware is not allowed.
    fn added_gpu(&self) -> Option<f64>;
}

/// The candidates of one relaxation solve.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidates {
    /// The nodes to model, ascending.
    pub nodes: Vec<usize>,
    /// The eligible nodes there were (more than `nodes` where the search was cut).
    pub eligible: usize,
    /// The tenant's jobs elsewhere whose stop or hold-back would free quota for the job, and
    /// how many of them are modelled ([`cheapest_cover`]).
    pub quota_jobs: (usize, usize),
    /// Whether the solve's time limit stopped it after it found a change (not proven the
    /// cheapest).
    pub unproven: bool,
}

impl Candidates {
    /// Sentences on where the search was cut (none where everything is modelled; the time
    /// limit's is the relaxation's own).
    pub fn notes(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self.nodes.len() < self.eligible {
            out.push(format!(
                "approximate: of the {} nodes the job may use, the relaxation looked at the {} where an estimate finds its GPUs cheapest (free GPUs first, then the cheapest jobs to move); a cheaper change on the others is possible",
                self.eligible,
                self.nodes.len()
            ));
        }
        let (offered, modelled) = self.quota_jobs;
        if modelled < offered {
            out.push(format!(
                "approximate: of the {offered} jobs of the tenant whose stop would free quota for it, the relaxation looked at the {modelled} cheapest per GPU"
            ));
        }
        out
    }
}

/// Jobs whose stop would free quota above which the relaxation looks at the cheapest only.
pub const MOST_QUOTA_JOBS: usize = 2048;
/// Jobs whose stop frees quota modelled at least, where more than [`MOST_QUOTA_JOBS`] are
/// offered.
pub const QUOTA_JOBS: usize = 64;

/// Of `offers` (price, GPUs of quota, what): none where nothing is needed, all of them up to
/// [`MOST_QUOTA_JOBS`], else the cheapest per GPU of quota (price order on ties, then the
/// order given) until they free twice `need` and number at least [`QUOTA_JOBS`].
pub fn cheapest_cover<T>(mut offers: Vec<(f64, f64, T)>, need: f64) -> Vec<(f64, T)> {
    if need <= 0.0 {
        return Vec::new();
    }
    if offers.len() <= MOST_QUOTA_JOBS {
        return offers.into_iter().map(|(p, _, what)| (p, what)).collect();
    }
    let per_gpu = |o: &(f64, f64, T)| o.0 / o.1.max(1e-9);
    offers.sort_by(|a, b| per_gpu(a).total_cmp(&per_gpu(b)).then(a.0.total_cmp(&b.0)));
    let mut freed = 0.0;
    let mut out = Vec::new();
    for (price, gpus, what) in offers {
        if out.len() >= QUOTA_JOBS && freed >= 2.0 * need {
            break;
        }
        freed += gpus;
        out.push((price, what));
    }
    out
}

/// Per node: its least price per GPU over the counts the job could take there, and the most
/// GPUs it could give the job.
type Estimates = BTreeMap<usize, (f64, u32)>;

/// The nodes of `eligible` (ascending) the relaxation of `job` models: all of them up to
/// [`MOST_NODES`], else the cheapest by the estimate above.
pub fn candidates(
    inst: &Instance,
    after: &AfterRound,
    job: &PendingJob,
    eligible: Vec<usize>,
    price: &dyn HolderPrice,
) -> Candidates {
    let count = eligible.len();
    let mut nodes = if count <= MOST_NODES {
        eligible
    } else {
        let est = estimates(after, job, &eligible, price);
        match job.within {
            Some(level @ (Locality::Rack | Locality::Pod)) => {
                in_cheapest_domains(inst, job, level, eligible, &est)
            }
            _ => cheapest_nodes(job, eligible, &est),
        }
    };
    nodes.sort_unstable();
    Candidates {
        nodes,
        eligible: count,
        quota_jobs: (0, 0),
        unproven: false,
    }
}

/// Each eligible node's estimate (the module's est_n) and want_n.
fn estimates(
    after: &AfterRound,
    job: &PendingJob,
    eligible: &[usize],
    price: &dyn HolderPrice,
) -> Estimates {
    let g = job.gpus.max(1);
    let least = job
        .gpus_per_node
        .unwrap_or(g.div_ceil(job.node_limit().max(1)));
    eligible
        .iter()
        .map(|&n| {
            let want = job.gpus_per_node.unwrap_or(g.min(after.usable[n])).max(1);
            let costs = node_costs(after, n, want, price);
            let rate = (least.min(want)..=want)
                .map(|k| costs[k as usize] / k as f64)
                .fold(f64::INFINITY, f64::min);
            (n, (rate, want))
        })
        .collect()
}

/// `nodes` cheapest first by their estimate (index order on ties).
fn by_estimate(nodes: &mut [usize], est: &Estimates) {
    nodes.sort_by(|&a, &b| est[&a].0.total_cmp(&est[&b].0).then(a.cmp(&b)));
}

/// The nodes of the [`DOMAINS`] racks or pods (`level`) whose cheapest nodes hold the job's
/// GPUs for the least ([`domain_cost`]), [`NODES`] at most of each, cheapest first.
fn in_cheapest_domains(
    inst: &Instance,
    job: &PendingJob,
    level: Locality,
    eligible: Vec<usize>,
    est: &Estimates,
) -> Vec<usize> {
    let mut domains: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    for n in eligible {
        let node = &inst.nodes[n];
        let d = if level == Locality::Rack {
            node.rack
        } else {
            node.pod
        };
        domains.entry(d).or_default().push(n);
    }
    let g = job.gpus.max(1);
    let mut ranked: Vec<(f64, usize, Vec<usize>)> = domains
        .into_iter()
        .map(|(d, mut nodes)| {
            by_estimate(&mut nodes, est);
            (domain_cost(&nodes, est, g, job.node_limit()), d, nodes)
        })
        .collect();
    ranked.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    ranked
        .into_iter()
        .take(DOMAINS)
        .flat_map(|(_, _, nodes)| nodes.into_iter().take(NODES))
        .collect()
}

/// The [`NODES`] cheapest nodes, more while they hold fewer than twice the job's GPUs.
fn cheapest_nodes(job: &PendingJob, mut all: Vec<usize>, est: &Estimates) -> Vec<usize> {
    by_estimate(&mut all, est);
    let g = job.gpus.max(1);
    let mut held = 0u32;
    let mut taken = 0usize;
    for &n in &all {
        if taken >= NODES && held >= 2 * g {
            break;
        }
        held += est[&n].1;
        taken += 1;
    }
    all.truncate(taken);
    all
}

/// The estimated cost of a domain's nodes (ascending estimate) holding g GPUs on at most
/// `limit` of them: the sum of their estimates for what each holds; infinite where they
/// cannot.
fn domain_cost(nodes: &[usize], est: &Estimates, g: u32, limit: u32) -> f64 {
    let mut left = g;
    let mut cost = 0.0;
    for &n in nodes.iter().take(limit.max(1) as usize) {
        let (per_gpu, most) = est[&n];
        let take = most.min(left);
        cost += per_gpu * take as f64;
        left -= take;
        if left == 0 {
            return cost;
        }
    }
    f64::INFINITY
}

/// The estimated cost of 0..=k GPUs on node n: its free GPUs, then the holders cheapest per
/// GPU they free there, then added GPUs; infinite where the allowed changes do not reach a
/// count.
fn node_costs(after: &AfterRound, n: usize, k: u32, price: &dyn HolderPrice) -> Vec<f64> {
    let free = after.free[n];
    let mut costs = vec![0.0; k as usize + 1];
    if free >= k {
        return costs;
    }
    let mut on_node: BTreeMap<(u8, usize), u32> = BTreeMap::new();
    for h in &after.holders[n] {
        match *h {
            Holder::Running(j) => *on_node.entry((0, j)).or_default() += 1,
            Holder::Placed(j) => *on_node.entry((1, j)).or_default() += 1,
            _ => {}
        }
    }
    let mut offers: Vec<(f64, u32)> = on_node
        .into_iter()
        .filter_map(|((kind, j), gpus)| {
            let holder = if kind == 0 {
                Holder::Running(j)
            } else {
                Holder::Placed(j)
            };
            price.price(holder).map(|p| (p, gpus))
        })
        .collect();
    offers.sort_by(|a, b| (a.0 / a.1 as f64).total_cmp(&(b.0 / b.1 as f64)));
    // The cheapest way to have `have` GPUs, as offers are taken in turn; a count between two
    // steps costs the step that reaches it, or added GPUs past the last step.
    let mut have = free;
    let mut cost = 0.0;
    let mut offers = offers.into_iter();
    for count in free + 1..=k {
        while have < count {
            let Some((p, gpus)) = offers.next() else {
                break;
            };
            have += gpus;
            cost += p;
        }
        costs[count as usize] = if have >= count {
            cost
        } else {
            price.added_gpu().map_or(f64::INFINITY, |per_gpu| {
                cost + per_gpu * (count - have) as f64
            })
        };
    }
    costs
}

#[cfg(test)]
mod tests {
    use super::{cheapest_cover, domain_cost, QUOTA_JOBS};
    use std::collections::BTreeMap;

    #[test]
    fn a_domain_costs_its_cheapest_nodes_until_they_hold_the_job() {
        let est: BTreeMap<usize, (f64, u32)> = [(0, (0.0, 4)), (1, (1.0, 8)), (2, (2.0, 8))]
            .into_iter()
            .collect();
        // 4 free at 0, then 8 more at 1 per GPU: 12 GPUs cost 8.
        assert_eq!(domain_cost(&[0, 1, 2], &est, 12, 8), 8.0);
        // Two nodes at most: 4 + 8 < 16.
        assert!(domain_cost(&[0, 1, 2], &est, 16, 2).is_infinite());
        assert_eq!(domain_cost(&[0, 1, 2], &est, 16, 3), 8.0 + 2.0 * 4.0);
    }

    #[test]
    fn quota_is_freed_by_the_cheapest_jobs_per_gpu_up_to_twice_the_need() {
        // Job i: price 10 + i for one GPU of quota; job 9999: price 8 for 8 GPUs (1 a GPU).
        let mut offers: Vec<(f64, f64, usize)> =
            (0..3000).map(|i| (10.0 + i as f64, 1.0, i)).collect();
        offers.push((8.0, 8.0, 9999));
        assert!(cheapest_cover(offers.clone(), 0.0).is_empty());
        let kept: Vec<usize> = cheapest_cover(offers.clone(), 4.0)
            .into_iter()
            .map(|k| k.1)
            .collect();
        assert_eq!(kept.len(), QUOTA_JOBS);
        assert_eq!(kept[0], 9999);
        assert_eq!(kept[1..], (0..QUOTA_JOBS - 1).collect::<Vec<_>>()[..]);
        // A large need takes jobs past QUOTA_JOBS until twice it is freed: 8 + 392 = 400.
        assert_eq!(cheapest_cover(offers.clone(), 200.0).len(), 393);
        const { assert!(QUOTA_JOBS < 393) };
        // Few offers are all kept.
        assert_eq!(cheapest_cover(offers[..100].to_vec(), 4.0).len(), 100);
    }

    #[test]
    fn a_node_costs_its_free_gpus_nothing_then_its_cheapest_holders() {
        use super::{node_costs, HolderPrice};
        use crate::plan::reasons::Holder;
        struct Prices;
        impl HolderPrice for Prices {
            fn price(&self, h: Holder) -> Option<f64> {
                match h {
                    Holder::Running(0) => Some(8.0), // 2 GPUs here: 4 a GPU
                    Holder::Running(1) => Some(3.0), // 3 GPUs here: 1 a GPU
                    _ => None,
                }
            }
            fn added_gpu(&self) -> Option<f64> {
                Some(10.0)
            }
        }
        let mut after = crate::plan::reasons::AfterRound::empty_for_tests(1);
        after.holders[0] = [
            vec![Holder::Free; 2],
            vec![Holder::Running(0); 2],
            vec![Holder::Running(1); 3],
        ]
        .concat();
        after.free[0] = 2;
        // 2 free, then job 1 (3 GPUs for 3), then job 0 (2 for 8), then 10 an added GPU.
        assert_eq!(
            node_costs(&after, 0, 9, &Prices),
            [0.0, 0.0, 0.0, 3.0, 3.0, 3.0, 11.0, 11.0, 21.0, 31.0]
        );
    }
}
