//! Keeping a mux-tool `Registry` in step with a coordinator's tools.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, PoisonError};

use mux_tool::{Registry, Tool};
use serde::Serialize;

use crate::{Coordinator, Events, McpEvent, McpFilter, McpTool, Received};

/// What one [`RegistrySync::sync`] changed, each list sorted by tool name.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct SyncReport {
    /// Proxies registered for tools that appeared.
    pub added: Vec<String>,
    /// Proxies removed because their tool or server went away (or no longer passes the
    /// filter).
    pub removed: Vec<String>,
    /// Proxies replaced because their tool's description, schema or annotations changed.
    pub updated: Vec<String>,
    /// Qualified names left alone because the registry holds another tool of that name
    /// (a tool this sync did not register is never replaced or removed). A conflict is
    /// reported by the sync that first meets it, not again while it lasts;
    /// [`RegistrySync::resync`] reports every current one.
    pub conflicts: Vec<String>,
}

impl SyncReport {
    /// Whether nothing changed and nothing conflicted.
    pub fn is_empty(&self) -> bool {
        self.added.is_empty()
            && self.removed.is_empty()
            && self.updated.is_empty()
            && self.conflicts.is_empty()
    }
}

struct State {
    events: Events,
    /// The proxies this sync registered, by qualified name.
    installed: BTreeMap<String, Arc<McpTool>>,
    /// The conflicts already reported, so a lasting one is reported once.
    conflicts: BTreeSet<String>,
    /// Whether the coordinator may have changed since the last reconcile.
    dirty: bool,
}

/// Registers a coordinator's tool proxies in a [`Registry`] and keeps them current: call
/// [`RegistrySync::sync`] whenever the tool list should be fresh (an agent loop calls it
/// before each model request). Tools that appear (a server connects or reconnects, or sends
/// `tools/list_changed`) are registered, tools that go away are removed, changed ones are
/// replaced. Tools already in the registry under another owner are never touched.
///
/// `sync` is cheap when nothing changed: it drains the coordinator's events and rebuilds the
/// proxies only after a state change, a tool-list change or a lag.
///
/// ```no_run
/// use mux_mcp::{Coordinator, CoordinatorConfig, McpFilter, RegistrySync, ServerSpec};
/// use mux_tool::{Registry, ToolFilter};
///
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// let coordinator = Coordinator::new(CoordinatorConfig::default());
/// coordinator
///     .start_all_and_wait(vec![ServerSpec::stdio("files", "mcp-files", ["/srv"])])
///     .await?;
/// let registry = Registry::new();
/// let sync = RegistrySync::new(&coordinator, registry.clone())
///     .with_filter(McpFilter::Spec(ToolFilter::ReadOnly));
/// let report = sync.sync();
/// println!("registered {:?}", report.added);
/// # Ok(()) }
/// ```
pub struct RegistrySync {
    coordinator: Coordinator,
    registry: Registry,
    filter: McpFilter,
    state: Mutex<State>,
}

impl std::fmt::Debug for RegistrySync {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RegistrySync")
            .field("coordinator", &self.coordinator)
            .field("filter", &self.filter)
            .field("installed", &self.installed())
            .finish_non_exhaustive()
    }
}

impl RegistrySync {
    /// A sync of every tool of `coordinator` into `registry`. Nothing is registered until
    /// the first [`RegistrySync::sync`].
    pub fn new(coordinator: &Coordinator, registry: Registry) -> Self {
        Self {
            state: Mutex::new(State {
                events: coordinator.subscribe(),
                installed: BTreeMap::new(),
                conflicts: BTreeSet::new(),
                dirty: true,
            }),
            coordinator: coordinator.clone(),
            registry,
            filter: McpFilter::All,
        }
    }

    /// Only the tools `filter` accepts.
    pub fn with_filter(mut self, filter: McpFilter) -> Self {
        self.filter = filter;
        self.lock().dirty = true;
        self
    }

    /// The coordinator.
    pub fn coordinator(&self) -> &Coordinator {
        &self.coordinator
    }

    /// The registry the proxies go into.
    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// The filter.
    pub fn filter(&self) -> &McpFilter {
        &self.filter
    }

