//! The set of tools an agent can call, shared safely between tasks.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, PoisonError, RwLock};

use crate::validation::ArgsValidator;
use crate::{SpecError, Tool, ToolFilter, ToolSpec, Typed, TypedTool};

/// A registered tool with its compiled input schema.
pub(crate) struct Entry {
    pub(crate) tool: Arc<dyn Tool>,
    /// A shared copy of the tool's spec, so gates can keep it without cloning the schema.
    pub(crate) spec: Arc<ToolSpec>,
    pub(crate) validator: Arc<ArgsValidator>,
}

/// Why a tool could not be registered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RegistryError {
    /// A tool with this name is already registered; use [`Registry::replace`] to swap it.
    #[error("a tool named `{name}` is already registered")]
    Duplicate {
        /// The name.
        name: String,
    },
    /// The tool's spec is unusable.
    #[error(transparent)]
    Spec(#[from] SpecError),
}

/// Tools by name. Cheap to clone; clones share the same tools, and every method is safe to
/// call from many tasks at once.
///
/// Listing is in name order, so the tool list sent to a model is stable across runs and
/// registration races (prompt caching depends on it).
///
/// ```
/// use mux_tool::{Registry, ToolFilter, ToolSpec};
/// # use mux_tool::{BoxFuture, Tool, ToolContext, ToolError, ToolOutput};
/// # struct Named(ToolSpec);
/// # impl Tool for Named {
/// #     fn spec(&self) -> &ToolSpec { &self.0 }
/// #     fn call(&self, _: serde_json::Value, _: ToolContext) -> BoxFuture<'_, Result<ToolOutput, ToolError>> {
/// #         Box::pin(async { Ok(ToolOutput::default()) })
/// #     }
/// # }
/// # let tool = |name: &str| Named(ToolSpec::new(name, "", serde_json::json!({"type": "object"})).unwrap());
/// let registry = Registry::new();
/// registry.register(tool("write_file"))?;
/// registry.register(tool("read_file"))?;
/// assert!(registry.register(tool("read_file")).is_err()); // duplicate
/// assert_eq!(registry.names(), ["read_file", "write_file"]);
/// assert_eq!(registry.view(ToolFilter::glob("read_*")?).names(), ["read_file"]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct Registry {
    tools: Arc<RwLock<BTreeMap<String, Arc<Entry>>>>,
    /// Bumped on every change of the tool set, for [`Registry::changes`].
    generation: Arc<tokio::sync::watch::Sender<u64>>,
}

impl Default for Registry {
    fn default() -> Self {
        Self {
            tools: Arc::default(),
            generation: Arc::new(tokio::sync::watch::Sender::new(0)),
        }
    }
}

