//! The placement search: where a job goes in a round state, or nowhere.
//!
//! A CPU-only job, a sharer and a whole-GPU gang that may sit on one node go where the
//! instance's [`NodeScorer`] puts them. A gang that needs several nodes goes to the tightest
//! domain level first (a rack-scale NVLink unit, a rack, a pod, the cluster, as far as
//! `within` allows); inside a domain on the fewest nodes, best fit for the last piece (in a
//! pod or the cluster, also on the fewest pods and racks that hold it, where that spreads it
//! less); among the domains of a level, the lowest spread penalty, then the fewest nodes, the
//! fewest GPUs left free in the domain, the lowest domain index.

use super::nodes::Nodes;
use super::offers::{fewest_groups, holdable_on_limit, pack, piece, Counts, Offer, OfferBoard};
use super::scorer::NodeScorer;
use crate::assignment::GpuSet;
use crate::instance::{Locality, Node, NodeIx, PendingJob};
use crate::round_state::RoundState;
use crate::topology::{spread_penalty, Level, Span, Topology};
use std::cmp::Ordering;

/// How a domain's placement of a gang ranks: spread penalty (islands aside), nodes, GPUs left
/// free in the domain, domain index; lowest first.
type DomainKey = (f64, u32, u32, usize);

/// Where job j would go in this state, or `None`.
pub fn find_placement(state: &RoundState, topo: &Topology, j: usize) -> Option<GpuSet> {
    find_placement_on(state, topo, j, Nodes::All)
}

/// Where job j would go in this state on `nodes` only, or `None`.
pub fn find_placement_on(
    state: &RoundState,
    topo: &Topology,
    j: usize,
    nodes: Nodes,
) -> Option<GpuSet> {
    let inst = state.inst;
    let job = &inst.pending[j];
    let scorer = NodeScorer::of(inst);
    if job.gpus == 0 {
        return scorer.cpu_only(state, job, nodes);
    }
    if job.is_sharer() {
        return scorer.sharer(state, topo, job, nodes);
    }
    let mask = topo.type_mask(job);
    if job.gpus_per_node.is_none_or(|g| g == job.gpus) {
        if let Some(n) = scorer.single_node(state, &mask, job, nodes) {
            return state.pick_indices(j, &[(n, job.gpus)]);
        }
    }
    if job.node_limit() < 2 {
        return None;
    }
    // Where every unit is one node, racks are the first level a gang is searched at, and a
    // rack that holds it ends the search: racks first, each one's nodes looked at only when
    // the search reaches it.
    let racks_first = matches!(nodes, Nodes::All)
        && topo.units == inst.nodes.len()
        && job.within != Some(Locality::Node);
    let mut search = if racks_first {
        let mut racks = GangSearch::racks_only(state, topo, job, &mask);
        if let Some(counts) = racks.best_at(Level::Rack) {
            return state.pick_indices(j, &counts);
        }
        racks.see_the_rest();
        racks
    } else {
        GangSearch::new(state, topo, job, &mask, nodes)
    };
    if search.fitting < job.gpus || !search.within_node_limit {
        return None;
    }
    // No rack holds it, where racks came first.
    let levels = search
        .levels()
        .iter()
        .filter(|&&l| !(racks_first && l == Level::Rack));
    let counts = levels.copied().find_map(|level| search.best_at(level))?;
    state.pick_indices(j, &counts)
}

/// Domain keys in rank order.
fn rank(a: &DomainKey, b: &DomainKey) -> Ordering {
    a.0.total_cmp(&b.0)
        .then((a.1, a.2, a.3).cmp(&(b.1, b.2, b.3)))
}

