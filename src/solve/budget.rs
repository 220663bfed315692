//! The round's time budget: every phase of a solve asks it when to stop.
//!
//! A round has one deadline (when the plan must be written). From it and the instance the
//! budget derives, once, at the start of the solve:
//!
//! - the **reserve** kept back for the reasons of the jobs left waiting, rendering, validating
//!   and writing the plan ([`Budget::reserve`]);
//! - the **work deadline**, the deadline less the reserve: the greedy portfolio stops starting
//!   passes there, and no solver is waited for past it ([`Budget::work_until`]);
//! - whether there is time to start a MIP at all ([`Budget::can_start_aggregated`],
//!   [`Budget::per_node_limits`]);
//! - the MIP's own time limit and gap ([`Budget::aggregated_time_limit`],
//!   [`Budget::aggregated_gap`], [`PerNodeLimits`]);
//! - when the aggregated path's repeat and swap-out passes stop ([`Budget::passes_until`],
//!   [`Budget::pass_fits`]) and whether its choice can still be placed
//!   ([`Budget::can_place_choice`]);
//! - when the reasons of the waiting jobs must be done ([`Budget::reasons_until`]).
//!
//! Every constant of the round's timing lives here, with the measurement behind it.

use crate::instance::Instance;
use std::time::{Duration, Instant};

/// Shortest MIP solve worth starting: with less than this left after the reserve the round
/// returns the greedy plan (a rule of thumb, not a measurement: building and presolving even
/// a small model takes milliseconds).
const MIN_SOLVE: Duration = Duration::from_millis(20);

/// Share of the per-node MIP's budget given to HiGHS as its own time limit; the remaining
/// tenth is the margin for HiGHS to stop and for the answer to be decoded before the solve
/// thread stops being waited for (a margin chosen, not measured).
const PER_NODE_SHARE: f64 = 0.9;

/// Share of the round's budget HiGHS may spend on the aggregated model; the rest places its
/// choice. The 10k-GPU bench rounds take HiGHS 0.23-0.27 s: at 0.6 a 0.5 s limit cut one of
/// the three (greedy plan, gap 7.6%), at 0.7 none (0.32-0.38 s wall, gaps 0.36-0.40%).
///
/// Rounds where the per-node model solves beside the aggregated path take the same share.
/// While the per-node model ran after that path they took 0.7 of it (0.4 before: HiGHS then
/// stopped the integer model of the 48-node tight-cpu round just before it closed, and the
/// round reported 2.6-3.0% for a plan within 0.3% of its optimum); on 71 rounds of 4-192
/// nodes (1 s) the whole share measured as 0.7, the plans within their run-to-run spread.
const MODEL_SHARE: f64 = 0.7;

/// Share of the round after which the aggregated path starts no more repeat or swap-out
/// passes. Rounds of up to ~10k GPUs converge long before. On the 100k-GPU bench rounds with a
/// 10 s limit, since the second stage places the most constrained jobs first, 0.45 bought
/// nothing over 0.3 (gaps 0.58%, 0.64%, 0.65% for seeds 1-3 either way) for 0.5-0.9 s more
/// (4.3-4.8 s against 3.5-3.9 s); only the tight 100k round gained (2.14% against 3.00%).
const SWAP_SHARE: f64 = 0.3;

/// The aggregated model is solved to half the round's gap: its bound is looser than the
/// per-node model's, and the second stage loses a little of the value it chose, so the model
/// itself must be proved tighter for the plan to reach the round's gap.
const AGGREGATED_GAP_FACTOR: f64 = 0.5;

/// Placing the aggregated model's choice takes two greedy passes run in parallel; the
/// portfolio runs up to five passes, so half of its wall time is taken as the time the
/// placement needs (an estimate, not a measurement).
const PLACE_SHARE_OF_GREEDY: u32 = 2;

/// Share of the round an early placement of the aggregated model's choice stops before the
/// work deadline ([`Budget::early_placement_until`]). Scoring a 100k-GPU plan takes 0.05-0.1 s;
/// a placement cut at the work deadline itself reached the round's thread after it (the
/// default 100k round, 3 s, on a loaded machine) and the round kept the greedy plan.
const EARLY_PLACEMENT_MARGIN: f64 = 0.05;

