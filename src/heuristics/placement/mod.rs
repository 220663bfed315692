//! Where one job goes in a round state: the placement core every planner builds on.
//!
//! - [`free`]: what is free, per GPU and per node, for work of a priority, and the node's free
//!   shape ([`crate::instance::task_dist::NodeFree`]) that fragmentation is measured on.
//! - [`fragmentation`]: the growth of a node's fragmentation against a task distribution when a
//!   job takes part of it, and the one-node choices that keep that growth least.
//! - [`best_fit`]: the one-node choices by best fit (in use before empty, fewest left).
//! - [`scorer`]: [`NodeScorer`], which of the two rules picks a job's node.
//! - [`nodes`]: [`Nodes`], the nodes a placement may use (all, or a few listed).
//! - `offers`: what each node offers a gang search, and the packing of a gang over a
//!   domain's offers.
//! - [`search`]: [`find_placement`], a job's node(s): one node by the scorer, else the
//!   tightest topology domain that holds the gang; [`find_placement_on`] the same on a few
//!   listed nodes ([`Nodes`]).
//!
//! The greedy and the baselines depend on this module, never the reverse. A new node rule is a
//! new [`NodeScorer`] variant with its three choices (whole gang, sharer, CPU-only).

pub mod best_fit;
pub mod fragmentation;
pub mod free;
pub mod nodes;
mod offers;
pub mod scorer;
pub mod search;

pub use nodes::Nodes;
pub use scorer::NodeScorer;
pub use search::{find_placement, find_placement_on};
