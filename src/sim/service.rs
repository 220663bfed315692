//! The attained-service objective of time-based replays: what the simulator tells the `ilp`
//! and `greedy` planners about each job so that their plans favour what lowers job completion
//! times without knowing durations.
//!
//! A job's value per GPU comes from the instance's existing fields (the solver is unchanged):
//!
//! - **priority** = minus its attained-service queue: the number of [`ServiceObjective::thresholds`]
//!   (GPU-seconds received so far, Tiresias' discretised 2D-LAS) it has passed. A job that has
//!   received little service is more likely to be short (GPU job durations are heavy-tailed), so
//!   least attained service first lowers the mean JCT. Discrete queues, not a smooth function of
//!   service: within a queue jobs do not overtake each other as their service grows, so running
//!   jobs are not preempted by jobs that have received only slightly less (Tiresias' argument
//!   against continuous LAS), and a round only changes priorities when a job crosses a threshold.
//! - **wait** = the job's age on [`ServiceObjective::age_clock`]: by default the time since
//!   submission ([`AgeClock::Submission`]), else the time spent waiting (since submission,
//!   minus the time it ran); per job by default ([`AgingUnit::Job`]: the age over the job's
//!   GPUs, since the plan objective's aging term adds `aging` per GPU per hour of the wait, so
//!   every job ages by `aging` an hour whatever its size), else per GPU. A long-served job of g
//!   GPUs `g step / aging` hours older (per GPU: `step / aging`) is worth as much per GPU as a
//!   fresh one (with the defaults, 23 seconds for one GPU: among waiting jobs, age soon decides
//!   the order, as inside a Tiresias queue and in `las`). This is the starvation guard: a
//!   waiting gang's value per GPU keeps growing (up to `aging_cap_hours` of the wait, g x 48 h
//!   of age for g GPUs), so it passes the newer jobs in time.
//!   Counting the time since submission keeps that order fixed: two demoted long jobs do not
//!   take turns (each turn costs the work since its last checkpoint and holds both to the end),
//!   the older one finishes first. Aging per job rather than per GPU lets, of two jobs waiting
//!   as long, the one of fewer GPUs go first, and makes a round's plan worth more for every job
//!   it starts than for the GPUs it fills: more jobs finish early, and the mean completion time
//!   falls (measured in docs/research.md).
//! - **big gangs wait**: a waiting gang of at least [`ServiceObjective::big_gang`] of the
//!   cluster's GPUs (40% by default) ranks at most at the second queue, so it preempts nothing
//!   of the first two and waits for GPUs to free. Preempting for it displaces many jobs, each
//!   losing the work since its checkpoint, and it leaves the first queue after threshold / g
//!   seconds (20 minutes for 48 GPUs at 57600 GPU-seconds), then holds the GPUs as long as the
//!   gang it displaced would have: the swap buys the mean little and makes the displaced gang
//!   the tail.
//! - **preemptible** running jobs (when preemption is on), at the priority of their own queue: the
//!   MIP may preempt a job of a lower queue for one of a higher queue when the value gained
//!   exceeds the victim's cost: `victim` times its value plus the work lost since its last
//!   checkpoint (`checkpoint_cost`). Preemption needs a strictly higher priority, so the
//!   queues decide who may preempt whom, and the costs decide whether it pays.
//!
//! The weights the instance carries are [`ServiceObjective::weights`].

use std::collections::BTreeMap;

/// What the simulator gives the `ilp` and `greedy` planners as a job's value in a replay.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ReplayObjective {
    /// Least attained service first, with aging ([`ServiceObjective`]).
    #[default]
    AttainedService,
    /// The plan objective's defaults: every job priority 0, nothing preemptible, aging by the
    /// time since submission.
    Default,
}

impl ReplayObjective {
    /// The option's name on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            ReplayObjective::AttainedService => "attained-service",
            ReplayObjective::Default => "default",
        }
    }
}

/// What a waiting job's age is counted per, for the aging term.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AgingUnit {
    /// Per job: the wait the instance carries is the age over the job's GPUs, so the aging
    /// term adds the same per hour to every job's value.
    #[default]
    Job,
    /// Per GPU: the wait is the age, so the aging term grows with the job's GPUs.
    Gpu,
}

impl AgingUnit {
    /// The option's name on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            AgingUnit::Job => "job",
            AgingUnit::Gpu => "gpu",
        }
    }
}

/// The clock of a waiting job's age, which the aging term values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AgeClock {
    /// Seconds since submission: within a queue, first come, first served.
    #[default]
    Submission,
    /// Seconds spent waiting: since submission, less the time the job ran.
    Waiting,
}

