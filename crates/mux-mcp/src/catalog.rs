//! The coordinator's tools: a proxy for every tool of every connected server, all of them or
//! those a filter or mode accepts.

use std::sync::Arc;

use mux_tool::Tool;

use crate::ToolInfo;
use crate::coordinator::Coordinator;
use crate::modes::{McpFilter, ToolModes, UnknownMode};
use crate::naming::unique_names;
use crate::proxy::McpTool;

impl Coordinator {
    /// Tool proxies for every tool of every connected server, servers by name and tools in
    /// the order each server lists them. Names are `mcp__<server>__<tool>`, unique within the
    /// set. Proxies route through the coordinator, so they keep working across reconnects.
    pub fn tools(&self) -> Vec<Arc<dyn Tool>> {
        self.proxies()
            .into_iter()
            .map(|proxy| proxy as Arc<dyn Tool>)
            .collect()
    }

    /// The proxies `filter` accepts, in the order of [`Coordinator::tools`].
    pub fn tools_matching(&self, filter: &McpFilter) -> Vec<Arc<dyn Tool>> {
        self.proxies()
            .into_iter()
            .filter(|proxy| filter.matches(proxy))
            .map(|proxy| proxy as Arc<dyn Tool>)
            .collect()
    }

    /// The proxies of mode `mode`.
    pub fn tools_for_mode(
        &self,
        modes: &ToolModes,
        mode: &str,
    ) -> Result<Vec<Arc<dyn Tool>>, UnknownMode> {
        Ok(self.tools_matching(modes.get(mode)?))
    }

    /// The same proxies as [`Coordinator::tools`], with their concrete type.
    pub fn proxies(&self) -> Vec<Arc<McpTool>> {
        let states = self.states();
        let infos: Vec<(&str, &ToolInfo)> = states
            .iter()
            .flat_map(|(server, state)| {
                state
                    .tools()
                    .iter()
                    .map(move |info| (server.as_str(), info))
            })
            .collect();
        let pairs: Vec<(&str, &str)> = infos
            .iter()
            .map(|(server, info)| (*server, info.name.as_str()))
            .collect();
        let names = unique_names(&pairs);
        let mut tools = Vec::new();
        for (name, (server, info)) in names.into_iter().zip(infos) {
            match McpTool::new(name, server, info, self.downgrade()) {
                Ok(tool) => tools.push(Arc::new(tool)),
                Err(err) => tracing::warn!(server, tool = info.name, %err, "skipping MCP tool"),
            }
        }
        tools
    }
}