/// Share of the time left before the work deadline that relocation moves may take
/// ([`Budget::relocation_until`]). On the 100k-GPU skewed-resources round (12,500 nodes,
/// 20,000 pending, 3 s) relocation ran to the work deadline, 0.72 s for no move kept, and the
/// trades after it, which raise such rounds' plans by several percent, never ran. A half gave
/// skewed-resources 100k 11.0% and 11.7% (seeds 1, 2), tight-cpu 7.8% and 6.9%; a quarter
/// 10.5%, 11.5%, 7.7% and 6.7%, with quotas and mixed unchanged (relocation keeps moves there
/// and ends within its quarter).
const RELOCATION_SHARE: f64 = 0.25;

/// Share of the time left before the work deadline that repacking ([`Budget::repack_until`],
/// [`crate::heuristics::repack`]) may take; the neighbourhood search after it keeps the rest.
/// On 1,250-node rounds repacking keeps moves until its deadline while most neighbourhood
/// re-solves keep nothing (tight-cpu, 10 s: 130 moves kept against 1 of 18 re-solves), so it
/// takes most of the time: against a half, the 11 families at 10k GPUs, seeds 1-2, 1 s, rose
/// by 0.02% on average (14 up, 2 down, skewed-resources +0.07%) and tight-cpu, sharers and
/// skewed-resources at 10 s by 0.10%, 0.04% and 0.15%. Rounds of up to ~200 nodes end their
/// repacking by its own limits well before ([`crate::heuristics::repack::MOST_FRUITLESS`]):
/// their search keeps its time (15 saved and generated 48-192-node rounds at 1 s: one up, one
/// down, the rest the same).
const REPACK_SHARE: f64 = 0.85;

/// HiGHS time limit of one neighbourhood's exact re-solve (a cut of one rack or a few small
/// ones and at most [`crate::solve::neighbourhood`]'s candidate count) where the pass's even
/// share of the time left is smaller ([`Budget::cut_time_limit`]): most cuts solve to
/// optimality in milliseconds to tens of milliseconds; the cap keeps one hard cut from taking
/// the time of the pass's other neighbourhoods (a choice, not a measurement).
const CUT_TIME_LIMIT: Duration = Duration::from_millis(200);

/// Shortest neighbourhood re-solve worth starting (building, presolving and decoding a cut
/// takes a few milliseconds; a rule of thumb).
const MIN_CUT: Duration = Duration::from_millis(15);

/// The reasons of the waiting jobs, seconds per (node, pending job) pair. Measured with both
/// cores, all reasons of the plans of 3 s rounds: 12,500 nodes and 20,000 pending (the seven
/// 100k-GPU families of `gangplan bench`, 301-4,102 waiting shapes) 0.047-0.106 s, 1.9e-10 to
/// 4.2e-10 per pair; 20,000 nodes and 60,000 pending 0.20 s, 1.7e-10; at 1,250 nodes and 4,000
/// pending 3-10 ms, below the reserve's least base. A little above the most measured.
const REASONS_SECONDS_PER_NODE_JOB: f64 = 5e-10;

/// Rendering (reasons aside), validating, encoding and writing the plan, seconds per job
/// (running or pending): on the 100k-GPU family rounds (12,500 nodes, 28,561-36,202 jobs)
/// with the machine's two cores loaded (load average 3) it took 0.18-0.25 s, 5e-6 to 9e-6 s
/// per job, and with two such rounds solved at once 0.15-0.24 s; this is a little above the
/// most measured, and the reserve's base (a tenth of the round) comes on top. At 1.5e-5 the
/// 3 s rounds ended 0.7 s early (2.25-2.36 s); at 1e-5 the time gained went to the phases
/// after the second stage: skewed-resources 100k 10.78% to 10.38% and 11.05% to 10.56% (two
/// runs), the other five families measured 0.005-0.03 points better. (An earlier
/// measurement, 2.7e-5 s per job at 5,000 nodes and 15,000 pending jobs, kept back 1.1 s of
/// a 3 s round at 100k GPUs for 0.2 s of work.)
const OUTPUT_SECONDS_PER_JOB: f64 = 1e-5;

/// Share of [`OUTPUT_SECONDS_PER_JOB`]'s output that comes after the reasons of the waiting
/// jobs (the rest, rendering the placements, preemptions and the cluster after the round,
/// comes before them, so it is not kept back after them as well): on the 3 s partial-nodes
/// round of 100k GPUs (12,500 nodes, 20,000 pending, quiet machine) 0.04-0.06 s of the output's
/// 0.21-0.23 s came before the reasons. With the whole output kept back after them the
/// reasons had 0.11-0.19 s of the 0.19 s they needed (122-1,466 waiting jobs `unexplained`),
/// and the round ended 0.2-0.27 s before its deadline.
const OUTPUT_AFTER_REASONS_SHARE: f64 = 0.8;

