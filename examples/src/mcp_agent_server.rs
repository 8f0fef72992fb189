//! The `mcp_agent_server` example's logic: the examples' coding agent, confined to a root and
//! gated by Claude-style settings, served as one MCP tool `ask` over stdio or Streamable HTTP
//! ([`AgentTool`]).

use std::path::PathBuf;

use mux::mcp::AgentTool;
use mux::mcp::McpServer;

use crate::offline::ChosenModel;

/// The command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Args {
    /// The directory the agent works in (its tools are confined to it).
    pub root: PathBuf,
    /// Claude-style settings files (`permissions.allow` / `ask` / `deny`), in order.
    pub settings: Vec<PathBuf>,
    /// Serve Streamable HTTP on `127.0.0.1:PORT` instead of stdio.
    pub http: Option<u16>,
    /// Use the offline scripted model even when a provider key is set.
    pub offline: bool,
}

/// The usage line.
pub const USAGE: &str =
    "usage: mcp_agent_server --root DIR [--settings FILE]... [--http PORT] [--offline]";

impl Args {
    /// Parses the arguments after the program name.
    pub fn parse(args: impl IntoIterator<Item = String>) -> Result<Self, String> {
        let mut offline = false;
        let common = crate::mcp_tools_server::Args::parse_with(args, USAGE, |flag| {
            offline |= flag == "--offline";
            flag == "--offline"
        })?;
        Ok(Self {
            root: common.root,
            settings: common.settings,
            http: common.http,
            offline,
        })
    }
}

/// The model `args` asks for: the offline one with `--offline`, else
/// [`choose_model`](crate::offline::choose_model)'s.
pub fn model(args: &Args) -> Result<ChosenModel, String> {
    if args.offline {
        return Ok(ChosenModel {
            client: std::sync::Arc::new(crate::offline::offline_model()),
            model: "scripted".into(),
            description: "--offline: running on the offline scripted model.".into(),
        });
    }
    crate::offline::choose_model()
}

/// The server for `args` on `model`: the coding agent at the root, its permissions from the
/// settings (read-only tools run; what no rule allows asks the caller), as the tool `ask`.
pub fn server(args: &Args, model: ChosenModel) -> Result<McpServer, String> {
    let root = args
        .root
        .canonicalize()
        .map_err(|err| format!("--root {}: {err}", args.root.display()))?;
    let permissions = crate::mcp_tools_server::settings_permissions(&root, &args.settings)?;
    let agent = crate::coding_agent::builder(model.client, &model.model)
        .root(&root)
        .permissions(permissions)
        .build()
        .map_err(|err| err.to_string())?;
    let server = AgentTool::new(agent)
        .with_description(format!(
            "Ask a coding agent working in {} to do a task. It reads, edits and runs commands \
             there (asking you before anything its settings do not allow) and answers with its \
             reply and a session_id; pass the session_id again to continue the conversation.",
            root.display()
        ))
        .into_server()
        .map_err(|err| err.to_string())?;
    Ok(server
        .with_name("mux-agent", env!("CARGO_PKG_VERSION"))
        .with_instructions(
            "One tool, `ask`: a coding agent. Progress arrives as notifications while it works.",
        ))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;

    fn parse(args: &[&str]) -> Result<Args, String> {
        Args::parse(args.iter().map(|s| s.to_string()))
    }

    #[test]
    fn the_command_line_is_read_strictly() {
        let args = parse(&["--root", "/tmp", "--settings", "a.json", "--http", "9"]).unwrap();
        assert_eq!(args.settings.len(), 1);
        assert!(!args.offline);
        assert!(parse(&["--offline", "--root", "/"]).unwrap().offline);
        assert_eq!(args.http, Some(9));
        assert!(parse(&[]).unwrap_err().contains("--root is required"));
        assert!(parse(&["--root"]).unwrap_err().contains("needs a value"));
        assert!(
            parse(&["--root", "/", "--http", "x"])
                .unwrap_err()
                .contains("port number")
        );
        assert!(
            parse(&["--root", "/", "--bogus"])
                .unwrap_err()
                .contains("unknown argument")
        );
    }
}
