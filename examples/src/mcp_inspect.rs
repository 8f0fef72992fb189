//! The logic of the `mcp_inspect` example: parse the command line, connect to the MCP servers,
//! and render their state and tools, or one tool call's output, as one JSON object.
//!
//! Exit codes: 0 for a listing (even when some servers failed: they are listed with state
//! `failed` and their `error`) and for a call whose output is not an error; 1 for
//! `{"error": "..."}` (bad command line, unreadable config, every server failed, unknown tool,
//! a call that could not be made) and for a call whose [`ToolOutput`](mux::tool::ToolOutput)
//! has `is_error` set (the server answered `isError`, or the call timed out): the output is
//! still printed, so a script can read why.

use std::sync::Arc;
use std::time::Duration;

use mux::mcp::{
    ConnectionOptions, ConnectionState, Coordinator, CoordinatorConfig, McpTool, ReconnectPolicy,
    ServerSnapshot, ServerSpec, TransportSpec, load_config,
};
use mux::tool::{Tool, ToolContext, ToolError};
use serde_json::{Value, json};

/// The usage line.
pub const USAGE: &str = "usage: mcp_inspect (--config FILE | --name NAME (--stdio CMD [ARGS...] | --url URL)) \
[--call QUALIFIED_TOOL --args JSON] [--timeout-ms N] [--ca-cert FILE]...";

/// What the command line asks for.
#[derive(Debug)]
pub struct Request {
    /// The servers to connect to.
    pub servers: Vec<ServerSpec>,
    /// The qualified tool to call and its arguments, if any.
    pub call: Option<(String, Value)>,
    /// The connect and tool-call timeout, if set.
    pub timeout: Option<Duration>,
}

/// Parses the arguments (without the program name).
pub fn parse(args: &[String]) -> Result<Request, String> {
    let mut config = None;
    let mut name = None;
    let mut stdio: Option<Vec<String>> = None;
    let mut url = None;
    let mut call = None;
    let mut call_args = None;
    let mut timeout = None;
    let mut ca_certs = Vec::new();
    let mut args = args.iter().cloned();
    while let Some(arg) = args.next() {
        let mut value = |flag: &str| args.next().ok_or(format!("{flag} needs a value; {USAGE}"));
        match arg.as_str() {
            "--config" => config = Some(value("--config")?),
            "--name" => name = Some(value("--name")?),
            "--url" => url = Some(value("--url")?),
            "--call" => call = Some(value("--call")?),
            "--args" => call_args = Some(value("--args")?),
            "--ca-cert" => ca_certs.push(value("--ca-cert")?),
            "--timeout-ms" => {
                let raw = value("--timeout-ms")?;
                let ms: u64 = raw
                    .parse()
                    .map_err(|_| format!("--timeout-ms must be a whole number, got `{raw}`"))?;
                timeout = Some(Duration::from_millis(ms.max(1)));
            }
            "--stdio" => {
                let rest: Vec<String> = args.by_ref().collect();
                if rest.is_empty() {
                    return Err(format!("--stdio needs a command; {USAGE}"));
                }
                stdio = Some(rest);
            }
            other => return Err(format!("unknown argument `{other}`; {USAGE}")),
        }
    }
    let servers = match (config, name, stdio, url) {
        (Some(path), None, None, None) => load_config(&path).map_err(|err| err.to_string())?,
        (None, Some(name), Some(command), None) => {
            let (program, rest) = command.split_first().ok_or(USAGE)?;
            vec![ServerSpec::stdio(name, program.clone(), rest.to_vec())]
        }
        (None, Some(name), None, Some(url)) => vec![ServerSpec::http(name, url)],
        _ => return Err(USAGE.to_string()),
    };
    if !ca_certs.is_empty()
        && !servers
            .iter()
            .any(|spec| matches!(spec.transport, TransportSpec::Http(_)))
    {
        return Err(
            "--ca-cert applies to HTTP servers (--url or --config); there are none".to_string(),
        );
    }
    let servers = servers
        .into_iter()
        .map(|spec| {
            ca_certs
                .iter()
                .fold(spec, |spec, path| spec.with_ca_certificate(path))
        })
        .collect();
    let call = match (call, call_args) {
        (Some(tool), args) => {
            let args = args.unwrap_or_else(|| "{}".to_string());
            let value: Value = serde_json::from_str(&args)
                .map_err(|err| format!("--args is not valid JSON: {err}"))?;
            Some((tool, value))
        }
        (None, Some(_)) => return Err(format!("--args needs --call; {USAGE}")),
        (None, None) => None,
    };
    Ok(Request {
        servers,
        call,
        timeout,
    })
}

fn server_json(
    coordinator: &Coordinator,
    server: &ServerSnapshot,
    proxies: &[Arc<McpTool>],
) -> Value {
    let mut out = json!({"name": server.name, "state": server.state.name()});
    if let ConnectionState::Failed { message, .. } = &server.state {
        out["error"] = json!(message);
    }
    if let Some(version) = coordinator
        .connection(&server.name)
        .and_then(|connection| connection.protocol_version())
    {
        out["protocol_version"] = json!(version);
    }
    let tools: Vec<Value> = proxies
        .iter()
        .filter(|proxy| proxy.server() == server.name)
        .map(|proxy| {
            let spec = proxy.spec();
            json!({
                "name": spec.name,
                "description": spec.description,
                "input_schema": spec.input_schema,
            })
        })
        .collect();
    out["tools"] = json!(tools);
    out
}