impl AgeClock {
    /// The option's name on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            AgeClock::Submission => "submission",
            AgeClock::Waiting => "waiting",
        }
    }
}

/// The default queue threshold, GPU-seconds: 16 GPU-hours, the one threshold of the Tiresias
/// policy in the Pollux artifact (`simulator/tiresias.py`, `_queue_threshold = 3600 * 16`).
pub const DEFAULT_THRESHOLD: f64 = 57_600.0;

/// The default share of the cluster's GPUs from which a waiting gang does not preempt
/// ([`ServiceObjective::big_gang`]): chosen on pollux-1, -3, -5, -7 and philly-64 (0.3 to 0.5
/// gave the same runs there; 0.25 made pollux-1 and pollux-4 worse), checked on the other seven
/// (docs/research.md).
pub const DEFAULT_BIG_GANG: f64 = 0.4;

/// Settings of the attained-service objective.
#[derive(Debug, Clone, PartialEq)]
pub struct ServiceObjective {
    /// Queue thresholds in attained GPU-seconds, increasing.
    pub thresholds: Vec<f64>,
    /// Value per GPU one queue step takes off (the `priority` weight).
    pub step: f64,
    /// Value added per hour of age (the `aging` weight; [`ServiceObjective::age_clock`]), per
    /// job or per GPU ([`ServiceObjective::aging_unit`]).
    pub aging: f64,
    /// What the age is counted per.
    pub aging_unit: AgingUnit,
    /// Hours after which aging stops growing (`aging_cap_hours`).
    pub aging_cap_hours: f64,
    /// The clock of the age the aging term values.
    pub age_clock: AgeClock,
    /// Whether running jobs may be preempted by jobs of a higher queue.
    pub preempt: bool,
    /// A job preempted this many times runs to its end once it starts again (`None`: no
    /// limit).
    pub max_preemptions: Option<u32>,
    /// Starvation limit: a job that has waited at least this many times as long as it ran
    /// is promoted to the first queue (Tiresias' STARVE_LIMIT, here on the totals); `None`:
    /// never.
    pub starve: Option<f64>,
    /// Order waiting jobs of one queue by gang size too: fewer GPUs first, by powers of two
    /// ([`SIZE_CLASSES`] levels per queue, each worth `step / SIZE_CLASSES` per GPU).
    pub size_classes: bool,
    /// A waiting gang of at least this share of the cluster's GPUs does not preempt the first
    /// two queues: it waits for GPUs to free (`None`: every gang may preempt).
    pub big_gang: Option<f64>,
    /// Multiplier on the value a preempted job loses (the `preemption` weight; the plan
    /// objective's default is 1).
    pub victim: f64,
}

/// Gang-size levels per queue when [`ServiceObjective::size_classes`] is on: 1, 2-3, 4-7,
/// ..., 64 GPUs and more.
pub const SIZE_CLASSES: i64 = 7;

/// The attained-service queue of a job that has received `attained` GPU-seconds under
/// `thresholds`: how many it has reached (0: the first queue). `las` and the objective share it.
pub fn queue_of(thresholds: &[f64], attained: f64) -> usize {
    thresholds.iter().filter(|&&t| attained >= t).count()
}

impl Default for ServiceObjective {
    fn default() -> Self {
        ServiceObjective {
            thresholds: vec![DEFAULT_THRESHOLD],
            step: 0.3,
            aging: 48.0,
            aging_unit: AgingUnit::Job,
            aging_cap_hours: 48.0,
            age_clock: AgeClock::Submission,
            preempt: true,
            max_preemptions: None,
            starve: None,
            size_classes: false,
            big_gang: Some(DEFAULT_BIG_GANG),
            victim: 0.5,
        }
    }
}

impl ServiceObjective {
    /// The queue of a job that has received `attained` GPU-seconds: how many thresholds it
    /// has reached (0: the first queue).
    pub fn queue(&self, attained: f64) -> usize {
        queue_of(&self.thresholds, attained)
    }

    /// Priority levels per queue: [`SIZE_CLASSES`] with size classes, else 1.
    fn levels(&self) -> i64 {
        if self.size_classes {
            SIZE_CLASSES
        } else {
            1
        }
    }

    /// The instance priority of a running job that has received `attained` GPU-seconds: the
    /// first level of its queue (so a waiting job never preempts one of its own queue).
    pub fn priority(&self, attained: f64) -> i64 {
        -(self.queue(attained) as i64) * self.levels()
    }

