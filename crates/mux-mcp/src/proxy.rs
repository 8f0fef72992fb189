//! Tool proxies: each MCP tool as a mux `Tool` that routes calls through the coordinator.

use std::sync::Weak;

use mux_tool::{
    BoxFuture, SpecError, Tool, ToolAnnotations, ToolContext, ToolError, ToolKind, ToolOutput,
    ToolSpec,
};
use serde_json::{Value, json};

use crate::content::to_output;
use crate::coordinator::{CoordInner, Coordinator};
use crate::{CallError, CallFailure, ToolInfo};

/// An MCP tool as a mux tool. It names its server and tool, not a connection, so it keeps
/// working after the coordinator reconnects.
#[derive(Debug)]
pub struct McpTool {
    spec: ToolSpec,
    server: String,
    tool: String,
    coordinator: Weak<CoordInner>,
}

fn hint(annotations: Option<&Value>, key: &str) -> Option<bool> {
    annotations
        .and_then(|a| a.get(key))
        .and_then(Value::as_bool)
}

/// MCP annotations as mux annotations, with MCP's defaults for absent hints (a tool is
/// assumed destructive and open-world unless it says otherwise).
///
/// MCP has no presentation kind, so the kind is conservative: a tool that says it only reads
/// (`readOnlyHint`) shows as [`ToolKind::Read`], any other as [`ToolKind::Other`].
/// `openWorldHint` is not taken as a fetch: MCP assumes it for every tool that does not deny it.
fn annotations(info: &ToolInfo) -> ToolAnnotations {
    let a = info.annotations.as_ref();
    let read_only = hint(a, "readOnlyHint").unwrap_or(false);
    ToolAnnotations {
        read_only,
        destructive: !read_only && hint(a, "destructiveHint").unwrap_or(true),
        idempotent: hint(a, "idempotentHint").unwrap_or(false),
        open_world: hint(a, "openWorldHint").unwrap_or(true),
        kind: if read_only {
            ToolKind::Read
        } else {
            ToolKind::Other
        },
    }
}

impl McpTool {
    pub(crate) fn new(
        name: String,
        server: &str,
        info: &ToolInfo,
        coordinator: Weak<CoordInner>,
    ) -> Result<Self, SpecError> {
        let mut spec = ToolSpec::new(name, info.description.clone(), info.input_schema.clone())?
            .with_annotations(annotations(info));
        if let Some(schema) = &info.output_schema {
            spec = spec.with_output_schema(schema.clone());
        }
        Ok(Self {
            spec,
            server: server.to_string(),
            tool: info.name.clone(),
            coordinator,
        })
    }

    /// The server the tool lives on.
    pub fn server(&self) -> &str {
        &self.server
    }

    /// The tool's name on its server.
    pub fn remote_name(&self) -> &str {
        &self.tool
    }

    async fn run(&self, input: Value, cx: ToolContext) -> Result<ToolOutput, ToolError> {
        let Some(inner) = self.coordinator.upgrade() else {
            return Err(ToolError::failed(format!(
                "the MCP coordinator for server `{}` has been dropped",
                self.server
            )));
        };
        let coordinator = Coordinator::from_inner(inner);
        match coordinator
            .call_tool(&self.server, &self.tool, input, &cx)
            .await
        {
            Ok(result) => Ok(to_output(result, &self.server, &self.tool)),
            Err(CallError {
                failure: CallFailure::TimedOut { timeout },
                ..
            }) => Ok(ToolOutput::error(format!(
                "The tool `{}` on MCP server `{}` did not finish within {} s and was cancelled. \
                 It may be slow or stuck: retry with a simpler request or smaller input, or try \
                 another approach.",
                self.tool,
                self.server,
                timeout.as_secs_f64()
            ))
            .with_metadata(
                "mcp",
                json!({"server": self.server, "tool": self.tool, "timed_out": true}),
            )),
            Err(CallError {
                failure: CallFailure::Cancelled,
                ..
            }) => Err(ToolError::Cancelled),
            Err(err) => Err(ToolError::other(err)),
        }
    }
}

impl Tool for McpTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn call(&self, input: Value, cx: ToolContext) -> BoxFuture<'_, Result<ToolOutput, ToolError>> {
        Box::pin(self.run(input, cx))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absent_hints_take_mcp_defaults() {
        let info = |annotations: Option<Value>| ToolInfo {
            name: "t".into(),
            description: String::new(),
            input_schema: json!({"type": "object"}),
            output_schema: None,
            annotations,
        };
        let plain = annotations(&info(None));
        assert!(plain.destructive && plain.open_world && !plain.read_only);
        let read = annotations(&info(Some(
            json!({"readOnlyHint": true, "openWorldHint": false}),
        )));
        assert!(read.read_only && !read.destructive && !read.open_world);
    }

    #[test]
    fn only_a_read_only_hint_gives_a_kind() {
        let kind = |annotations: Option<Value>| annotations_of(annotations).kind;
        assert_eq!(kind(None), ToolKind::Other);
        assert_eq!(kind(Some(json!({"readOnlyHint": true}))), ToolKind::Read);
        assert_eq!(kind(Some(json!({"readOnlyHint": false}))), ToolKind::Other);
        assert_eq!(kind(Some(json!({"readOnlyHint": "yes"}))), ToolKind::Other);
        assert_eq!(kind(Some(json!({"openWorldHint": true}))), ToolKind::Other);
        assert_eq!(
            kind(Some(
                json!({"destructiveHint": true, "readOnlyHint": false})
            )),
            ToolKind::Other
        );
    }

    fn annotations_of(annotations: Option<Value>) -> ToolAnnotations {
        super::annotations(&ToolInfo {
            name: "t".into(),
            description: String::new(),
            input_schema: json!({"type": "object"}),
            output_schema: None,
            annotations,
        })
    }
}
