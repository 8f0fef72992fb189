//! The web_agent example's server: the examples' coding agent behind mux-web's AG-UI
//! router, plus the chat page at `/`.

use std::time::Duration;

use axum::Router;
use mux::orchestrator::Agent;
use mux::web::{AguiRouter, ServeLimits, WebConfig};

/// The example's usage line.
pub const USAGE: &str = "usage: cargo run --example web_agent [-- --port N] [--token T | --no-token] \
[--cors-origin ORIGIN]... [--allowed-host HOST[:PORT]]... \
[--header-timeout-ms N] [--idle-timeout-ms N] [--body-timeout-ms N] [--max-connections N]";

/// What `--no-token` means, printed where the token URL would be.
pub const NO_TOKEN_WARNING: &str = "WARNING: --no-token: there is no token. Any program or user \
on this machine that can reach 127.0.0.1 can read every thread and approve the agent's commands. \
Web pages on other sites still cannot (the Host and Origin checks refuse them). Open the page \
at the address above.";

/// The command line.
#[derive(Clone, Debug)]
pub struct Options {
    /// The port (0 picks one).
    pub port: u16,
    /// The bearer token the page must send; `None` with `--no-token`.
    pub token: Option<String>,
    /// Origins allowed to call the server from their pages.
    pub cors_origins: Vec<String>,
    /// Host names to answer to besides the server's own (a proxy's).
    pub allowed_hosts: Vec<String>,
    /// The server's connection limits.
    pub limits: ServeLimits,
}

impl Options {
    /// Parses the arguments; `None` for `--help`. Without `--token` or `--no-token`, the
    /// token is a fresh random one.
    pub fn parse(args: impl IntoIterator<Item = String>) -> Result<Option<Self>, String> {
        let mut args = args.into_iter();
        let mut options = Self {
            port: 8787,
            token: None,
            cors_origins: Vec::new(),
            allowed_hosts: Vec::new(),
            limits: ServeLimits::default(),
        };
        let (mut token_given, mut no_token) = (false, false);
        while let Some(arg) = args.next() {
            let mut value = |name: &str| args.next().ok_or(format!("{name} needs a value"));
            match arg.as_str() {
                "--port" => options.port = number(&arg, &value("--port")?)?,
                "--token" => {
                    let token = value("--token")?;
                    if token.trim().is_empty() {
                        return Err("--token needs a non-empty value".into());
                    }
                    options.token = Some(token);
                    token_given = true;
                }
                "--no-token" => no_token = true,
                "--cors-origin" => options.cors_origins.push(value("--cors-origin")?),
                "--allowed-host" => options.allowed_hosts.push(value("--allowed-host")?),
                "--header-timeout-ms" => {
                    options.limits = options
                        .limits
                        .header_read_timeout(millis(&arg, &value(&arg)?)?)
                }
                "--idle-timeout-ms" => {
                    options.limits = options.limits.idle_timeout(millis(&arg, &value(&arg)?)?)
                }
                "--body-timeout-ms" => {
                    options.limits = options
                        .limits
                        .body_read_timeout(millis(&arg, &value(&arg)?)?)
                }
                "--max-connections" => {
                    options.limits = options.limits.max_connections(number(&arg, &value(&arg)?)?)
                }
                "-h" | "--help" => return Ok(None),
                other => return Err(format!("unknown argument `{other}`\n{USAGE}")),
            }
        }
        if token_given && no_token {
            return Err("--token and --no-token contradict each other".into());
        }
        if !no_token && !token_given {
            let token = mux::web::random_token()
                .map_err(|e| format!("cannot make a random token: {e} (pass --token T)"))?;
            options.token = Some(token);
        }
        Ok(Some(options))
    }

    /// The web face's configuration: the token, origins and hosts, and refusals reported on
    /// stderr.
    pub fn web_config(&self) -> WebConfig {
        let mut config = WebConfig::default().on_refusal(|refusal| {
            eprintln!(
                "web_agent: refused {} {} ({} {}): {}",
                refusal.method, refusal.path, refusal.status, refusal.code, refusal.message
            );
        });
        if let Some(token) = &self.token {
            config = config.bearer_token(token.clone());
        }
        for origin in &self.cors_origins {
            config = config.cors_origin(origin.clone());
        }
        for host in &self.allowed_hosts {
            config = config.allowed_host(host.clone());
        }
        config
    }
}

fn number<T: std::str::FromStr>(flag: &str, value: &str) -> Result<T, String> {
    value
        .parse()
        .map_err(|_| format!("{flag} `{value}` is not a number in range"))
}

fn millis(flag: &str, value: &str) -> Result<Duration, String> {
    number::<u64>(flag, value).map(Duration::from_millis)
}

/// The app: mux-web's chat page (`/`, `/app.js`, `/app.css`) and the AG-UI routes under
/// `/agui`, serving `agent` (its read-only tools run; edits and commands ask, as AG-UI
/// interrupts). The page's frontend tools replace the agent's tools of the same name.
pub fn app(agent: Agent, config: WebConfig) -> Result<Router, String> {
    AguiRouter::new(agent)
        .config(config)
        .with_page()
        .try_build()
        .map_err(|e| e.to_string())
}