/// The search for a gang over several nodes, with what one pass over the nodes says of every
/// domain.
struct GangSearch<'s, 'a> {
    state: &'s RoundState<'a>,
    topo: &'s Topology,
    job: &'s PendingJob,
    /// GPU types the job accepts.
    mask: &'s [bool],
    /// GPUs free to the job per domain, at every level (CPU and memory aside).
    reach: [Vec<u32>; 4],
    /// GPUs the job could take per domain with the CPU and memory each node has left, at
    /// every level: a domain with fewer than the gang asks cannot hold it.
    fit_reach: [Vec<u32>; 4],
    /// The most GPUs one node of the domain offers the job with its CPU and memory (capped by
    /// `gpus_per_node`), at every level.
    widest: [Vec<u32>; 4],
    /// The fewest nodes that could hold the gang anywhere.
    fewest_nodes: u32,
    /// Whether every NVLink unit is one node (a domain's fewest nodes then bound its units).
    units_are_nodes: bool,
    /// The fewest NVLink units the gang can span.
    min_units: u32,
    /// GPUs the job could take over the whole cluster with the CPU and memory each node has
    /// left: fewer than the gang asks, and no domain holds it.
    fitting: u32,
    /// Whether the nodes the gang may span could hold it anywhere: with `gpus_per_node`,
    /// enough nodes with room for that many; with fewer nodes allowed than it has GPUs, the
    /// largest pieces that many nodes offer. False, and no domain holds it (every domain's
    /// offers are some of these).
    within_node_limit: bool,
    /// What each node offers the gang (free GPUs 0 where it offers none).
    offer: OfferBoard,
    /// A search of racks alone ([`GangSearch::racks_only`]): which racks' nodes were looked
    /// at so far; `None` where every node was looked at.
    racks_seen: Option<Vec<bool>>,
    /// The most GPUs any node offers the gang, or more (a bound for racks not seen yet).
    widest_at_most: u32,
}

impl<'s, 'a> GangSearch<'s, 'a> {
    fn new(
        state: &'s RoundState<'a>,
        topo: &'s Topology,
        job: &'s PendingJob,
        mask: &'s [bool],
        nodes: Nodes,
    ) -> Self {
        let units_are_nodes = topo.units == state.inst.nodes.len();
        // Where every unit is one node, the unit level holds nothing a single node did not:
        // its per-domain counts are left empty and the level is not searched.
        let domains = |l: usize| {
            if l == Level::Unit as usize && units_are_nodes {
                0
            } else {
                topo.domains[l].len()
            }
        };
        let mut search = GangSearch::empty(state, topo, job, mask, domains);
        let with_whole_gpus: Box<dyn Iterator<Item = NodeIx>> = match nodes {
            Nodes::All => Box::new(state.nodes_with_whole_gpus(mask)),
            Nodes::Only(list) => Box::new(
                list.iter()
                    .copied()
                    .filter(|&n| state.has_whole_gpus(n, mask)),
            ),
        };
        let first_level = usize::from(units_are_nodes);
        for n in with_whole_gpus {
            let Some(o) = search.take_offer(n) else {
                continue;
            };
            let at = [topo.unit_of[n], topo.rack_of[n], topo.pod_of[n], 0];
            for (l, &d) in at.iter().enumerate().skip(first_level) {
                search.count(l, d, o, true);
            }
        }
        search.settle();
        search
    }

    /// A search with nothing counted yet: `domains(level)` domains a level, no node's offer
    /// taken, every node looked at (see [`GangSearch::racks_only`] for a search that is not).
    fn empty(
        state: &'s RoundState<'a>,
        topo: &'s Topology,
        job: &'s PendingJob,
        mask: &'s [bool],
        domains: impl Fn(usize) -> usize,
    ) -> Self {
        let inst = state.inst;
        let zeros = |l: usize| vec![0u32; domains(l)];
        GangSearch {
            state,
            topo,
            job,
            mask,
            reach: std::array::from_fn(zeros),
            fit_reach: std::array::from_fn(zeros),
            widest: std::array::from_fn(zeros),
            fewest_nodes: 1,
            units_are_nodes: topo.units == inst.nodes.len(),
            min_units: topo.min_units(inst, job),
            fitting: 0,
            within_node_limit: true,
            offer: OfferBoard::take(inst.nodes.len()),
            racks_seen: None,
            widest_at_most: u32::MAX,
        }
    }

    /// What node n offers the gang, set on the board; `None` where it offers no GPU.
    fn take_offer(&mut self, n: NodeIx) -> Option<Offer> {
        let (free, fit) = self.state.whole_gpus_for(n, self.job);
        (free > 0).then(|| {
            let o = Offer { n, free, fit };
            self.offer.set(o);
            o
        })
    }