/// How far writing a plan may overrun a limit too short for it before the round is refused
/// instead (a choice: a cron that asks for a millisecond gets its plan a little late).
const OVERRUN_TOLERATED: Duration = Duration::from_millis(100);

/// Lower and upper clamp of the reserve's base (a tenth of the round).
const RESERVE_BASE_MIN: Duration = Duration::from_millis(50);
/// See [`RESERVE_BASE_MIN`].
const RESERVE_BASE_MAX: Duration = Duration::from_millis(500);

/// The time budget of one round, fixed at the start of its solve.
#[derive(Debug, Clone, Copy)]
pub struct Budget {
    started: Instant,
    deadline: Instant,
    total: Duration,
    output: Duration,
    reserved: Duration,
}

/// The per-node MIP's limits, taken when it starts (after the greedy).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PerNodeLimits {
    /// How long the solver thread is waited for.
    pub wait: Duration,
    /// HiGHS's own time limit, seconds.
    pub time_limit: f64,
}

impl Budget {
    /// The budget of a round that starts now and must be done by `deadline`.
    pub fn new(inst: &Instance, deadline: Instant) -> Self {
        Self::starting_at(inst, Instant::now(), deadline)
    }

    /// The budget of a round that started at `started` and must be done by `deadline`.
    pub fn starting_at(inst: &Instance, started: Instant, deadline: Instant) -> Self {
        let pairs = inst.nodes.len() as f64 * inst.pending.len() as f64;
        let jobs = (inst.pending.len() + inst.running.len()) as f64;
        let output = Duration::from_secs_f64(jobs * OUTPUT_SECONDS_PER_JOB);
        let total = deadline.saturating_duration_since(started);
        Budget {
            started,
            deadline,
            total,
            output,
            reserved: reserve_for(pairs, output, total),
        }
    }

    /// The whole round, start to deadline.
    pub fn total(&self) -> Duration {
        self.total
    }

    /// Time kept back from the deadline for the reasons of the jobs left waiting, rendering,
    /// validating and writing the plan: [`OUTPUT_SECONDS_PER_JOB`] per job, plus a tenth of
    /// the round (50-500 ms) or the reasons' estimate where that is longer (they grow with
    /// nodes x pending jobs, [`REASONS_SECONDS_PER_NODE_JOB`]); never more than half the
    /// round.
    pub fn reserve(&self) -> Duration {
        self.reserved
    }

    /// The deadline less the reserve: the greedy starts no pass after it and no solver is
    /// waited for past it.
    pub fn work_until(&self) -> Instant {
        self.deadline - self.reserved
    }

    /// When the reasons of the waiting jobs stop: the deadline less the part of the output
    /// that comes after them ([`OUTPUT_AFTER_REASONS_SHARE`]) and the reserve's least base
    /// ([`RESERVE_BASE_MIN`]), within half the round. The
    /// reasons run in the reserve's base and use of it only what they need; a solve that ends
    /// late on a loaded machine leaves them less. (They once had the reserve less its whole
    /// base: 20-35 ms on the 10k-GPU rounds of 1 s, where they took 60-150 ms then, and most
    /// waiting jobs said `unexplained`; at 100k GPUs they were not reserved at all.)
    pub fn reasons_until(&self) -> Instant {
        let after_reasons = self.output.mul_f64(OUTPUT_AFTER_REASONS_SHARE);
        self.deadline - (after_reasons + RESERVE_BASE_MIN).min(self.total / 2)
    }

    /// Whether the budget is shorter than validating and writing a plan of this instance
    /// takes by itself ([`OUTPUT_SECONDS_PER_JOB`] per job): `Some(needed)` then, since even
    /// the emptiest plan would overrun by more than [`OVERRUN_TOLERATED`]. (A short limit on
    /// a small round is not refused: its greedy plan overruns by milliseconds.)
    pub fn too_short(&self) -> Option<Duration> {
        (self.output > self.total + OVERRUN_TOLERATED).then_some(self.output)
    }