impl Registry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// A receiver that sees a new value each time a tool is registered, replaced or removed
    /// (an MCP server sends `notifications/tools/list_changed` on it).
    pub fn changes(&self) -> tokio::sync::watch::Receiver<u64> {
        self.generation.subscribe()
    }

    fn changed(&self) {
        self.generation.send_modify(|generation| *generation += 1);
    }

    /// Registers `tool`; a second tool with the same name is an error.
    pub fn register(&self, tool: impl Tool) -> Result<(), RegistryError> {
        self.register_shared(Arc::new(tool))
    }

    /// Registers a typed tool.
    pub fn register_typed<T: TypedTool>(&self, tool: T) -> Result<(), RegistryError> {
        self.register(Typed::new(tool)?)
    }

    /// Registers a tool that is already shared.
    pub fn register_shared(&self, tool: Arc<dyn Tool>) -> Result<(), RegistryError> {
        let entry = Self::entry_for(tool)?;
        let name = entry.tool.spec().name.to_string();
        let mut tools = self.tools.write().unwrap_or_else(PoisonError::into_inner);
        if tools.contains_key(&name) {
            return Err(RegistryError::Duplicate { name });
        }
        tools.insert(name, Arc::new(entry));
        drop(tools);
        self.changed();
        Ok(())
    }

    /// Registers `tool`, replacing any tool of the same name, and returns the replaced one.
    pub fn replace(&self, tool: Arc<dyn Tool>) -> Result<Option<Arc<dyn Tool>>, RegistryError> {
        let entry = Self::entry_for(tool)?;
        let name = entry.tool.spec().name.to_string();
        let previous = self
            .tools
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(name, Arc::new(entry));
        self.changed();
        Ok(previous.map(|entry| Arc::clone(&entry.tool)))
    }

    /// Registers every tool of `other`, sharing its entries (the specs and argument
    /// validators are not built again). A name registered here already is an error, and then
    /// nothing is added.
    pub fn register_from(&self, other: &Registry) -> Result<(), RegistryError> {
        if Arc::ptr_eq(&self.tools, &other.tools) {
            return match other.read().keys().next() {
                Some(name) => Err(RegistryError::Duplicate { name: name.clone() }),
                None => Ok(()),
            };
        }
        let entries = other.read().clone();
        if entries.is_empty() {
            return Ok(());
        }
        let mut tools = self.tools.write().unwrap_or_else(PoisonError::into_inner);
        if let Some(name) = entries.keys().find(|name| tools.contains_key(*name)) {
            return Err(RegistryError::Duplicate { name: name.clone() });
        }
        tools.extend(entries);
        drop(tools);
        self.changed();
        Ok(())
    }

    /// Registers every tool of `other`, sharing its entries, replacing tools of the same
    /// name; returns the names replaced.
    pub fn replace_from(&self, other: &Registry) -> Vec<String> {
        if Arc::ptr_eq(&self.tools, &other.tools) {
            return Vec::new();
        }
        let entries = other.read().clone();
        if entries.is_empty() {
            return Vec::new();
        }
        let mut tools = self.tools.write().unwrap_or_else(PoisonError::into_inner);
        let replaced = entries
            .into_iter()
            .filter_map(|(name, entry)| tools.insert(name.clone(), entry).map(|_| name))
            .collect();
        drop(tools);
        self.changed();
        replaced
    }

    /// Removes the tool called `name` and returns it.
    pub fn remove(&self, name: &str) -> Option<Arc<dyn Tool>> {
        let removed = self
            .tools
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(name);
        if removed.is_some() {
            self.changed();
        }
        removed.map(|entry| Arc::clone(&entry.tool))
    }

    /// The tool called `name`.
    pub fn get(&self, name: &str) -> Option<Arc<dyn Tool>> {
        self.entry(name).map(|entry| Arc::clone(&entry.tool))
    }

    /// Whether a tool called `name` is registered.
    pub fn contains(&self, name: &str) -> bool {
        self.read().contains_key(name)
    }

    /// The number of tools.
    pub fn len(&self) -> usize {
        self.read().len()
    }

    /// Whether there are no tools.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Every tool, in name order.
    pub fn list(&self) -> Vec<Arc<dyn Tool>> {
        self.view(ToolFilter::All).list()
    }

    /// Every tool name, in order.
    pub fn names(&self) -> Vec<String> {
        self.read().keys().cloned().collect()
    }

    /// Every spec, in name order.
    pub fn specs(&self) -> Vec<ToolSpec> {
        self.view(ToolFilter::All).specs()
    }

    /// Every spec, in name order, shared rather than copied (cheap on every model request).
    pub fn shared_specs(&self) -> Vec<Arc<ToolSpec>> {
        self.view(ToolFilter::All).shared_specs()
    }

    /// A live view of the tools `filter` accepts. Tools registered later appear in it.
    pub fn view(&self, filter: ToolFilter) -> RegistryView {
        RegistryView {
            registry: self.clone(),
            filter,
        }
    }

    pub(crate) fn entry(&self, name: &str) -> Option<Arc<Entry>> {
        self.read().get(name).cloned()
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, BTreeMap<String, Arc<Entry>>> {
        self.tools.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn entry_for(tool: Arc<dyn Tool>) -> Result<Entry, RegistryError> {
        let validator = ArgsValidator::shared(tool.spec())?;
        let spec = Arc::new(tool.spec().clone());
        Ok(Entry {
            tool,
            spec,
            validator,
        })
    }
}

impl fmt::Debug for Registry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Registry")
            .field("tools", &self.names())
            .finish()
    }
}

/// The tools of a [`Registry`] that a [`ToolFilter`] accepts, read live.
#[derive(Clone, Debug)]
pub struct RegistryView {
    registry: Registry,
    filter: ToolFilter,
}

impl RegistryView {
    /// The filter of this view.
    pub fn filter(&self) -> &ToolFilter {
        &self.filter
    }

    /// The underlying registry.
    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// The tool called `name`, if it is visible.
    pub fn get(&self, name: &str) -> Option<Arc<dyn Tool>> {
        self.entry(name).map(|entry| Arc::clone(&entry.tool))
    }

    /// Visible tools in name order.
    pub fn list(&self) -> Vec<Arc<dyn Tool>> {
        self.visible(|entry| Arc::clone(&entry.tool))
    }

    /// Visible tool names in order.
    pub fn names(&self) -> Vec<String> {
        self.visible(|entry| entry.tool.spec().name.to_string())
    }