    /// Count offer `o` in domain d of level l: its GPUs with CPU and memory, its piece in the
    /// domain's widest, and (`reach_too`) its free GPUs.
    fn count(&mut self, l: usize, d: usize, o: Offer, reach_too: bool) {
        if reach_too {
            self.reach[l][d] += o.free;
        }
        self.fit_reach[l][d] += o.fit;
        self.widest[l][d] = self.widest[l][d].max(piece(self.job, o.fit));
    }

    /// With every node's offer counted: the cluster-wide counts and the fewest nodes.
    fn settle(&mut self) {
        let job = self.job;
        self.fitting = self
            .offer
            .offered()
            .map(|o| o.fit)
            .fold(0, u32::saturating_add);
        self.within_node_limit = holdable_on_limit(job, self.offer.offered().map(|o| o.fit));
        self.widest_at_most = self.widest[Level::Cluster as usize][0];
        self.fewest_nodes = job.gpus.div_ceil(self.widest_at_most.max(1));
    }

    /// A search of the rack level alone that looks at a rack's nodes only when it reaches the
    /// rack: each rack's GPUs free to the job come from the round state's counts per rack
    /// ([`RoundState::free_by_racks`]), so racks go in the same order as in [`GangSearch::new`]
    /// and a rack whose nodes turn out to lack the CPU or memory is passed over as there. The
    /// fewest nodes any placement needs is bounded by the most GPUs free on one node (not by
    /// what the CPU and memory leave), which stops the search no earlier than the full one
    /// would: the rack it finds is the one the full search finds.
    fn racks_only(
        state: &'s RoundState<'a>,
        topo: &'s Topology,
        job: &'s PendingJob,
        mask: &'s [bool],
    ) -> Self {
        let racks = topo.domains[Level::Rack as usize].len();
        let domains = |l: usize| if l == Level::Rack as usize { racks } else { 0 };
        let mut search = GangSearch::empty(state, topo, job, mask, domains);
        let mut in_racks = state.free_by_racks(mask, job.priority);
        in_racks.resize(racks, 0);
        search.reach[Level::Rack as usize] = in_racks;
        search.widest_at_most = piece(job, state.most_free_on_a_node(mask, job.priority));
        search.fewest_nodes = job.gpus.div_ceil(search.widest_at_most.max(1));
        search.fitting = job.gpus;
        search.racks_seen = Some(vec![false; racks]);
        search
    }

    /// Turn a search of racks alone into a search of every level, as [`GangSearch::new`]
    /// makes it: the racks not seen yet are looked at, the pods' and the cluster's free GPUs
    /// summed from the racks', and their other counts from what every node offers (a rack
    /// passed over for want of CPU or memory offers nothing).
    fn see_the_rest(&mut self) {
        let topo = self.topo;
        let racks = topo.domains[Level::Rack as usize].len();
        for d in 0..racks {
            self.see_rack(Level::Rack, d);
        }
        self.racks_seen = None;
        let (pod, cluster) = (Level::Pod as usize, Level::Cluster as usize);
        let pods = topo.domains[pod].len();
        for (l, domains) in [(pod, pods), (cluster, 1)] {
            self.reach[l] = vec![0; domains];
            self.fit_reach[l] = vec![0; domains];
            self.widest[l] = vec![0; domains];
        }
        for (d, nodes) in topo.domains[Level::Rack as usize].iter().enumerate() {
            let free = self.reach[Level::Rack as usize][d];
            if let Some(&n) = nodes.first() {
                self.reach[pod][topo.pod_of[n]] += free;
                self.reach[cluster][0] += free;
            }
        }
        let offers: Vec<Offer> = self.offer.offered().collect();
        for o in offers {
            self.count(pod, topo.pod_of[o.n], o, false);
            self.count(cluster, 0, o, false);
        }
        self.settle();
    }

    /// In a search of racks alone, look at rack d's nodes once: what each offers, and the
    /// rack's GPUs with CPU and memory and its widest node (its free GPUs are known).
    fn see_rack(&mut self, level: Level, d: usize) {
        let Some(seen) = self.racks_seen.as_mut() else {
            return;
        };
        if level != Level::Rack || seen[d] {
            return;
        }
        seen[d] = true;
        if !self.state.rack_may_fit(d, self.mask, self.job) {
            return;
        }
        let topo = self.topo;
        for &n in &topo.domains[Level::Rack as usize][d] {
            if !self.state.has_whole_gpus(n, self.mask) {
                continue;
            }
            if let Some(o) = self.take_offer(n) {
                self.count(Level::Rack as usize, d, o, false);
            }
        }
    }

