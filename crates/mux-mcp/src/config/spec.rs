//! The validated specs: a server, its transport and its timeouts.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use super::sandbox::StdioSandbox;
use crate::oauth::spec::OAuthSpec;
use mux_tool::Secret;

/// How to start a server as a child process speaking MCP over stdin/stdout.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StdioSpec {
    /// The program.
    pub command: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// The server's environment besides the default set taken from the agent's (see
    /// [`DEFAULT_INHERITED_ENV`](crate::DEFAULT_INHERITED_ENV)); nothing else of the agent's
    /// environment reaches it. These win over the default set.
    pub env: BTreeMap<String, Secret>,
    /// The working directory, when not the current one.
    pub cwd: Option<PathBuf>,
    /// The OS wall around the server; `None`: none.
    pub sandbox: Option<StdioSandbox>,
}

/// How to reach a server over Streamable HTTP.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HttpSpec {
    /// The MCP endpoint URL.
    pub url: String,
    /// Extra headers sent with every request. Values are treated as secrets.
    pub headers: BTreeMap<String, Secret>,
    /// A bearer token sent as `Authorization: Bearer …`.
    pub bearer_token: Option<Secret>,
    /// OAuth authorization, run when the server answers 401 (and again, for more scopes,
    /// when it answers 403 `insufficient_scope`). Needs client handlers that implement
    /// [`ClientHandlers::authorize`](crate::ClientHandlers::authorize).
    pub oauth: Option<OAuthSpec>,
    /// PEM files of CA certificates trusted for `https://` (the server and its OAuth
    /// endpoints) in addition to the platform's roots: for servers with a private CA or a
    /// self-signed certificate. Read when connecting; relative paths are relative to the
    /// current directory.
    pub ca_certificates: Vec<PathBuf>,
}

/// The transport a server speaks.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum TransportSpec {
    /// A child process over stdio.
    Stdio(StdioSpec),
    /// Streamable HTTP.
    Http(HttpSpec),
}

/// One MCP server: its name, transport and timeouts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerSpec {
    /// The server's name, unique within a coordinator; used in qualified tool names.
    pub name: String,
    /// How to reach it.
    pub transport: TransportSpec,
    /// Overrides the coordinator's tool-call timeout for this server.
    pub tool_timeout: Option<Duration>,
    /// Overrides the coordinator's connect timeout for this server.
    pub connect_timeout: Option<Duration>,
}

impl ServerSpec {
    /// A stdio server running `command` with `args`.
    ///
    /// ```
    /// let spec = mux_mcp::ServerSpec::stdio("everything", "npx", ["-y", "@modelcontextprotocol/server-everything"]);
    /// assert_eq!(spec.name, "everything");
    /// ```
    pub fn stdio<I, S>(name: impl Into<String>, command: impl Into<String>, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Self {
            name: name.into(),
            transport: TransportSpec::Stdio(StdioSpec {
                command: command.into(),
                args: args.into_iter().map(Into::into).collect(),
                env: BTreeMap::new(),
                cwd: None,
                sandbox: None,
            }),
            tool_timeout: None,
            connect_timeout: None,
        }
    }

    /// A Streamable HTTP server at `url`.
    pub fn http(name: impl Into<String>, url: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            transport: TransportSpec::Http(HttpSpec {
                url: url.into(),
                headers: BTreeMap::new(),
                bearer_token: None,
                oauth: None,
                ca_certificates: Vec::new(),
            }),
            tool_timeout: None,
            connect_timeout: None,
        }
    }

    /// Adds an environment variable (stdio only; ignored for HTTP).
    pub fn with_env(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        if let TransportSpec::Stdio(stdio) = &mut self.transport {
            stdio.env.insert(key.into(), Secret::new(value));
        }
        self
    }

    /// Sets the working directory (stdio only; ignored for HTTP).
    pub fn with_cwd(mut self, cwd: impl Into<PathBuf>) -> Self {
        if let TransportSpec::Stdio(stdio) = &mut self.transport {
            stdio.cwd = Some(cwd.into());
        }
        self
    }

    /// Starts the server behind the OS wall `sandbox` (stdio only; ignored for HTTP).
    pub fn with_sandbox(mut self, sandbox: StdioSandbox) -> Self {
        if let TransportSpec::Stdio(stdio) = &mut self.transport {
            stdio.sandbox = Some(sandbox);
        }
        self
    }

    /// Adds a header (HTTP only; ignored for stdio).
    pub fn with_header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        if let TransportSpec::Http(http) = &mut self.transport {
            http.headers.insert(name.into(), Secret::new(value));
        }
        self
    }

    /// Sets a bearer token (HTTP only; ignored for stdio).
    pub fn with_bearer_token(mut self, token: impl Into<String>) -> Self {
        if let TransportSpec::Http(http) = &mut self.transport {
            http.bearer_token = Some(Secret::new(token));
        }
        self
    }

    /// Authorizes with OAuth when the server asks for it (HTTP only; ignored for stdio).
    pub fn with_oauth(mut self, oauth: OAuthSpec) -> Self {
        if let TransportSpec::Http(http) = &mut self.transport {
            http.oauth = Some(oauth);
        }
        self
    }

    /// Also trusts the CA certificates in the PEM file at `path` for HTTPS (HTTP only;
    /// ignored for stdio). The file is read when connecting; a missing or bad file fails the
    /// connection with [`ConnectError::Config`](crate::ConnectError::Config) naming
    /// `caCertificates[i]`.
    ///
    /// ```
    /// let spec = mux_mcp::ServerSpec::http("intranet", "https://mcp.corp.example/mcp")
    ///     .with_ca_certificate("/etc/mux/corp-ca.pem");
    /// # let _ = spec;
    /// ```
    pub fn with_ca_certificate(mut self, path: impl Into<PathBuf>) -> Self {
        if let TransportSpec::Http(http) = &mut self.transport {
            http.ca_certificates.push(path.into());
        }
        self
    }

    /// Sets this server's tool-call timeout.
    pub fn with_tool_timeout(mut self, timeout: Duration) -> Self {
        self.tool_timeout = Some(timeout);
        self
    }

    /// Sets this server's connect timeout.
    pub fn with_connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = Some(timeout);
        self
    }
}
