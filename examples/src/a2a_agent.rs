//! The a2a_agent example's command line: the port, an optional bearer token, extra host
//! names.

use mux::a2a::A2aConfig;

/// The example's usage line.
pub const USAGE: &str = "usage: cargo run --example a2a_agent [-- --port N] [--token T] [--allowed-host HOST[:PORT]]...";

/// The command line.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// The port (0 picks one).
    pub port: u16,
    /// The bearer token clients must send, if any.
    pub token: Option<String>,
    /// Host names to answer to besides loopback (a proxy's).
    pub allowed_hosts: Vec<String>,
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
        config
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
        assert!(parse(&["--help"]).unwrap().is_none());
        for bad in [
            &["--port"][..],
            &["--port", "x"],
            &["--token", " "],
            &["--what"],
        ] {
            assert!(parse(bad).is_err(), "{bad:?}");
        }
    }
}