    /// Whether the aggregated model is worth starting (it starts with the round, before the
    /// greedy): more than [`MIN_SOLVE`] left after the reserve.
    pub fn can_start_aggregated(&self) -> bool {
        self.total > MIN_SOLVE + self.reserved
    }

    /// The aggregated model's solve budget: the round less the reserve.
    pub fn aggregated_solve(&self) -> Duration {
        self.total - self.reserved
    }

    /// HiGHS's time limit on the aggregated model, seconds: [`MODEL_SHARE`] of its budget.
    pub fn aggregated_time_limit(&self) -> f64 {
        self.aggregated_solve().as_secs_f64() * MODEL_SHARE
    }

    /// The gap the aggregated model is solved to, from the round's.
    pub fn aggregated_gap(mip_gap: f64) -> f64 {
        mip_gap * AGGREGATED_GAP_FACTOR
    }

    /// The per-node MIP's limits when it starts at `now` (after the greedy, or after the
    /// neighbourhood search): the time left before [`Budget::work_until`], and HiGHS's share of
    /// that; `None` when less than [`MIN_SOLVE`] is left. (It once ran to the deadline less a
    /// reserve taken on what was left, past the time kept for the reasons: the waiting jobs of
    /// every small round it did not solve to the gap said `unexplained`.)
    pub fn per_node_limits(&self, now: Instant) -> Option<PerNodeLimits> {
        let wait = self.work_until().saturating_duration_since(now);
        (wait >= MIN_SOLVE).then_some(PerNodeLimits {
            wait,
            time_limit: wait.as_secs_f64() * PER_NODE_SHARE,
        })
    }

    /// When a placement on the aggregated model's thread stops
    /// ([`crate::solve::aggregated::Early`]): [`EARLY_PLACEMENT_MARGIN`] of the round before
    /// [`Budget::work_until`], so that its plan, scored and sent, reaches the round's thread
    /// before that deadline.
    pub fn early_placement_until(&self) -> Instant {
        self.work_until() - self.total.mul_f64(EARLY_PLACEMENT_MARGIN)
    }

    /// When the aggregated path starts no more repeat or swap-out passes: [`SWAP_SHARE`] of
    /// the round, and never after [`Budget::work_until`].
    pub fn passes_until(&self) -> Instant {
        (self.started + self.total.mul_f64(SWAP_SHARE)).min(self.work_until())
    }

    /// When relocation moves started now stop: [`RELOCATION_SHARE`] of what is left before
    /// [`Budget::work_until`], so that the trades and the neighbourhood search after them
    /// keep the rest.
    pub fn relocation_until(&self) -> Instant {
        self.share_of_what_is_left(RELOCATION_SHARE)
    }

    /// When repacking started now stops: [`REPACK_SHARE`] of what is left before
    /// [`Budget::work_until`].
    pub fn repack_until(&self) -> Instant {
        self.share_of_what_is_left(REPACK_SHARE)
    }

    /// Now plus `share` of the time left before [`Budget::work_until`].
    fn share_of_what_is_left(&self, share: f64) -> Instant {
        let now = Instant::now();
        now + self
            .work_until()
            .saturating_duration_since(now)
            .mul_f64(share)
    }

    /// When the neighbourhood search started now stops: [`Budget::work_until`] (where the
    /// per-node model runs on the same round, it solves alongside the search).
    pub fn search_until(&self) -> Instant {
        self.work_until()
    }

    /// HiGHS's time limit for one neighbourhood re-solve started now, seconds, for a search
    /// that stops at `until` ([`Budget::search_until`]) and has `batches_left` batches of
    /// re-solves (this one included) left in its pass: 0.8 of what is left before `until`, of
    /// at most the larger of [`CUT_TIME_LIMIT`] and an even share of what is left over those
    /// batches; `None` when less than [`MIN_CUT`] is left.
    ///
    /// The share lets a round with time to spare solve its few neighbourhoods further: on
    /// 48-node tight-cpu rounds (90 pending, gangs of up to 16 GPUs, 3 neighbourhoods) every
    /// re-solve stopped at the cap at the root, 3-7% from its own bound, and a 10 s round kept
    /// no more than a 1 s one; with the share, of five such rounds all five gained at 10 s
    /// (+0.1% to +1.5%; the per-node model then ran after the search). Rounds with many
    /// neighbourhoods (the 10k-GPU ones: 79) keep the cap: their share is below it.
    ///
    /// The search once stopped at half the round: the 10k-GPU family rounds (1 s limit) then
    /// ended at 0.6 s with a quarter of the round unused. Up to the work deadline (0.83-0.85 s
    /// wall, load 2.2-2.9, seed 1) sharers went from a 1.91% to a 1.63% gap and the other
    /// eight families moved by under 0.03 points: small gains, but time the search does not
    /// use is lost to the plan.
    pub fn cut_time_limit(until: Instant, batches_left: usize) -> Option<f64> {
        let left = until.saturating_duration_since(Instant::now());
        let share = left.div_f64(batches_left.max(1) as f64);
        (left >= MIN_CUT).then(|| {
            left.min(share.max(CUT_TIME_LIMIT))
                .mul_f64(0.8)
                .as_secs_f64()
        })
    }