    /// Visible specs in name order.
    pub fn specs(&self) -> Vec<ToolSpec> {
        self.visible(|entry| entry.tool.spec().clone())
    }

    /// Visible specs in name order, shared rather than copied.
    pub fn shared_specs(&self) -> Vec<Arc<ToolSpec>> {
        self.visible(|entry| Arc::clone(&entry.spec))
    }

    /// Up to three visible names closest to `name`, best first, for "did you mean" messages.
    pub fn suggest(&self, name: &str) -> Vec<String> {
        let wanted = name.to_ascii_lowercase();
        let mut scored: Vec<(f64, String)> = self
            .names()
            .into_iter()
            .filter_map(|candidate| {
                let lower = candidate.to_ascii_lowercase();
                let mut score = strsim::jaro_winkler(&wanted, &lower);
                if !wanted.is_empty() && (lower.contains(&wanted) || wanted.contains(&lower)) {
                    score = score.max(0.9);
                }
                (score >= 0.75).then_some((score, candidate))
            })
            .collect();
        scored.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
        scored.into_iter().take(3).map(|(_, name)| name).collect()
    }

    pub(crate) fn entry(&self, name: &str) -> Option<Arc<Entry>> {
        self.registry
            .entry(name)
            .filter(|entry| self.filter.matches(entry.tool.spec()))
    }

    fn visible<T>(&self, map: impl Fn(&Entry) -> T) -> Vec<T> {
        self.registry
            .read()
            .values()
            .filter(|entry| self.filter.matches(entry.tool.spec()))
            .map(|entry| map(entry))
            .collect()
    }
}

impl From<Registry> for RegistryView {
    fn from(registry: Registry) -> Self {
        registry.view(ToolFilter::All)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::{BoxFuture, ToolContext, ToolError, ToolOutput};

    struct Named(ToolSpec);
    impl Tool for Named {
        fn spec(&self) -> &ToolSpec {
            &self.0
        }
        fn call(
            &self,
            _: serde_json::Value,
            _: ToolContext,
        ) -> BoxFuture<'_, Result<ToolOutput, ToolError>> {
            Box::pin(async { Ok(ToolOutput::default()) })
        }
    }

    fn tool(name: &str) -> Named {
        Named(ToolSpec::new(name, "", serde_json::json!({"type": "object"})).unwrap())
    }

    #[test]
    fn tools_taken_from_another_registry_share_its_entries() {
        let agent = Registry::new();
        agent.register(tool("a")).unwrap();
        agent.register(tool("b")).unwrap();
        let conversation = Registry::new();
        conversation.register(tool("c")).unwrap();
        conversation.register_from(&agent).unwrap();
        assert_eq!(conversation.names(), ["a", "b", "c"]);
        // The same spec, not a copy of it.
        assert!(Arc::ptr_eq(
            &agent.shared_specs()[0],
            &conversation.shared_specs()[0]
        ));
        // A name taken already: an error, and nothing added.
        let other = Registry::new();
        other.register(tool("b")).unwrap();
        other.register(tool("d")).unwrap();
        assert_eq!(
            conversation.register_from(&other),
            Err(RegistryError::Duplicate { name: "b".into() })
        );
        assert!(!conversation.contains("d"));
        assert!(conversation.register_from(&conversation).is_err());
        // Replacing takes the other's tool and says which names it replaced.
        assert_eq!(conversation.replace_from(&other), ["b"]);
        assert!(conversation.contains("d"));
        assert!(Arc::ptr_eq(
            &conversation.get("b").unwrap(),
            &other.get("b").unwrap()
        ));
    }

    #[test]
    fn every_change_of_the_tool_set_is_seen_and_nothing_else() {
        let registry = Registry::new();
        let mut changes = registry.changes();
        assert!(!changes.has_changed().unwrap());
        registry.register(tool("a")).unwrap();
        assert!(changes.has_changed().unwrap());
        changes.mark_unchanged();
        assert!(registry.register(tool("a")).is_err());
        assert!(registry.remove("missing").is_none());
        let _ = registry.get("a");
        assert!(!changes.has_changed().unwrap(), "no change, no signal");
        registry.replace(Arc::new(tool("a"))).unwrap();
        assert!(changes.has_changed().unwrap());
        changes.mark_unchanged();
        registry.remove("a");
        assert!(changes.has_changed().unwrap());
        // Clones share the signal.
        changes.mark_unchanged();
        registry.clone().register(tool("b")).unwrap();
        assert!(changes.has_changed().unwrap());
    }
}
