//! The web_agent example's server: the examples' coding agent behind mux-web's AG-UI
//! router, plus the chat page at `/`.

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use mux::orchestrator::Agent;
use mux::orchestrator::runs::RunStore;
use mux::orchestrator::session::SessionStore;
use mux::web::page::PageOptions;
use mux::web::{AguiRouter, DoubleTexting, ServeLimits, WebConfig};

use mux::store::{Store, StoreUrl};

/// The example's usage line.
pub const USAGE: &str = "usage: cargo run --example web_agent [-- --port N] [--token T | --no-token] \
[--cors-origin ORIGIN]... [--allowed-host HOST[:PORT]]... \
[--header-timeout-ms N] [--idle-timeout-ms N] [--body-timeout-ms N] [--max-connections N] \
[--database-url sqlite://PATH | postgres://... | file://DIR | memory:] [--model-delay-ms N] [--lease-ms N] \
[--double-texting reject|enqueue|interrupt]";

/// Where threads and runs live without `--database-url`: a SQLite file under the current
/// directory.
pub const DEFAULT_DATABASE: &str = ".mux/web_agent.db";

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
    /// Where threads and runs live: `sqlite://PATH`, `postgres://…`, `file://DIR` or
    /// `memory:` (`None`: SQLite at [`DEFAULT_DATABASE`]).
    pub database_url: Option<String>,
    /// With the offline model: how long it waits before each streamed event (word by word).
    pub model_delay: Option<Duration>,
    /// The run lease (`None`: the web face's default).
    pub lease: Option<Duration>,
    /// What a prompt on a busy thread does.
    pub double_texting: DoubleTexting,
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
            database_url: None,
            model_delay: None,
            lease: None,
            double_texting: DoubleTexting::Reject,
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
                "--database-url" => {
                    let url = value(&arg)?;
                    StoreUrl::parse(&url).map_err(|e| e.to_string())?;
                    options.database_url = Some(url);
                }
                "--model-delay-ms" => options.model_delay = Some(millis(&arg, &value(&arg)?)?),
                "--lease-ms" => {
                    let lease = millis(&arg, &value(&arg)?)?;
                    if lease < Duration::from_millis(30) {
                        return Err("--lease-ms must be at least 30".into());
                    }
                    options.lease = Some(lease);
                }
                "--double-texting" => {
                    let name = value(&arg)?;
                    options.double_texting = DoubleTexting::parse(&name).ok_or(format!(
                        "--double-texting `{name}` is not reject, enqueue or interrupt"
                    ))?;
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
        if let Some(lease) = self.lease {
            config = config.lease(lease);
        }
        config.double_texting(self.double_texting)
    }

    /// Opens the sessions and the runs of `--database-url` (creating the default SQLite
    /// file's directory).
    pub async fn store(&self) -> Result<Store, String> {
        let url = match &self.database_url {
            Some(url) => url.clone(),
            None => format!("sqlite://{DEFAULT_DATABASE}"),
        };
        Store::open(&url).await.map_err(|e| e.to_string())
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
    branded_app(agent, config, PageOptions::default())
}

/// [`app`] with the page branded and placed by `page` (a title, a placeholder, a path prefix
/// every route moves under).
pub fn branded_app(agent: Agent, config: WebConfig, page: PageOptions) -> Result<Router, String> {
    AguiRouter::new(agent)
        .config(config)
        .with_page(page)
        .try_build()
        .map_err(|e| e.to_string())
}

/// [`app`] with threads in `sessions` and runs in `runs`, so that every process on the same
/// database serves every thread.
pub fn app_on(
    agent: Agent,
    config: WebConfig,
    sessions: Arc<dyn SessionStore>,
    runs: Arc<dyn RunStore>,
) -> Result<Router, String> {
    AguiRouter::new(agent)
        .session_store(sessions)
        .run_store(runs)
        .config(config)
        .with_page(PageOptions::default())
        .try_build()
        .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn parse(args: &[&str]) -> Result<Option<Options>, String> {
        Options::parse(args.iter().map(|a| a.to_string()))
    }

    #[test]
    fn the_durable_run_flags_parse_and_bad_values_are_named() {
        let options = parse(&[
            "--no-token",
            "--database-url",
            "postgres://u@localhost/db?host=/tmp/sock",
            "--model-delay-ms",
            "5",
            "--lease-ms",
            "900",
            "--double-texting",
            "enqueue",
        ])
        .unwrap()
        .unwrap();
        assert_eq!(options.model_delay, Some(Duration::from_millis(5)));
        assert_eq!(options.lease, Some(Duration::from_millis(900)));
        assert_eq!(options.double_texting, DoubleTexting::Enqueue);
        assert_eq!(options.web_config().lease, Duration::from_millis(900));
        for (args, named) in [
            (vec!["--database-url", "mysql://x"], "mysql://x"),
            (vec!["--database-url", "sqlite://"], "names no file"),
            (vec!["--lease-ms", "5"], "at least 30"),
            (vec!["--double-texting", "later"], "later"),
            (vec!["--model-delay-ms", "-1"], "-1"),
        ] {
            let err = parse(&args).unwrap_err();
            assert!(err.contains(named), "{args:?}: {err}");
        }
    }
}