    /// Whether one more pass taking `pass_takes`, started now, ends before `until`.
    pub fn pass_fits(pass_takes: Duration, until: Instant) -> bool {
        Instant::now() + pass_takes <= until
    }

    /// Greedy passes' worth of time (each as long as the portfolio's first) the portfolio
    /// leaves before the work deadline when the aggregated model is solving: the second stage
    /// runs its two orders in parallel, each a pass, then repeats and swap-outs while they fit.
    /// On the 100k-GPU family rounds with a 3 s limit the portfolio's later passes took the
    /// time the model's choice needed, so three families kept the greedy plan (gaps 2.7-21%).
    pub const PASSES_TO_PLACE_CHOICE: f64 = 1.5;

    /// Whether the aggregated model's choice can still be placed now, given how long the
    /// greedy portfolio took (see [`PLACE_SHARE_OF_GREEDY`]).
    pub fn can_place_choice(&self, greedy_took: Duration) -> bool {
        Self::pass_fits(greedy_took / PLACE_SHARE_OF_GREEDY, self.work_until())
    }
}

/// A tenth of the round, clamped to 50-500 ms.
fn reserve_base(total: Duration) -> Duration {
    (total / 10).clamp(RESERVE_BASE_MIN, RESERVE_BASE_MAX)
}

/// The reserve of a round of `total` over `pairs` (node, pending job) pairs whose plan takes
/// `output` to validate and write: the output, and the base or the reasons' estimate where
/// that is longer, at most half the round. Reasons that do not fit are not waited for: the
/// jobs past [`Budget::reasons_until`] say `unexplained`, and the time goes to the plan.
fn reserve_for(pairs: f64, output: Duration, total: Duration) -> Duration {
    let reasons = Duration::from_secs_f64(pairs * REASONS_SECONDS_PER_NODE_JOB);
    (output + reserve_base(total).max(reasons)).min(total / 2)
}

#[cfg(test)]
mod tests {
    use crate::solve::budget::*;

    /// The budget of a round of `total` from `start` with no reasons to render.
    fn bare(start: Instant, total: Duration) -> Budget {
        Budget {
            started: start,
            deadline: start + total,
            total,
            output: Duration::ZERO,
            reserved: reserve_for(0.0, Duration::ZERO, total),
        }
    }

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn the_reserve_is_the_output_and_a_tenth_clamped_or_the_reasons_at_most_half() {
        assert_eq!(
            reserve_for(0.0, Duration::ZERO, Duration::from_secs(1)),
            ms(100)
        );
        assert_eq!(reserve_for(0.0, Duration::ZERO, ms(200)), ms(50));
        assert_eq!(
            reserve_for(0.0, Duration::ZERO, Duration::from_secs(60)),
            ms(500)
        );
        // 12,500 nodes x 20,000 jobs: 125 ms of reasons, within the base.
        assert_eq!(
            reserve_for(12_500.0 * 20_000.0, ms(450), Duration::from_secs(3)),
            ms(300) + ms(450)
        );
        // 20,000 nodes x 60,000 jobs: 600 ms of reasons, longer than the base.
        assert_eq!(
            reserve_for(20_000.0 * 60_000.0, ms(800), Duration::from_secs(3)),
            ms(600) + ms(800)
        );
        // Reasons that do not fit in half the round are cut to it.
        assert_eq!(
            reserve_for(1e12, Duration::ZERO, Duration::from_secs(2)),
            ms(1000)
        );
        // The base and the output never take more than half the round.
        assert_eq!(reserve_for(0.0, ms(900), Duration::from_secs(1)), ms(500));
        assert_eq!(reserve_for(0.0, Duration::ZERO, ms(60)), ms(30));
    }

