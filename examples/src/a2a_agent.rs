//! The a2a_agent example's command line: the port, an optional bearer token, extra host
//! names, and where contexts and tasks live.

use std::time::Duration;

use mux::a2a::A2aConfig;

use mux::store::{Store, StoreUrl};

/// The example's usage line.
pub const USAGE: &str = "usage: cargo run --example a2a_agent [-- --port N] [--token T] \
[--allowed-host HOST[:PORT]]... [--database-url sqlite://PATH | postgres://... | file://DIR | memory:] [--lease-ms N]";

/// The command line.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// The port (0 picks one).
    pub port: u16,
    /// The bearer token clients must send, if any.
    pub token: Option<String>,
    /// Host names to answer to besides loopback (a proxy's).
    pub allowed_hosts: Vec<String>,
    /// Where contexts and tasks live: `sqlite://PATH`, `postgres://…`, `file://DIR` or
    /// `memory:` (`None`: in memory, gone with the process).
    pub database_url: Option<String>,
    /// The task lease (`None`: the A2A face's default).
    pub lease: Option<Duration>,
}

impl Options {
    /// Parses the arguments; `None` for `--help`.
    pub fn parse(args: impl IntoIterator<Item = String>) -> Result<Option<Self>, String> {
        let mut args = args.into_iter();
        let mut options = Self {
            port: 8788,
            ..Self::default()
        };
        while let Some(arg) = args.next() {
            let mut value = |name: &str| args.next().ok_or(format!("{name} needs a value"));
            match arg.as_str() {
                "--port" => {
                    let text = value("--port")?;
                    options.port = text
                        .parse()
                        .map_err(|_| format!("--port: `{text}` is not a port number"))?;
                }
                "--token" => {
                    let token = value("--token")?;
                    if token.trim().is_empty() {
                        return Err("--token needs a non-empty value".into());
                    }
                    options.token = Some(token);
                }
                "--allowed-host" => options.allowed_hosts.push(value("--allowed-host")?),
                "--database-url" => {
                    let url = value("--database-url")?;
                    StoreUrl::parse(&url).map_err(|e| e.to_string())?;
                    options.database_url = Some(url);
                }
                "--lease-ms" => {
                    let text = value("--lease-ms")?;
                    let ms: u64 = text
                        .parse()
                        .map_err(|_| format!("--lease-ms: `{text}` is not a number"))?;
                    if ms < 30 {
                        return Err("--lease-ms must be at least 30".into());
                    }
                    options.lease = Some(Duration::from_millis(ms));
                }
                "-h" | "--help" => return Ok(None),
                other => return Err(format!("unknown argument `{other}`\n{USAGE}")),
            }
        }
        Ok(Some(options))
    }

    /// The server's configuration.
    pub fn config(&self) -> A2aConfig {
        let mut config = A2aConfig::default().name("mux quickstart agent");
        if let Some(token) = &self.token {
            config = config.bearer_token(token.clone());
        }
        for host in &self.allowed_hosts {
            config = config.allowed_host(host.clone());
        }
        if let Some(lease) = self.lease {
            config = config.lease(lease);
        }
        config
    }

    /// The sessions and runs of `--database-url`, if given.
    pub async fn store(&self) -> Result<Option<Store>, String> {
        match &self.database_url {
            Some(url) => Store::open(url).await.map(Some).map_err(|e| e.to_string()),
            None => Ok(None),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn the_command_line_reads_and_refuses() {
        let parse = |args: &[&str]| Options::parse(args.iter().map(|a| a.to_string()));
        let options = parse(&["--port", "0", "--token", "t", "--allowed-host", "box:80"])
            .unwrap()
            .unwrap();
        assert_eq!((options.port, options.token.as_deref()), (0, Some("t")));
        assert!(options.database_url.is_none());
        let stored = parse(&["--database-url", "sqlite://x.db", "--lease-ms", "500"])
            .unwrap()
            .unwrap();
        assert_eq!(stored.database_url.as_deref(), Some("sqlite://x.db"));
        assert_eq!(stored.lease, Some(Duration::from_millis(500)));
        assert!(parse(&["--help"]).unwrap().is_none());
        for bad in [
            &["--port"][..],
            &["--port", "x"],
            &["--token", " "],
            &["--what"],
            &["--database-url", "mysql://x"],
            &["--database-url", "sqlite://"],
            &["--database-url", "file://"],
            &["--database-url", "memory:x"],
            &["--lease-ms", "5"],
        ] {
            assert!(parse(bad).is_err(), "{bad:?}");
        }
    }
}
