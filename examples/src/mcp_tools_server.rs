//! The `mcp_tools_server` example's logic: mux's built-in tools, confined to a root and gated
//! by Claude-style settings files, as an MCP server over stdio or Streamable HTTP.

use std::path::PathBuf;

use mux::mcp::McpServer;
use mux::mcp::ToolServer;
use mux::permission::{PathContext, Permissions, Scope, ScopeRules};
use mux::tool::Registry;
use mux::tool::builtin::{self, Sandbox};

/// The command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Args {
    /// The directory the tools are confined to.
    pub root: PathBuf,
    /// Claude-style settings files (`permissions.allow` / `ask` / `deny`), in order.
    pub settings: Vec<PathBuf>,
    /// Serve Streamable HTTP on `127.0.0.1:PORT` instead of stdio.
    pub http: Option<u16>,
}

/// The usage line.
pub const USAGE: &str = "usage: mcp_tools_server --root DIR [--settings FILE]... [--http PORT]";

impl Args {
    /// Parses the arguments after the program name.
    pub fn parse(args: impl IntoIterator<Item = String>) -> Result<Self, String> {
        Self::parse_with(args, USAGE, |_| false)
    }

    /// Parses `--root`, `--settings` and `--http`, and hands every other argument to `flag`,
    /// which says whether it took it (a server with flags of its own); `usage` goes into the
    /// errors.
    pub fn parse_with(
        args: impl IntoIterator<Item = String>,
        usage: &str,
        mut flag: impl FnMut(&str) -> bool,
    ) -> Result<Self, String> {
        let mut root = None;
        let mut settings = Vec::new();
        let mut http = None;
        let mut args = args.into_iter();
        while let Some(arg) = args.next() {
            let mut value = |flag: &str| {
                args.next()
                    .ok_or_else(|| format!("{flag} needs a value; {usage}"))
            };
            match arg.as_str() {
                "--root" => root = Some(PathBuf::from(value("--root")?)),
                "--settings" => settings.push(PathBuf::from(value("--settings")?)),
                "--http" => {
                    let port = value("--http")?;
                    http = Some(
                        port.parse::<u16>()
                            .map_err(|_| format!("--http takes a port number, not `{port}`"))?,
                    );
                }
                other if flag(other) => {}
                other => return Err(format!("unknown argument `{other}`; {usage}")),
            }
        }
        let root = root.ok_or_else(|| format!("--root is required; {usage}"))?;
        Ok(Self {
            root,
            settings,
            http,
        })
    }
}

/// The permissions at `root` from Claude-style settings `files` (`--settings`, in order, each
/// a project scope); a missing or unreadable file is an error naming it.
pub fn settings_permissions(
    root: &std::path::Path,
    files: &[PathBuf],
) -> Result<Permissions, String> {
    let context = PathContext::new(root);
    let mut permissions = Permissions::builder(context.clone());
    for file in files {
        if !file.is_file() {
            return Err(format!("--settings {}: no such file", file.display()));
        }
        let rules = ScopeRules::load(file, &context)
            .map_err(|err| format!("--settings {}: {err}", file.display()))?;
        permissions = permissions.scope(Scope::Project, rules);
    }
    Ok(permissions.build())
}

/// The server for `args`: the built-in tools in a sandbox at the root, and a permission gate
/// over the settings whose questions go to the calling client.
pub fn server(args: &Args) -> Result<McpServer, String> {
    let root = args
        .root
        .canonicalize()
        .map_err(|err| format!("--root {}: {err}", args.root.display()))?;
    let sandbox = Sandbox::new(&root).map_err(|err| format!("--root {}: {err}", root.display()))?;
    let registry = Registry::new();
    builtin::register(&registry, &sandbox).map_err(|err| err.to_string())?;
    let permissions = settings_permissions(&root, &args.settings)?;
    Ok(ToolServer::new(registry, permissions)
        .into_server()
        .with_name("mux-tools", env!("CARGO_PKG_VERSION"))
        .with_instructions(format!(
            "File and shell tools confined to {}. Calls the settings do not allow ask you first.",
            root.display()
        )))
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
        let args = parse(&[
            "--root",
            "/tmp",
            "--settings",
            "a.json",
            "--settings",
            "b.json",
            "--http",
            "9",
        ])
        .unwrap();
        assert_eq!(args.settings.len(), 2);
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
