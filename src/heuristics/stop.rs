//! When a local search on a finished plan ([`super::trade`], [`super::repack`]) stops: at a
//! deadline ([`Instant`]), or at a deadline or as soon as something else happens
//! ([`DeadlineOr`]: the aggregated model answering while the greedy plan is improved in the
//! meantime, [`crate::solve::aggregated`]).

use std::time::Instant;

/// A condition a search looks at before each move; once it holds, the search returns the
/// plan it has.
pub trait StopWhen {
    /// Whether the search must stop now.
    fn reached(&self) -> bool;
}

impl StopWhen for Instant {
    fn reached(&self) -> bool {
        Instant::now() >= *self
    }
}

/// A deadline, or an event that comes first (`event` returns true once it has happened).
pub struct DeadlineOr<F: Fn() -> bool> {
    /// The deadline.
    pub until: Instant,
    /// The event.
    pub event: F,
}

impl<F: Fn() -> bool> StopWhen for DeadlineOr<F> {
    fn reached(&self) -> bool {
        (self.event)() || Instant::now() >= self.until
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;
    use std::time::Duration;

    #[test]
    fn a_deadline_or_an_event_stops_at_whichever_comes_first() {
        let later = Instant::now() + Duration::from_secs(60);
        let happened = Cell::new(false);
        let stop = DeadlineOr {
            until: later,
            event: || happened.get(),
        };
        assert!(!stop.reached());
        happened.set(true);
        assert!(stop.reached());
        let past = DeadlineOr {
            until: Instant::now(),
            event: || false,
        };
        assert!(past.reached());
        assert!(!later.reached());
    }
}