/// What a successful inspection printed, and whether it reports a failed call.
struct Printed {
    value: Value,
    call_failed: bool,
}

async fn execute(request: Request) -> Result<Printed, String> {
    let mut config = CoordinatorConfig {
        reconnect: ReconnectPolicy::None,
        health_interval: None,
        ..CoordinatorConfig::default()
    };
    if let Some(timeout) = request.timeout {
        config.tool_timeout = timeout;
        config.connection = ConnectionOptions {
            connect_timeout: timeout,
            ..ConnectionOptions::default()
        };
    }
    let coordinator = Coordinator::new(config);
    let result = inspect(&coordinator, request).await;
    coordinator.stop_all().await;
    result
}

async fn inspect(coordinator: &Coordinator, request: Request) -> Result<Printed, String> {
    let report = coordinator
        .start_all_and_wait(request.servers)
        .await
        .map_err(|err| err.to_string())?;
    if report.connected.is_empty() && !report.failed.is_empty() {
        let reasons: Vec<String> = report
            .failed
            .iter()
            .map(|(_, message)| message.clone())
            .collect();
        return Err(reasons.join("; "));
    }
    let tools = coordinator.proxies();
    let Some((name, args)) = request.call else {
        let servers: Vec<Value> = coordinator
            .snapshot()
            .servers
            .iter()
            .map(|server| server_json(coordinator, server, &tools))
            .collect();
        return Ok(Printed {
            value: json!({"servers": servers}),
            call_failed: false,
        });
    };
    let Some(tool) = tools.iter().find(|tool| tool.spec().name.as_str() == name) else {
        let reasons: Vec<String> = report
            .failed
            .iter()
            .map(|(server, message)| format!("{server}: {message}"))
            .collect();
        let mut message = format!("no tool named `{name}`");
        if !reasons.is_empty() {
            message.push_str(&format!(" (failed servers: {})", reasons.join("; ")));
        }
        return Err(message);
    };
    match tool.call(args, ToolContext::new("mcp_inspect")).await {
        Ok(output) => Ok(Printed {
            call_failed: output.is_error,
            value: serde_json::to_value(output).map_err(|err| err.to_string())?,
        }),
        Err(ToolError::Cancelled) => Err("the call was cancelled".to_string()),
        Err(err) => Err(err.to_string()),
    }
}

/// Runs the example: returns the JSON to print and the exit code (see the module docs).
pub async fn run(args: &[String]) -> (Value, i32) {
    let outcome = match parse(args) {
        Ok(request) => execute(request).await,
        Err(message) => Err(message),
    };
    match outcome {
        Ok(Printed { value, call_failed }) => (value, i32::from(call_failed)),
        Err(message) => (json!({"error": message}), 1),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;

    fn args(line: &str) -> Vec<String> {
        line.split_whitespace().map(str::to_string).collect()
    }

    #[test]
    fn stdio_takes_the_rest_of_the_line() {
        let request =
            parse(&args("--call mcp__ev__echo --args {} --timeout-ms 500 --name ev --stdio node server.js --port 3")).unwrap();
        let [spec] = request.servers.as_slice() else {
            panic!("one server")
        };
        assert_eq!(spec.name, "ev");
        let TransportSpec::Stdio(stdio) = &spec.transport else {
            panic!("stdio")
        };
        assert_eq!(stdio.command, "node");
        assert_eq!(stdio.args, ["server.js", "--port", "3"]);
        assert_eq!(request.call, Some(("mcp__ev__echo".to_string(), json!({}))));
        assert_eq!(request.timeout, Some(Duration::from_millis(500)));
    }

    #[test]
    fn a_url_makes_an_http_server() {
        let request = parse(&args("--name web --url http://127.0.0.1:3001/mcp")).unwrap();
        assert!(
            matches!(&request.servers[0].transport, TransportSpec::Http(http) if http.url == "http://127.0.0.1:3001/mcp")
        );
        assert!(request.call.is_none());
    }

    #[test]
    fn ca_certs_go_to_http_servers() {
        let request = parse(&args(
            "--ca-cert a.pem --name web --ca-cert b.pem --url https://h/mcp",
        ))
        .unwrap();
        let TransportSpec::Http(http) = &request.servers[0].transport else {
            panic!("http")
        };
        assert_eq!(
            http.ca_certificates,
            [std::path::PathBuf::from("a.pem"), "b.pem".into()]
        );
    }

    #[test]
    fn bad_command_lines_are_errors() {
        for (line, expected) in [
            ("", "usage"),
            ("--name x", "usage"),
            ("--config a.json --name x --url http://h", "usage"),
            ("--name x --stdio", "--stdio needs a command"),
            ("--name x --url http://h --args {}", "--args needs --call"),
            (
                "--name x --url http://h --call t --args {nope",
                "not valid JSON",
            ),
            ("--name x --url http://h --timeout-ms soon", "whole number"),
            ("--frobnicate", "unknown argument `--frobnicate`"),
            (
                "--name x --url http://h --ca-cert",
                "--ca-cert needs a value",
            ),
            (
                "--ca-cert ca.pem --name x --stdio node s.js",
                "--ca-cert applies to HTTP servers",
            ),
            ("--config /nonexistent/mcp.json", "cannot read MCP config"),
        ] {
            let err = parse(&args(line))
                .err()
                .unwrap_or_else(|| panic!("`{line}` parsed"));
            assert!(err.contains(expected), "`{line}`: {err}");
        }
    }
}
