//! Replicas of a round: K copies of one cluster state side by side, as one round.
//!
//! A round of a few dozen nodes can be solved exactly (the per-node model); one of thousands
//! cannot, so its plan's distance from the optimum is unknown and its gap mixes what the plan
//! loses with what the bound over-counts. K copies of a small round, every node, rack, pod,
//! NVLink domain and job renamed per copy (`NAME~cK`) and each tenant's quota K times its own,
//! make a large round with a plan known in advance: the small round's best plan in every copy
//! ([`replicate_assignment`]). That plan is a valid plan of the copies (the caller validates
//! it), so its objective is a lower bound on their optimum; the optimum may be higher, since a
//! gang may take GPUs of two copies. `gangplan bench --replicas K` prints a plan's objective
//! against it: a ratio below 1 is a loss of the plan, proven, that no bound shows.
//!
//! Nodes without a rack get a rack of their copy (`~cK`), so that no rack holds nodes of two
//! copies; nodes without a pod stay in the one unnamed pod, which only adds options.
//! `policy.reservations` is K times the round's (at most 64).

use crate::assignment::{Assignment, GpuSet};
use crate::instance::policy::MAX_RESERVATIONS;
use crate::instance::raw::RawInstance;
use crate::instance::Instance;

/// A name in copy `c`.
pub fn copy_name(name: &str, c: usize) -> String {
    format!("{name}~c{c}")
}

/// K copies of `round` as one round (see the module's doc): nodes, running and pending jobs
/// in copy order, each copy in the round's order.
pub fn replicate(round: &RawInstance, k: usize) -> RawInstance {
    let mut out = RawInstance {
        tenants: round.tenants.clone(),
        policy: round.policy.clone(),
        ..RawInstance::default()
    };
    for tenant in out.tenants.iter_mut().flatten() {
        tenant.quota = tenant.quota.map(|q| q.saturating_mul(k as u64));
    }
    if let Some(r) = out.policy.as_mut().and_then(|p| p.reservations.as_mut()) {
        *r = r
            .saturating_mul(k as i64)
            .min(MAX_RESERVATIONS as i64)
            .max(*r);
    }
    for c in 0..k {
        out.nodes.extend(round.nodes.iter().map(|n| {
            let mut n = n.clone();
            n.name = copy_name(&n.name, c);
            n.rack = Some(copy_name(n.rack.as_deref().unwrap_or(""), c));
            n.pod = n.pod.as_deref().map(|p| copy_name(p, c));
            n.nvlink_domain = n.nvlink_domain.as_deref().map(|d| copy_name(d, c));
            n
        }));
        out.running.extend(round.running.iter().map(|r| {
            let mut r = r.clone();
            r.id = copy_name(&r.id, c);
            r.gpus = r
                .gpus
                .into_iter()
                .map(|(n, g)| (copy_name(&n, c), g))
                .collect();
            r
        }));
        out.pending.extend(round.pending.iter().map(|p| {
            let mut p = p.clone();
            p.id = copy_name(&p.id, c);
            p
        }));
    }
    out
}

/// `plan` of `round` in each of the K copies of [`replicate`] (as loaded into an
/// [`Instance`], whose lists keep the document's order).
pub fn replicate_assignment(round: &Instance, plan: &Assignment, k: usize) -> Assignment {
    let (nodes, running, pending) = (round.nodes.len(), round.running.len(), round.pending.len());
    let mut out = Assignment::default();
    for c in 0..k {
        for (&j, gpus) in &plan.placed {
            let moved: GpuSet = gpus
                .iter()
                .map(|(&n, g)| (c * nodes + n, g.clone()))
                .collect();
            out.placed.insert(c * pending + j, moved);
        }
        out.preempted
            .extend(plan.preempted.iter().map(|&r| c * running + r));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{copy_name, replicate, replicate_assignment};
    use crate::gen::{generate, Family, GenParams};
    use crate::hardware::ModelLibrary;
    use crate::instance::load::parse_instance;
    use crate::objective::evaluate;
    use crate::plan::validate::check_assignment;
    use crate::topology::Topology;

    #[test]
    fn copies_of_a_plan_are_a_valid_plan_of_the_copies_worth_k_times_as_much() {
        let lib = ModelLibrary::builtin();
        for family in [
            Family::Quotas,
            Family::Sharers,
            Family::NvlinkRacks,
            Family::Mixed,
        ] {
            let p = GenParams {
                nodes: 12,
                pending: 30,
                seed: 3,
                family,
                ..Default::default()
            };
            let raw = generate(&p);
            let load =
                |raw| parse_instance(&serde_json::to_string(raw).unwrap(), "round", &lib).unwrap();
            let (small, copies) = (load(&raw), load(&replicate(&raw, 3)));
            assert_eq!(
                copies.pending[2 * 30 + 7].id,
                copy_name(&small.pending[7].id, 2)
            );
            let topo = Topology::new(&small);
            let plan = crate::heuristics::greedy::portfolio(&small, &topo, None);
            assert!(
                !plan.placed.is_empty(),
                "{family:?}: the greedy starts jobs"
            );
            let tripled = replicate_assignment(&small, &plan, 3);
            check_assignment(&copies, &tripled).unwrap_or_else(|e| panic!("{family:?}: {e}"));
            let one = evaluate(&small, &topo, &plan).total();
            let three = evaluate(&copies, &Topology::new(&copies), &tripled).total();
            assert!(
                (three - 3.0 * one).abs() <= 1e-6 * three.abs().max(1.0),
                "{family:?}: {three} against 3 x {one}"
            );
        }
    }
}