    /// The names of the proxies this sync has registered, sorted.
    pub fn installed(&self) -> Vec<String> {
        self.lock().installed.keys().cloned().collect()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Brings the registry up to date if anything changed since the last call.
    pub fn sync(&self) -> SyncReport {
        let mut state = self.lock();
        while let Some(received) = state.events.try_recv() {
            let changes_tools = match received {
                Received::Event(event) => matches!(
                    event,
                    McpEvent::StateChanged { .. } | McpEvent::ToolsChanged { .. }
                ),
                // Missed events may have been changes.
                Received::Lagged { .. } => true,
            };
            state.dirty |= changes_tools;
        }
        if !state.dirty {
            return SyncReport::default();
        }
        state.dirty = false;
        self.reconcile(&mut state)
    }

    /// Brings the registry up to date now, whether or not an event announced a change, and
    /// reports every current conflict.
    pub fn resync(&self) -> SyncReport {
        let mut state = self.lock();
        while state.events.try_recv().is_some() {}
        state.dirty = false;
        state.conflicts.clear();
        self.reconcile(&mut state)
    }

    /// Removes every proxy this sync registered (for example when the servers stop).
    /// Returns their names. A later [`RegistrySync::sync`] registers them again.
    pub fn clear(&self) -> Vec<String> {
        let mut state = self.lock();
        let installed = std::mem::take(&mut state.installed);
        state.dirty = true;
        installed
            .into_iter()
            .filter(|(name, proxy)| self.remove_if_ours(name, proxy))
            .map(|(name, _)| name)
            .collect()
    }

    fn reconcile(&self, state: &mut State) -> SyncReport {
        let wanted: BTreeMap<String, Arc<McpTool>> = self
            .coordinator
            .proxies()
            .into_iter()
            .filter(|proxy| self.filter.matches(proxy))
            .map(|proxy| (proxy.spec().name.to_string(), proxy))
            .collect();
        let mut report = SyncReport::default();
        let mut conflicts = BTreeSet::new();
        let stale: Vec<String> = state
            .installed
            .keys()
            .filter(|name| !wanted.contains_key(*name))
            .cloned()
            .collect();
        for name in stale {
            if let Some(proxy) = state.installed.remove(&name)
                && self.remove_if_ours(&name, &proxy)
            {
                report.removed.push(name);
            }
        }
        for (name, proxy) in wanted {
            let current = state.installed.get(&name);
            if current.is_some_and(|old| same_tool(old, &proxy)) {
                continue;
            }
            let ours = current.is_some_and(|old| self.is_ours(&name, old));
            if !ours && self.registry.contains(&name) {
                if !state.conflicts.contains(&name) {
                    report.conflicts.push(name.clone());
                }
                conflicts.insert(name);
                continue;
            }
            match self.registry.replace(Arc::clone(&proxy) as Arc<dyn Tool>) {
                Ok(_) => {
                    if current.is_some() {
                        report.updated.push(name.clone());
                    } else {
                        report.added.push(name.clone());
                    }
                    state.installed.insert(name, proxy);
                }
                Err(err) => {
                    state.installed.remove(&name);
                    tracing::warn!(tool = name, %err, "cannot register MCP tool");
                }
            }
        }
        state.conflicts = conflicts;
        report
    }

    /// Whether the registry's tool `name` is `proxy` (and not someone else's tool).
    fn is_ours(&self, name: &str, proxy: &Arc<McpTool>) -> bool {
        self.registry.get(name).is_some_and(|tool| {
            std::ptr::addr_eq(Arc::as_ptr(&tool), Arc::as_ptr(proxy) as *const dyn Tool)
        })
    }

    fn remove_if_ours(&self, name: &str, proxy: &Arc<McpTool>) -> bool {
        self.is_ours(name, proxy) && self.registry.remove(name).is_some()
    }
}

/// Whether two proxies call the same tool with the same spec.
fn same_tool(a: &McpTool, b: &McpTool) -> bool {
    a.server() == b.server() && a.remote_name() == b.remote_name() && a.spec() == b.spec()
}