    #[test]
    fn phases_end_in_order() {
        let start = Instant::now();
        let b = Budget {
            started: start,
            deadline: start + Duration::from_secs(10),
            total: Duration::from_secs(10),
            output: Duration::ZERO,
            reserved: reserve_for(2e9, Duration::ZERO, Duration::from_secs(10)),
        };
        assert_eq!(b.reserve(), ms(1000));
        assert_eq!(b.work_until(), start + ms(9000));
        assert_eq!(b.reasons_until(), start + ms(9950));
        assert_eq!(b.passes_until(), start + ms(3000));
        assert!(b.can_start_aggregated());
        assert!((b.aggregated_time_limit() - 9.0 * 0.7).abs() < 1e-12);
        assert!(b.passes_until() <= b.work_until());
        assert!(b.work_until() <= b.reasons_until());
        // Relocation takes its share of what is left before the work deadline, leaving the rest.
        let (before, relocation, after) = (Instant::now(), b.relocation_until(), Instant::now());
        assert!(relocation < b.work_until());
        assert!(relocation >= before + (b.work_until() - after).mul_f64(RELOCATION_SHARE));
        assert!(relocation <= after + (b.work_until() - before).mul_f64(RELOCATION_SHARE));
    }

    #[test]
    fn the_output_is_kept_back_after_the_reasons() {
        let start = Instant::now();
        let total = Duration::from_secs(10);
        let output = ms(300);
        let b = Budget {
            started: start,
            deadline: start + total,
            total,
            output,
            reserved: reserve_for(0.0, output, total),
        };
        assert_eq!(b.reserve(), ms(800));
        // After the reasons: the output's share after them (240 ms) and the least base.
        assert_eq!(b.reasons_until(), start + total - ms(290));
        assert!(b.work_until() <= b.reasons_until());
    }

    #[test]
    fn a_neighbourhood_gets_its_share_of_the_pass_and_never_less_than_the_cap() {
        let until = Instant::now() + Duration::from_secs(4);
        // Two batches left of four seconds: about two seconds each, far above the cap.
        let share = Budget::cut_time_limit(until, 2).unwrap();
        assert!(share > 1.5 && share <= 1.6 + 1e-9, "{share}");
        // Forty batches: the share is below the cap, which stands.
        let capped = Budget::cut_time_limit(until, 40).unwrap();
        assert!((capped - CUT_TIME_LIMIT.as_secs_f64() * 0.8).abs() < 1e-9);
        // Less than the shortest worth starting: none.
        assert_eq!(Budget::cut_time_limit(Instant::now() + ms(5), 1), None);
    }

    #[test]
    fn a_short_round_starts_no_mip() {
        let start = Instant::now();
        let total = ms(30);
        let b = bare(start, total);
        assert!(!b.can_start_aggregated());
        assert_eq!(b.per_node_limits(start), None);
        assert_eq!(b.passes_until(), start + ms(9));
    }

    #[test]
    fn the_per_node_model_stops_by_the_work_deadline() {
        let start = Instant::now();
        let total = Duration::from_secs(2);
        let b = bare(start, total);
        let l = b.per_node_limits(start + ms(1000)).unwrap();
        assert_eq!(l.wait, ms(800));
        assert!((l.time_limit - 0.72).abs() < 1e-12);
        assert_eq!(b.per_node_limits(start + ms(1790)), None);
    }

    #[test]
    fn the_reasons_run_in_the_reserve_but_its_least_base_and_the_output() {
        let start = Instant::now();
        // A round of 1 s with 100 ms of output: work until 800 ms (the base, 100 ms, and the
        // output), the reasons until 870 ms (the output's 80 ms after them and the least base).
        let b = Budget {
            output: ms(100),
            reserved: reserve_for(1e7, ms(100), ms(1000)),
            ..bare(start, ms(1000))
        };
        assert_eq!(b.work_until(), start + ms(800));
        assert_eq!(b.reasons_until(), start + ms(870));
        // Within half the round.
        let short = Budget {
            output: ms(100),
            ..bare(start, ms(200))
        };
        assert_eq!(short.reasons_until(), start + ms(100));
    }

    #[test]
    fn the_aggregated_gap_is_half_the_rounds() {
        assert_eq!(Budget::aggregated_gap(0.01), 0.005);
    }
}
