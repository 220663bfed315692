//! The nodes a placement may use: every node of the cluster, or a few listed ones (the region
//! a repacking move empties and fills again, [`crate::heuristics::repack`]).

use crate::instance::NodeIx;

/// The nodes a placement may use.
#[derive(Debug, Clone, Copy)]
pub enum Nodes<'a> {
    /// Every node.
    All,
    /// Only these nodes.
    Only(&'a [NodeIx]),
}

impl<'a> Nodes<'a> {
    /// The nodes, in index order for [`Nodes::All`] and in list order otherwise, of a cluster
    /// of `count` nodes.
    pub fn iter(self, count: usize) -> Box<dyn Iterator<Item = NodeIx> + 'a> {
        match self {
            Nodes::All => Box::new(0..count),
            Nodes::Only(list) => Box::new(list.iter().copied()),
        }
    }
}