    /// The domain levels to try, tightest first, as far as `within` allows.
    /// The unit level is left out where every unit is one node (single nodes were tried
    /// before the search).
    fn levels(&self) -> &'static [Level] {
        let all: &'static [Level] = match self.job.within {
            Some(Locality::Node) => &[],
            Some(Locality::Rack) => &[Level::Unit, Level::Rack],
            Some(Locality::Pod) => &[Level::Unit, Level::Rack, Level::Pod],
            None => &[Level::Unit, Level::Rack, Level::Pod, Level::Cluster],
        };
        match all {
            [Level::Unit, rest @ ..] if self.units_are_nodes => rest,
            _ => all,
        }
    }

    /// The best placement in one domain of `level`, or `None` when no domain holds the gang.
    /// Domains go best fit first (a domain leaves reach - gpus GPUs free): once one gives no
    /// spread penalty on the fewest nodes possible, no later domain can beat it.
    fn best_at(&mut self, level: Level) -> Option<Counts> {
        let l = level as usize;
        // Domains without GPUs for the gang go; those without the CPU and memory for it too,
        // once their nodes are seen.
        let mut order: Vec<usize> = (0..self.reach[l].len())
            .filter(|&d| self.reach[l][d] >= self.job.gpus)
            .collect();
        order.sort_unstable_by_key(|&d| (self.reach[l][d], d));
        let mut best: Option<(DomainKey, Counts)> = None;
        let mut offers: Vec<Offer> = Vec::new();
        for d in order {
            if best
                .as_ref()
                .is_some_and(|(b, _)| b.0 <= 0.0 && b.1 <= self.fewest_nodes)
            {
                break;
            }
            // A rack not seen yet that could not beat the best even with nodes as wide as any
            // is passed over unseen.
            if self.racks_seen.is_some()
                && best
                    .as_ref()
                    .is_some_and(|(b, _)| self.cannot_beat_with(level, d, self.widest_at_most, b))
            {
                continue;
            }
            self.see_rack(level, d);
            if self.fit_reach[l][d] < self.job.gpus {
                continue;
            }
            if best
                .as_ref()
                .is_some_and(|(b, _)| self.cannot_beat(level, d, b))
            {
                continue;
            }
            let members = &self.topo.domains[level as usize][d];
            // Single nodes were tried before the search.
            if level == Level::Unit && (members.len() < 2 || self.unit_leaves_within(members)) {
                continue;
            }
            offers.clear();
            let offered = |o: &Offer| o.fit > 0 && self.mask[self.topo.node_type[o.n]];
            if level == Level::Cluster {
                // Every node is a member: the nodes that offer something, in any order (the
                // packing orders them by its own keys).
                offers.extend(self.offer.offered().filter(offered));
            } else {
                offers.extend(members.iter().map(|&n| self.offer.of(n)).filter(offered));
            }
            let narrowed = self.narrowed_offers(level, &offers);
            for offers in std::iter::once(&offers[..]).chain(narrowed.as_deref()) {
                if let Some((counts, leftover)) =
                    pack(self.state, self.job, self.reach[l][d], offers)
                {
                    let key = (self.penalty(&counts), counts.len() as u32, leftover, d);
                    if best.as_ref().is_none_or(|(b, _)| rank(&key, b).is_lt()) {
                        best = Some((key, counts));
                    }
                }
            }
        }
        best.map(|(_, counts)| counts)
    }

    /// In a pod or the cluster, the offers of the fewest pods and then racks that hold the
    /// gang (largest first), packed beside all of the domain's offers; `None` at tighter levels
    /// or where they are all of them. Packing all offers takes the nodes with the most free
    /// GPUs wherever they sit; on the 1k-GPU whole-nodes round of `gangplan bench` (seed 2) a
    /// 64-GPU gang took whole nodes of three racks where two racks held it.
    fn narrowed_offers(&self, level: Level, offers: &[Offer]) -> Option<Vec<Offer>> {
        if level < Level::Pod {
            return None;
        }
        let mut narrowed = offers.to_vec();
        let domains = &self.topo.domains;
        if level == Level::Cluster {
            let pods = domains[Level::Pod as usize].len();
            narrowed = fewest_groups(&narrowed, &self.topo.pod_of, pods, self.job.gpus);
        }
        let racks = domains[Level::Rack as usize].len();
        narrowed = fewest_groups(&narrowed, &self.topo.rack_of, racks, self.job.gpus);
        (narrowed.len() < offers.len()).then_some(narrowed)
    }

    /// Whether domain d of `level` loses to `best` even with its best conceivable key: the
    /// fewest nodes, one rack and pod, its known leftover.
    fn cannot_beat(&self, level: Level, d: usize, best: &DomainKey) -> bool {
        self.cannot_beat_with(level, d, self.widest[level as usize][d], best)
    }

    /// [`GangSearch::cannot_beat`] with the domain's widest node at `widest` GPUs (or a bound
    /// above it: then a domain found unable to beat `best` is so with its real widest too).
    fn cannot_beat_with(&self, level: Level, d: usize, widest: u32, best: &DomainKey) -> bool {
        let job = self.job;
        let least_nodes = job.gpus.div_ceil(widest.max(1));
        let floor_span = Span {
            nodes: least_nodes,
            units: if self.units_are_nodes { least_nodes } else { 1 },
            racks: 1,
            pods: 1,
            island_splits: 0,
        };
        let floor = spread_penalty(
            &floor_span,
            self.min_units,
            job.gpus,
            &job.slowdown,
            self.state.inst.policy.weights.spread,
        );
        let leftover = self.reach[level as usize][d] - job.gpus;
        rank(&(floor, least_nodes, leftover, d), best).is_gt()
    }

    /// Whether an NVLink unit crosses the rack or pod the job must stay within (a unit may
    /// span racks or pods: it is tighter only inside them).
    fn unit_leaves_within(&self, members: &[NodeIx]) -> bool {
        let nodes = &self.state.inst.nodes;
        let spans = |f: fn(&Node) -> usize| {
            members
                .iter()
                .any(|&n| f(&nodes[n]) != f(&nodes[members[0]]))
        };
        match self.job.within {
            Some(Locality::Rack) => spans(|n| n.rack),
            Some(Locality::Pod) => spans(|n| n.pod),
            _ => false,
        }
    }

    /// Spread penalty of the gang on these nodes.
    fn penalty(&self, counts: &[(NodeIx, u32)]) -> f64 {
        let inst = self.state.inst;
        spread_penalty(
            &self.topo.span_of_nodes(inst, counts.iter().map(|c| c.0)),
            self.min_units,
            self.job.gpus,
            &self.job.slowdown,
            inst.policy.weights.spread,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hardware::ModelLibrary;
    use crate::instance::parse_instance;
    use rand::{Rng, SeedableRng};

    /// A round of `racks` racks of four 8-GPU nodes, two racks a pod: running jobs on random GPUs, random CPU
    /// left on some nodes, gangs of 9-40 GPUs, some with `max_nodes` or `gpus_per_node`.
    fn random_round(rng: &mut rand_chacha::ChaCha8Rng, racks: usize) -> String {
        // Without a spread price every placement ties on it, and the search stops at the
        // first rack that holds the gang on its fewest nodes.
        let mut yaml = String::from(if rng.gen_bool(0.5) {
            "policy: {weights: {spread: 0}}\nnodes:\n"
        } else {
            "nodes:\n"
        });
        for n in 0..racks * 4 {
            let cpu = if rng.gen_bool(0.5) {
                ", cpu_milli: 64000"
            } else {
                ""
            };
            yaml += &format!(
                "  - {{name: n{n}, gpus: 8, rack: r{}, pod: p{}{cpu}}}\n",
                n / 4,
                n / 8
            );
        }
        yaml += "running:\n";
        for n in 0..racks * 4 {
            let held: Vec<String> = (0..8)
                .filter(|_| rng.gen_bool(0.4))
                .map(|g| g.to_string())
                .collect();
            if !held.is_empty() {
                let cpu = rng.gen_range(0..40) * 1000;
                yaml += &format!(
                    "  - {{id: r{n}, gpus: {{n{n}: [{}]}}, cpu_milli: {cpu}}}\n",
                    held.join(", ")
                );
            }
        }
        yaml += "pending:\n";
        for j in 0..12 {
            let gpus = rng.gen_range(9..=40);
            let mut shape = String::new();
            if rng.gen_bool(0.2) {
                shape += &format!(", max_nodes: {}", rng.gen_range(2..8));
            } else if gpus % 4 == 0 && rng.gen_bool(0.3) {
                shape += ", gpus_per_node: 4";
            }
            // Some ask so much CPU per GPU that whole racks offer them nothing.
            let cpu = if rng.gen_bool(0.4) {
                gpus * rng.gen_range(1..10) * 1000
            } else {
                rng.gen_range(0..5) * 4000
            };
            let priority = rng.gen_range(0..2);
            yaml += &format!(
                "  - {{id: j{j}, gpus: {gpus}, cpu_milli: {cpu}, priority: {priority}{shape}}}\n"
            );
        }
        yaml
    }

    /// Racks passed over for want of CPU ([`RoundState::rack_may_fit`] false) offer the job
    /// nothing on any node; counts those racks.
    fn racks_passed_over(
        state: &RoundState,
        topo: &Topology,
        job: &PendingJob,
        mask: &[bool],
    ) -> usize {
        let racks = &topo.domains[Level::Rack as usize];
        let passed: Vec<&Vec<NodeIx>> = (0..racks.len())
            .filter(|&d| !state.rack_may_fit(d, mask, job))
            .map(|d| &racks[d])
            .collect();
        for &n in passed.iter().copied().flatten() {
            assert_eq!(state.whole_gpus_for(n, job).1, 0, "{} on node {n}", job.id);
        }
        passed.len()
    }

    /// Asserts that the search of racks first finds what the full search finds at every
    /// level; whether a rack held the job.
    fn racks_first_is_the_full_search(
        state: &RoundState,
        topo: &Topology,
        job: &PendingJob,
        yaml: &str,
    ) -> bool {
        let mask = topo.type_mask(job);
        let mut full = GangSearch::new(state, topo, job, &mask, Nodes::All);
        let mut alone = GangSearch::racks_only(state, topo, job, &mask);
        let in_a_rack = full.best_at(Level::Rack);
        assert_eq!(
            alone.best_at(Level::Rack),
            in_a_rack,
            "{} in\n{yaml}",
            job.id
        );
        // Seen through, the racks' search is the full one at every level.
        alone.see_the_rest();
        assert_eq!(
            (alone.fitting, alone.within_node_limit, alone.fewest_nodes),
            (full.fitting, full.within_node_limit, full.fewest_nodes),
            "{}",
            job.id
        );
        for level in [Level::Pod, Level::Cluster] {
            assert_eq!(alone.best_at(level), full.best_at(level), "{}", job.id);
        }
        in_a_rack.is_some()
    }

    #[test]
    fn racks_first_find_what_the_full_search_finds() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(11);
        let (mut found, mut passed_over) = (0, 0);
        for _ in 0..60 {
            let racks = rng.gen_range(1..6);
            let yaml = random_round(&mut rng, racks);
            let inst = parse_instance(&yaml, "racks", &ModelLibrary::builtin()).unwrap();
            let topo = Topology::new(&inst);
            let before = crate::state::ClusterState::new(&inst);
            let mut state = RoundState::new(&inst, &before);
            // Victims free GPUs for the jobs of priority 1 (and change the racks' counts).
            for k in 0..inst.running.len() {
                if rng.gen_bool(0.2) {
                    state.preempt(k);
                }
            }
            for (j, job) in inst.pending.iter().enumerate() {
                let mask = topo.type_mask(job);
                passed_over += racks_passed_over(&state, &topo, job, &mask);
                found += usize::from(racks_first_is_the_full_search(&state, &topo, job, &yaml));
                // The next job searches a state with this one placed.
                if let Some(set) = find_placement(&state, &topo, j) {
                    state.commit(j, set);
                }
            }
        }
        assert!(found > 50, "only {found} gangs found a rack");
        assert!(passed_over > 50, "only {passed_over} racks passed over");
    }
}
