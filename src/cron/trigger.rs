//! When a long-running planner (`gangplan slurm serve`) plans a round: when what it watches
//! changed and has then been quiet for the debounce time (or has kept changing for the longest
//! delay), or when no round ran for the idle interval (a round also holds again a released job
//! that has not started, which no change announces). Pure logic over the times it is given, so
//! the loop that polls the cluster stays small and this can be tested without a clock.

use std::time::{Duration, Instant};

/// The timings of the trigger.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Timing {
    /// Quiet time after the last change before a round (a burst of submissions is one round).
    pub debounce: Duration,
    /// Longest time from the first unplanned change to its round, however busy the queue.
    pub max_delay: Duration,
    /// A round at least this often even when nothing changed.
    pub idle_round: Duration,
}

/// What the trigger has seen.
#[derive(Debug, Clone)]
pub struct Trigger {
    timing: Timing,
    /// The watched state the last round saw.
    planned: Option<u64>,
    /// The state seen last, and when it was first seen.
    seen: Option<(u64, Instant)>,
    /// When the first change the last round did not see was noticed.
    first_change: Option<Instant>,
    /// When the last round ended.
    last_round: Option<Instant>,
}

impl Trigger {
    /// A trigger that plans at once on its first observation.
    pub fn new(timing: Timing) -> Self {
        Trigger {
            timing,
            planned: None,
            seen: None,
            first_change: None,
            last_round: None,
        }
    }

    /// Record the watched state `state` (a fingerprint) seen at `now`; whether to plan a round.
    pub fn observe(&mut self, state: u64, now: Instant) -> bool {
        if self.seen.is_none_or(|(s, _)| s != state) {
            self.seen = Some((state, now));
        }
        if self.planned == Some(state) {
            self.first_change = None;
        } else if self.first_change.is_none() {
            self.first_change = Some(now);
        }
        let Some(last) = self.last_round else {
            return true;
        };
        if let Some(first) = self.first_change {
            let quiet_since = self.seen.map_or(now, |(_, at)| at);
            return now.duration_since(quiet_since) >= self.timing.debounce
                || now.duration_since(first) >= self.timing.max_delay;
        }
        now.duration_since(last) >= self.timing.idle_round
    }

    /// A round ended at `now`, after which the watched state was `state` (the round's own
    /// changes are in it, so they do not call for another round).
    pub fn planned(&mut self, state: u64, now: Instant) {
        self.planned = Some(state);
        self.seen = Some((state, now));
        self.first_change = None;
        self.last_round = Some(now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn timing() -> Timing {
        Timing {
            debounce: Duration::from_millis(500),
            max_delay: Duration::from_secs(3),
            idle_round: Duration::from_secs(60),
        }
    }

    fn at(t0: Instant, ms: u64) -> Instant {
        t0 + Duration::from_millis(ms)
    }

    #[test]
    fn plans_at_once_first_then_only_after_a_change_settles() {
        let t0 = Instant::now();
        let mut t = Trigger::new(timing());
        assert!(t.observe(1, t0), "the first observation plans");
        t.planned(1, at(t0, 100));
        assert!(!t.observe(1, at(t0, 200)), "nothing changed");
        assert!(!t.observe(2, at(t0, 300)), "a change, not settled yet");
        assert!(!t.observe(2, at(t0, 700)), "quiet for 400 ms only");
        assert!(t.observe(2, at(t0, 800)), "quiet for 500 ms");
        t.planned(2, at(t0, 900));
        assert!(!t.observe(2, at(t0, 1000)));
    }

    #[test]
    fn a_queue_that_keeps_changing_is_planned_by_the_longest_delay() {
        let t0 = Instant::now();
        let mut t = Trigger::new(timing());
        t.observe(0, t0);
        t.planned(0, t0);
        let mut fired = None;
        for step in 1..100u64 {
            if t.observe(step, at(t0, step * 200)) {
                fired = Some(step * 200);
                break;
            }
        }
        assert_eq!(
            fired,
            Some(3200),
            "first change at 200 ms, longest delay 3 s"
        );
    }

    #[test]
    fn a_change_undone_before_the_round_plans_nothing() {
        let t0 = Instant::now();
        let mut t = Trigger::new(timing());
        t.observe(5, t0);
        t.planned(5, t0);
        assert!(!t.observe(6, at(t0, 100)));
        assert!(!t.observe(5, at(t0, 200)));
        assert!(!t.observe(5, at(t0, 5000)));
    }

    #[test]
    fn an_idle_cluster_is_planned_every_idle_interval() {
        let t0 = Instant::now();
        let mut t = Trigger::new(timing());
        t.observe(1, t0);
        t.planned(1, t0);
        assert!(!t.observe(1, at(t0, 59_000)));
        assert!(t.observe(1, at(t0, 60_000)));
    }

    #[test]
    fn no_debounce_plans_a_change_at_its_first_sight() {
        let t0 = Instant::now();
        let mut t = Trigger::new(Timing {
            debounce: Duration::ZERO,
            ..timing()
        });
        t.observe(1, t0);
        t.planned(1, t0);
        assert!(!t.observe(1, at(t0, 100)), "nothing changed");
        assert!(t.observe(2, at(t0, 200)), "a change plans when first seen");
    }
}
