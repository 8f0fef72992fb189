//! An agent's id: what errors, events and handles name an agent by.

use std::fmt;

use serde::{Deserialize, Serialize};

/// An agent's id, unique within its runtime (`agent-7`).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct AgentId(pub(crate) String);

impl AgentId {
    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for AgentId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}