    /// Whether a running job preempted `times` times before may be preempted again.
    pub fn preemptible(&self, times: u32) -> bool {
        self.preempt && self.max_preemptions.is_none_or(|m| times < m)
    }

    /// The size class of a waiting gang of `gpus` GPU-equivalents (0 without size classes).
    fn size_class(&self, gpus: f64) -> i64 {
        if !self.size_classes || gpus < 2.0 {
            return 0;
        }
        (gpus.log2().floor() as i64).min(SIZE_CLASSES - 1)
    }

    /// The instance priority of a job that has received `attained` GPU-seconds on `gpus`
    /// GPU-equivalents and waited `waited` seconds in all: its queue's, or the first queue's
    /// when it has waited at least [`ServiceObjective::starve`] times as long as it ran.
    pub fn rank(&self, attained: f64, waited: f64, gpus: f64) -> i64 {
        let ran = if gpus > 0.0 { attained / gpus } else { 0.0 };
        match self.starve {
            Some(k) if waited >= k * ran => 0,
            _ => self.priority(attained),
        }
    }

    /// [`ServiceObjective::rank`] of a waiting job of `gpus` GPU-equivalents on a cluster of
    /// `cluster_gpus`, lowered by its size class; a big gang
    /// ([`ServiceObjective::big_gang`]) ranks at most at the second queue's first level, so
    /// it preempts no job of the first two queues.
    pub fn waiting_rank(&self, attained: f64, waited: f64, gpus: f64, cluster_gpus: f64) -> i64 {
        let rank = self.rank(attained, waited, gpus) - self.size_class(gpus);
        if self
            .big_gang
            .is_some_and(|share| gpus >= share * cluster_gpus)
        {
            rank.min(-self.levels())
        } else {
            rank
        }
    }

    /// Seconds a job has waited: since submission, less the time it ran (`attained` GPU-seconds
    /// on `gpus` GPU-equivalents).
    pub fn waited(now: f64, submit: f64, attained: f64, gpus: f64) -> f64 {
        let ran = if gpus > 0.0 { attained / gpus } else { 0.0 };
        (now - submit - ran).max(0.0)
    }

    /// The wait of a waiting job of `gpus` GPU-equivalents the aging term values, seconds: its
    /// age on [`ServiceObjective::age_clock`] (since submission or
    /// [`ServiceObjective::waited`]), over its GPUs (at least one) where aging is per job.
    pub fn age(&self, now: f64, submit: f64, attained: f64, gpus: f64) -> f64 {
        let age = match self.age_clock {
            AgeClock::Submission => (now - submit).max(0.0),
            AgeClock::Waiting => Self::waited(now, submit, attained, gpus),
        };
        match self.aging_unit {
            AgingUnit::Job => age / gpus.max(1.0),
            AgingUnit::Gpu => age,
        }
    }

    /// How a report names these settings.
    pub fn describe(&self) -> String {
        let t: Vec<String> = self.thresholds.iter().map(|t| format!("{t}")).collect();
        let w = self.weights();
        format!(
            "attained-service (queues at {} GPU-s, priority weight {}, aging {}/h per {} ({} clock), \
             starvation limit {}, size classes {}, big gangs {}, preemption {}, victim weight {})",
            t.join(","),
            w["priority"],
            self.aging,
            self.aging_unit.as_str(),
            self.age_clock.as_str(),
            self.starve
                .map_or("none".to_string(), |k| format!("{k}x run time")),
            if self.size_classes { "on" } else { "off" },
            self.big_gang.map_or("preempt".to_string(), |f| {
                format!("of {}% of the GPUs wait", f * 100.0)
            }),
            match (self.preempt, self.max_preemptions) {
                (false, _) => "off".to_string(),
                (true, None) => "on".to_string(),
                (true, Some(m)) => format!("on, at most {m} per job"),
            },
            self.victim
        )
    }

    /// The objective weights the round's instance carries (`policy.weights`); the others keep
    /// their defaults. The lowest queue keeps a value per GPU of at least 0.1 so that starting
    /// a job always outweighs opening a node for it.
    pub fn weights(&self) -> BTreeMap<String, f64> {
        // Lowest priority: -(queues x levels + levels - 1); its value per GPU stays >= 0.1.
        let levels = self.levels() as f64;
        let lowest = (self.thresholds.len() as f64 + 1.0) * levels - 1.0;
        let step = (self.step / levels).min(0.9 / lowest.max(1.0));
        BTreeMap::from([
            ("priority".to_string(), step),
            ("aging".to_string(), self.aging),
            ("aging_cap_hours".to_string(), self.aging_cap_hours),
            ("preemption".to_string(), self.victim),
        ])
    }
}
