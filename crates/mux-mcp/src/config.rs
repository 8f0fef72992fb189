//! Server specs and the standard `mcpServers` JSON config, with `${VAR}` expansion.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value};

use crate::oauth::token_file::FileTokenStore;
use crate::oauth::token_store::TokenStore;

/// A value that must never be printed: a bearer token or a secret header.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wraps a secret value.
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// The secret itself, for the transport that sends it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(***)")
    }
}

/// How to start a server as a child process speaking MCP over stdin/stdout.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StdioSpec {
    /// The program.
    pub command: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// Extra environment variables (added to the inherited environment).
    pub env: BTreeMap<String, Secret>,
    /// The working directory, when not the current one.
    pub cwd: Option<PathBuf>,
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

/// How mux authorizes with a server's OAuth authorization server (MCP authorization, OAuth 2.1
/// with PKCE). The client is identified, in this order of preference, by a pre-registered
/// `client_id`, by a Client ID Metadata Document URL when the server supports it, or by
/// Dynamic Client Registration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OAuthSpec {
    /// Where the authorization server sends the browser back; the
    /// [`authorize`](crate::ClientHandlers::authorize) handler receives that redirect.
    pub redirect_uri: String,
    /// Scopes to ask for; empty lets the server's challenge and metadata decide.
    pub scopes: Vec<String>,
    /// A client id registered with the authorization server out of band.
    pub client_id: Option<String>,
    /// The secret paired with `client_id`, for confidential clients.
    pub client_secret: Option<Secret>,
    /// The HTTPS URL of this client's metadata document (SEP-991), used as its client id.
    pub client_metadata_url: Option<String>,
    /// The name sent in Dynamic Client Registration.
    pub client_name: String,
    /// Where tokens are kept; `None` keeps them in memory, for this process only. Set it
    /// with [`OAuthSpec::with_token_store`].
    pub token_store: Option<SharedTokenStore>,
    /// How a token is obtained: through the user's browser (the default) or, for
    /// machine-to-machine use, with the client's own credentials.
    pub grant: OAuthGrant,
    /// For the client-credentials grant: authenticate with a signed JWT assertion
    /// (`private_key_jwt`) instead of `client_secret`.
    pub client_key: Option<PrivateKeyJwt>,
}

/// A private key the client signs its `private_key_jwt` assertions with (RFC 7523).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PrivateKeyJwt {
    /// The PEM PKCS#8 private key (`-----BEGIN PRIVATE KEY-----`).
    pub key_pem: Secret,
    /// The signing algorithm, which must match the key.
    pub algorithm: JwtAlgorithm,
}

impl PrivateKeyJwt {
    /// A key in PEM PKCS#8 form, signing with `algorithm`.
    pub fn new(key_pem: Secret, algorithm: JwtAlgorithm) -> Self {
        Self { key_pem, algorithm }
    }
}

/// A JWS algorithm for client assertions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum JwtAlgorithm {
    /// ECDSA on P-256 with SHA-256.
    ES256,
    /// ECDSA on P-384 with SHA-384.
    ES384,
    /// RSASSA-PKCS1-v1_5 with SHA-256.
    RS256,
}

/// The OAuth grant mux uses to obtain tokens.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum OAuthGrant {
    /// The authorization-code flow with PKCE: the user approves in a browser, through
    /// [`ClientHandlers::authorize`](crate::ClientHandlers::authorize).
    #[default]
    AuthorizationCode,
    /// The client-credentials grant (OAuth 2.1 §4.2, MCP extension SEP-1046): the
    /// pre-registered `client_id` and `client_secret` are exchanged for a token at the
    /// token endpoint, with no user and no browser. The secret goes in an HTTP Basic
    /// header when that is the only method the authorization server lists, in the
    /// request body otherwise.
    ClientCredentials,
}

/// A [`TokenStore`] shared between specs and connections. Two are equal when they are the
/// same store.
#[derive(Clone, Debug)]
pub struct SharedTokenStore(pub Arc<dyn TokenStore>);

impl PartialEq for SharedTokenStore {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for SharedTokenStore {}

impl OAuthSpec {
    /// OAuth with `redirect_uri`, Dynamic Client Registration as `mux`, and the server's
    /// choice of scopes.
    ///
    /// ```
    /// let oauth = mux_mcp::OAuthSpec::new("http://127.0.0.1:8976/callback")
    ///     .with_scopes(["files:read"]);
    /// let spec = mux_mcp::ServerSpec::http("docs", "https://mcp.example.com/mcp").with_oauth(oauth);
    /// # let _ = spec;
    /// ```
    pub fn new(redirect_uri: impl Into<String>) -> Self {
        Self {
            redirect_uri: redirect_uri.into(),
            scopes: Vec::new(),
            client_id: None,
            client_secret: None,
            client_metadata_url: None,
            client_name: "mux".to_string(),
            token_store: None,
            grant: OAuthGrant::AuthorizationCode,
            client_key: None,
        }
    }

    /// The client-credentials grant for machine-to-machine use: no user, no browser, no
    /// redirect URI. Tokens are fetched with `client_id` and `secret` when the server
    /// answers 401, and fetched again when a later request is refused.
    ///
    /// ```
    /// use mux_mcp::{OAuthSpec, Secret, ServerSpec};
    /// let oauth = OAuthSpec::client_credentials("reports-bot", Secret::new("s3cret"));
    /// let spec = ServerSpec::http("reports", "https://mcp.example.com/mcp").with_oauth(oauth);
    /// # let _ = spec;
    /// ```
    pub fn client_credentials(client_id: impl Into<String>, secret: Secret) -> Self {
        Self {
            grant: OAuthGrant::ClientCredentials,
            ..Self::new(String::new()).with_client(client_id, Some(secret))
        }
    }

    /// The client-credentials grant authenticating with `private_key_jwt`: each token
    /// request carries a fresh assertion signed with `key`, naming `client_id` as issuer
    /// and subject and the authorization server's issuer as audience.
    pub fn client_credentials_jwt(client_id: impl Into<String>, key: PrivateKeyJwt) -> Self {
        Self {
            grant: OAuthGrant::ClientCredentials,
            client_key: Some(key),
            ..Self::new(String::new()).with_client(client_id, None)
        }
    }

    /// Asks for these scopes.
    pub fn with_scopes<I, S>(mut self, scopes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.scopes = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// Uses a pre-registered client id, and its secret for a confidential client.
    pub fn with_client(mut self, client_id: impl Into<String>, secret: Option<Secret>) -> Self {
        self.client_id = Some(client_id.into());
        self.client_secret = secret;
        self
    }

    /// Identifies the client by its metadata document URL (SEP-991).
    pub fn with_client_metadata_url(mut self, url: impl Into<String>) -> Self {
        self.client_metadata_url = Some(url.into());
        self
    }

    /// Sets the name used in Dynamic Client Registration.
    pub fn with_client_name(mut self, name: impl Into<String>) -> Self {
        self.client_name = name.into();
        self
    }

    /// Keeps tokens in `store` (a [`FileTokenStore`](crate::FileTokenStore), say), so they
    /// survive restarts: a connect uses the stored access token, refreshes it when it has
    /// expired, and sends the user to the browser only when neither works.
    pub fn with_token_store(mut self, store: Arc<dyn TokenStore>) -> Self {
        self.token_store = Some(SharedTokenStore(store));
        self
    }
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

/// A config file that cannot be used. Every variant names the server and the field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The text is not JSON.
    #[error("MCP config is not valid JSON: {0}")]
    Json(String),
    /// The top level is not an object with an `mcpServers` object.
    #[error("MCP config must be an object with an `mcpServers` object")]
    NoServers,
    /// A field has the wrong type or value.
    #[error("MCP server `{server}`: field `{field}` {problem}")]
    Field {
        /// The server.
        server: String,
        /// The field, as a path such as `env.TOKEN`.
        field: String,
        /// What is wrong.
        problem: String,
    },
    /// A `${VAR}` reference names a variable that is not set and has no default.
    #[error("MCP server `{server}`: field `{field}` uses `${{{var}}}`, which is not set")]
    UnsetVariable {
        /// The server.
        server: String,
        /// The field.
        field: String,
        /// The variable.
        var: String,
    },
    /// The file could not be read.
    #[error("cannot read MCP config {path}: {reason}")]
    Read {
        /// The path.
        path: String,
        /// The I/O error.
        reason: String,
    },
}

/// Parses the standard `mcpServers` config (Claude Desktop, Cursor, VS Code), expanding
/// `${VAR}` and `${VAR:-default}` from the process environment.
///
/// Servers come back sorted by name. Besides the standard fields (`command`, `args`, `env`,
/// `cwd`, `type`, `url`, `headers`), mux reads `bearerToken`, `oauth` (`grant`,
/// `redirectUri`, `scopes`, `privateKeyFile`, `signingAlgorithm`, `clientId`, `clientSecret`, `clientMetadataUrl`, `clientName`, and `tokenStore`,
/// a directory where tokens persist across restarts; see [`OAuthSpec`]), `caCertificates` (PEM files of extra CAs for HTTPS, read and checked
/// while parsing; see [`HttpSpec::ca_certificates`]), `toolTimeoutMs`, `connectTimeoutMs`
/// and `disabled` (disabled servers are skipped).
///
/// ```
/// let config = r#"{"mcpServers": {
///     "fs": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "${HOME:-/tmp}"]},
///     "remote": {"type": "http", "url": "http://127.0.0.1:3001/mcp", "toolTimeoutMs": 5000}
/// }}"#;
/// let servers = mux_mcp::parse_config(config)?;
/// assert_eq!(servers.len(), 2);
/// assert_eq!(servers[0].name, "fs");
/// # Ok::<(), mux_mcp::ConfigError>(())
/// ```
pub fn parse_config(text: &str) -> Result<Vec<ServerSpec>, ConfigError> {
    parse_config_with(text, &|name| std::env::var(name).ok())
}

/// Reads and parses a config file; see [`parse_config`].
pub fn load_config(path: impl AsRef<std::path::Path>) -> Result<Vec<ServerSpec>, ConfigError> {
    let path = path.as_ref();
    let text = std::fs::read_to_string(path).map_err(|err| ConfigError::Read {
        path: path.display().to_string(),
        reason: err.to_string(),
    })?;
    parse_config(&text)
}

/// Parses a config, looking variables up with `lookup` instead of the environment.
pub fn parse_config_with(
    text: &str,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<Vec<ServerSpec>, ConfigError> {
    let root: Value =
        serde_json::from_str(text).map_err(|err| ConfigError::Json(err.to_string()))?;
    let servers = root
        .get("mcpServers")
        .and_then(Value::as_object)
        .ok_or(ConfigError::NoServers)?;
    let mut specs = Vec::with_capacity(servers.len());
    for (name, entry) in servers {
        let reader = EntryReader {
            server: name,
            lookup,
        };
        if let Some(spec) = reader.read(entry)? {
            specs.push(spec);
        }
    }
    specs.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(specs)
}

struct EntryReader<'a> {
    server: &'a str,
    lookup: &'a dyn Fn(&str) -> Option<String>,
}

impl EntryReader<'_> {
    fn field_error(&self, field: &str, problem: impl Into<String>) -> ConfigError {
        ConfigError::Field {
            server: self.server.to_string(),
            field: field.to_string(),
            problem: problem.into(),
        }
    }

    fn read(&self, entry: &Value) -> Result<Option<ServerSpec>, ConfigError> {
        if self.server.trim().is_empty() {
            return Err(self.field_error("name", "must not be empty"));
        }
        let object = entry
            .as_object()
            .ok_or_else(|| self.field_error("(entry)", "must be an object"))?;
        if self.optional_bool(object, "disabled")?.unwrap_or(false) {
            return Ok(None);
        }
        let kind = self.optional_string(object, "type")?;
        let has_command = object.contains_key("command");
        let has_url = object.contains_key("url");
        let transport = match kind.as_deref() {
            Some("stdio") => self.stdio(object)?,
            Some("http" | "streamable-http" | "streamableHttp") => self.http(object)?,
            Some(other) => {
                return Err(self.field_error(
                    "type",
                    format!("is `{other}`; expected `stdio`, `http` or `streamable-http`"),
                ));
            }
            None if has_command && has_url => {
                return Err(self.field_error("command", "and `url` are both set; pick one"));
            }
            None if has_command => self.stdio(object)?,
            None if has_url => self.http(object)?,
            None => return Err(self.field_error("command", "is missing (or set `url`)")),
        };
        Ok(Some(ServerSpec {
            name: self.server.to_string(),
            transport,
            tool_timeout: self.optional_millis(object, "toolTimeoutMs")?,
            connect_timeout: self.optional_millis(object, "connectTimeoutMs")?,
        }))
    }

    fn stdio(&self, object: &Map<String, Value>) -> Result<TransportSpec, ConfigError> {
        let command = self
            .optional_string(object, "command")?
            .ok_or_else(|| self.field_error("command", "is missing"))?;
        if command.trim().is_empty() {
            return Err(self.field_error("command", "must not be empty"));
        }
        let args = match object.get("args") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(items)) => items
                .iter()
                .enumerate()
                .map(|(i, item)| {
                    let field = format!("args[{i}]");
                    match item {
                        Value::String(s) => self.expand(&field, s),
                        _ => Err(self.field_error(&field, "must be a string")),
                    }
                })
                .collect::<Result<_, _>>()?,
            Some(_) => return Err(self.field_error("args", "must be an array of strings")),
        };
        let env = self.string_map(object, "env")?;
        let cwd = self.optional_string(object, "cwd")?.map(PathBuf::from);
        Ok(TransportSpec::Stdio(StdioSpec {
            command,
            args,
            env,
            cwd,
        }))
    }

    fn http(&self, object: &Map<String, Value>) -> Result<TransportSpec, ConfigError> {
        let url = self
            .optional_string(object, "url")?
            .ok_or_else(|| self.field_error("url", "is missing"))?;
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            return Err(self.field_error("url", "must start with http:// or https://"));
        }
        let headers = self.string_map(object, "headers")?;
        for name in headers.keys() {
            if http::HeaderName::from_bytes(name.as_bytes()).is_err() {
                return Err(self.field_error(
                    &format!("headers.{name}"),
                    "is not a valid HTTP header name",
                ));
            }
        }
        let bearer_token = self
            .optional_string(object, "bearerToken")?
            .map(Secret::new);
        let oauth = match object.get("oauth") {
            None | Some(Value::Null) => None,
            Some(Value::Object(oauth)) => Some(self.oauth(oauth)?),
            Some(_) => return Err(self.field_error("oauth", "must be an object")),
        };
        let ca_certificates = self.ca_certificates(object)?;
        Ok(TransportSpec::Http(HttpSpec {
            url,
            headers,
            bearer_token,
            oauth,
            ca_certificates,
        }))
    }

    /// `caCertificates`: an array of PEM file paths, each read and checked now so that a
    /// bad file is reported with the config.
    fn ca_certificates(&self, object: &Map<String, Value>) -> Result<Vec<PathBuf>, ConfigError> {
        let items = match object.get("caCertificates") {
            None | Some(Value::Null) => return Ok(Vec::new()),
            Some(Value::Array(items)) => items,
            Some(_) => {
                return Err(self.field_error("caCertificates", "must be an array of file paths"));
            }
        };
        items
            .iter()
            .enumerate()
            .map(|(i, item)| {
                let field = format!("caCertificates[{i}]");
                let Value::String(raw) = item else {
                    return Err(self.field_error(&field, "must be a string"));
                };
                let path = PathBuf::from(self.expand(&field, raw)?);
                crate::tls::read_ca_file(&path)
                    .map_err(|problem| self.field_error(&field, problem))?;
                Ok(path)
            })
            .collect()
    }

    /// The `oauth` object: `grant` (`authorization_code`, the default, or
    /// `client_credentials`), `redirectUri` (required by `authorization_code`), `scopes`,
    /// `clientId`, `clientSecret` (both required by `client_credentials`, unless
    /// `privateKeyFile` and `signingAlgorithm` select `private_key_jwt`),
    /// `clientMetadataUrl`, `clientName`, `tokenStore` (a directory for a [`FileTokenStore`]).
    fn oauth(&self, object: &Map<String, Value>) -> Result<OAuthSpec, ConfigError> {
        let string = |key: &str| -> Result<Option<String>, ConfigError> {
            let field = format!("oauth.{key}");
            match object.get(key) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::String(s)) => self.expand(&field, s).map(Some),
                Some(_) => Err(self.field_error(&field, "must be a string")),
            }
        };
        let grant = match string("grant")?.as_deref() {
            None | Some("authorization_code") => OAuthGrant::AuthorizationCode,
            Some("client_credentials") => OAuthGrant::ClientCredentials,
            Some(other) => {
                return Err(self.field_error(
                    "oauth.grant",
                    format!("is `{other}`; expected `authorization_code` or `client_credentials`"),
                ));
            }
        };
        let redirect_uri = match (string("redirectUri")?, grant) {
            (Some(uri), _) => uri,
            (None, OAuthGrant::ClientCredentials) => String::new(),
            (None, _) => return Err(self.field_error("oauth.redirectUri", "is missing")),
        };
        if grant == OAuthGrant::AuthorizationCode
            && !(redirect_uri.starts_with("http://") || redirect_uri.starts_with("https://"))
        {
            return Err(
                self.field_error("oauth.redirectUri", "must start with http:// or https://")
            );
        }
        let scopes = match object.get("scopes") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(items)) => items
                .iter()
                .enumerate()
                .map(|(i, item)| {
                    let field = format!("oauth.scopes[{i}]");
                    match item {
                        Value::String(s) => self.expand(&field, s),
                        _ => Err(self.field_error(&field, "must be a string")),
                    }
                })
                .collect::<Result<_, _>>()?,
            Some(_) => {
                return Err(self.field_error("oauth.scopes", "must be an array of strings"));
            }
        };
        let client_id = string("clientId")?;
        let client_secret = string("clientSecret")?.map(Secret::new);
        if client_secret.is_some() && client_id.is_none() {
            return Err(self.field_error("oauth.clientSecret", "needs `oauth.clientId`"));
        }
        let client_key =
            self.client_key(&string("privateKeyFile")?, &string("signingAlgorithm")?)?;
        if grant == OAuthGrant::ClientCredentials {
            if client_id.is_none() {
                return Err(self.field_error(
                    "oauth.clientId",
                    "is required by the `client_credentials` grant",
                ));
            }
            match (&client_secret, &client_key) {
                (None, None) => {
                    return Err(self.field_error(
                        "oauth.clientSecret",
                        "or `oauth.privateKeyFile` is required by the `client_credentials` grant",
                    ));
                }
                (Some(_), Some(_)) => {
                    return Err(self.field_error(
                        "oauth.privateKeyFile",
                        "cannot be combined with `oauth.clientSecret`; set one of them",
                    ));
                }
                _ => {}
            }
        } else if client_key.is_some() {
            return Err(self.field_error(
                "oauth.privateKeyFile",
                "needs `\"grant\": \"client_credentials\"`",
            ));
        }
        let mut spec = OAuthSpec::new(redirect_uri).with_scopes(scopes);
        spec.grant = grant;
        spec.client_key = client_key;
        spec.client_id = client_id;
        spec.client_secret = client_secret;
        spec.client_metadata_url = string("clientMetadataUrl")?;
        if let Some(name) = string("clientName")? {
            spec.client_name = name;
        }
        if let Some(dir) = string("tokenStore")? {
            spec = spec.with_token_store(Arc::new(self.token_dir(&dir)?));
        }
        Ok(spec)
    }

    /// `oauth.privateKeyFile` (read now; its content never appears in errors) and
    /// `oauth.signingAlgorithm` (`ES256`, the default, `ES384` or `RS256`).
    fn client_key(
        &self,
        file: &Option<String>,
        algorithm: &Option<String>,
    ) -> Result<Option<PrivateKeyJwt>, ConfigError> {
        let algorithm = match algorithm.as_deref() {
            None | Some("ES256") => JwtAlgorithm::ES256,
            Some("ES384") => JwtAlgorithm::ES384,
            Some("RS256") => JwtAlgorithm::RS256,
            Some(other) => {
                return Err(self.field_error(
                    "oauth.signingAlgorithm",
                    format!("is `{other}`; expected `ES256`, `ES384` or `RS256`"),
                ));
            }
        };
        let Some(file) = file else {
            return Ok(None);
        };
        let pem = std::fs::read_to_string(file).map_err(|err| {
            self.field_error(
                "oauth.privateKeyFile",
                format!("cannot read `{file}`: {err}"),
            )
        })?;
        if !pem.contains("-----BEGIN PRIVATE KEY-----") {
            return Err(self.field_error(
                "oauth.privateKeyFile",
                format!("`{file}` holds no PEM PKCS#8 private key (`BEGIN PRIVATE KEY`)"),
            ));
        }
        Ok(Some(PrivateKeyJwt::new(Secret::new(pem), algorithm)))
    }

    /// `oauth.tokenStore`: a directory path, which need not exist yet but must not be a file.
    fn token_dir(&self, dir: &str) -> Result<FileTokenStore, ConfigError> {
        let field = "oauth.tokenStore";
        if dir.trim().is_empty() {
            return Err(self.field_error(field, "must be a directory path, not empty"));
        }
        let path = PathBuf::from(dir);
        match std::fs::metadata(&path) {
            Ok(meta) if !meta.is_dir() => Err(self.field_error(
                field,
                format!("names `{}`, which is not a directory", path.display()),
            )),
            _ => Ok(FileTokenStore::new(path)),
        }
    }

    fn optional_string(
        &self,
        object: &Map<String, Value>,
        field: &str,
    ) -> Result<Option<String>, ConfigError> {
        match object.get(field) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => self.expand(field, s).map(Some),
            Some(_) => Err(self.field_error(field, "must be a string")),
        }
    }

    fn optional_bool(
        &self,
        object: &Map<String, Value>,
        field: &str,
    ) -> Result<Option<bool>, ConfigError> {
        match object.get(field) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(_) => Err(self.field_error(field, "must be true or false")),
        }
    }

    fn optional_millis(
        &self,
        object: &Map<String, Value>,
        field: &str,
    ) -> Result<Option<Duration>, ConfigError> {
        match object.get(field) {
            None | Some(Value::Null) => Ok(None),
            Some(value) => match value.as_u64() {
                Some(ms) if ms > 0 => Ok(Some(Duration::from_millis(ms))),
                _ => {
                    Err(self.field_error(field, "must be a positive whole number of milliseconds"))
                }
            },
        }
    }

    fn string_map(
        &self,
        object: &Map<String, Value>,
        field: &str,
    ) -> Result<BTreeMap<String, Secret>, ConfigError> {
        match object.get(field) {
            None | Some(Value::Null) => Ok(BTreeMap::new()),
            Some(Value::Object(map)) => map
                .iter()
                .map(|(key, value)| {
                    let path = format!("{field}.{key}");
                    match value {
                        Value::String(s) => Ok((key.clone(), Secret::new(self.expand(&path, s)?))),
                        _ => Err(self.field_error(&path, "must be a string")),
                    }
                })
                .collect(),
            Some(_) => Err(self.field_error(field, "must be an object of strings")),
        }
    }

    fn expand(&self, field: &str, text: &str) -> Result<String, ConfigError> {
        expand_vars(text, self.lookup).map_err(|problem| match problem {
            ExpandProblem::Unset(var) => ConfigError::UnsetVariable {
                server: self.server.to_string(),
                field: field.to_string(),
                var,
            },
            ExpandProblem::Unclosed => self.field_error(field, "has a `${` without a closing `}`"),
            ExpandProblem::BadName(name) => self.field_error(
                field,
                format!("uses `${{{name}}}`, which is not a variable name"),
            ),
        })
    }
}

#[derive(Debug, PartialEq, Eq)]
enum ExpandProblem {
    Unset(String),
    Unclosed,
    BadName(String),
}

/// Expands `${VAR}` and `${VAR:-default}`; `$$` is a literal `$` (so `$${VAR}` is the text
/// `${VAR}`), and any other `$` stays as it is.
fn expand_vars(
    text: &str,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<String, ExpandProblem> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(dollar) = rest.find('$') {
        out.push_str(&rest[..dollar]);
        let after_dollar = &rest[dollar + 1..];
        if let Some(after) = after_dollar.strip_prefix('$') {
            out.push('$');
            rest = after;
            continue;
        }
        let Some(after) = after_dollar.strip_prefix('{') else {
            out.push('$');
            rest = after_dollar;
            continue;
        };
        let end = after.find('}').ok_or(ExpandProblem::Unclosed)?;
        out.push_str(&expand_one(&after[..end], lookup)?);
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// The value of one `${...}` body: `VAR` or `VAR:-default`.
fn expand_one(
    body: &str,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<String, ExpandProblem> {
    let (name, default) = match body.split_once(":-") {
        Some((name, default)) => (name, Some(default)),
        None => (body, None),
    };
    let valid = !name.is_empty()
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !name.starts_with(|c: char| c.is_ascii_digit());
    if !valid {
        return Err(ExpandProblem::BadName(name.to_string()));
    }
    match (lookup(name), default) {
        (Some(value), Some(default)) if value.is_empty() => Ok(default.to_string()),
        (Some(value), _) => Ok(value),
        (None, Some(default)) => Ok(default.to_string()),
        (None, None) => Err(ExpandProblem::Unset(name.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(name: &str) -> Option<String> {
        match name {
            "TOKEN" => Some("s3cret".into()),
            "EMPTY" => Some(String::new()),
            "ROOT" => Some("/data".into()),
            _ => None,
        }
    }

    #[test]
    fn oauth_is_read_from_http_entries() {
        let config = r#"{"mcpServers": {"docs": {"url": "https://h/mcp", "oauth": {
            "redirectUri": "http://127.0.0.1:9/cb", "scopes": ["a", "b"],
            "clientId": "id", "clientSecret": "${TOKEN}", "clientName": "me",
            "clientMetadataUrl": "https://me.example/client.json"}}}}"#;
        let specs = parse_config_with(config, &env).unwrap();
        let TransportSpec::Http(http) = &specs[0].transport else {
            panic!("http")
        };
        let oauth = http.oauth.as_ref().unwrap();
        assert_eq!(oauth.redirect_uri, "http://127.0.0.1:9/cb");
        assert_eq!(oauth.scopes, ["a", "b"]);
        assert_eq!(oauth.client_id.as_deref(), Some("id"));
        assert_eq!(oauth.client_secret.as_ref().unwrap().expose(), "s3cret");
        assert_eq!(oauth.client_name, "me");
        assert_eq!(
            oauth.client_metadata_url.as_deref(),
            Some("https://me.example/client.json")
        );
        assert!(!format!("{oauth:?}").contains("s3cret"));
    }

    #[test]
    fn client_credentials_need_no_redirect_uri() {
        let config = r#"{"mcpServers": {"bot": {"url": "https://h/mcp", "oauth": {
            "grant": "client_credentials", "clientId": "reports-bot",
            "clientSecret": "s3cret", "scopes": ["read"]}}}}"#;
        let specs = parse_config_with(config, &env).unwrap();
        let TransportSpec::Http(http) = &specs[0].transport else {
            panic!("not http")
        };
        let oauth = http.oauth.as_ref().unwrap();
        assert_eq!(oauth.grant, OAuthGrant::ClientCredentials);
        assert_eq!(oauth.client_id.as_deref(), Some("reports-bot"));
        assert_eq!(oauth.client_secret.as_ref().unwrap().expose(), "s3cret");
        assert_eq!(oauth.scopes, ["read"]);
        assert!(!format!("{oauth:?}").contains("s3cret"));
        let built = OAuthSpec::client_credentials("reports-bot", Secret::new("s3cret"))
            .with_scopes(["read"]);
        assert_eq!(*oauth, built);
    }

    #[test]
    fn a_private_key_file_selects_private_key_jwt() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("key.pem");
        let pem = "-----BEGIN PRIVATE KEY-----\nsekrit\n-----END PRIVATE KEY-----\n";
        std::fs::write(&path, pem).unwrap();
        let entry = |extra: &str| {
            format!(
                r#"{{"mcpServers": {{"bot": {{"url": "https://h/mcp", "oauth": {{
                "grant": "client_credentials", "clientId": "bot",
                "privateKeyFile": "{}"{extra}}}}}}}}}"#,
                path.display()
            )
        };
        let specs = parse_config_with(&entry(r#", "signingAlgorithm": "ES384""#), &env).unwrap();
        let TransportSpec::Http(http) = &specs[0].transport else {
            panic!("not http")
        };
        let oauth = http.oauth.as_ref().unwrap();
        let key = oauth.client_key.as_ref().unwrap();
        assert_eq!(
            (key.key_pem.expose(), key.algorithm),
            (pem, JwtAlgorithm::ES384)
        );
        assert!(!format!("{oauth:?}").contains("sekrit"));

        match parse_config_with(&entry(r#", "clientSecret": "s""#), &env) {
            Err(ConfigError::Field { field, .. }) => assert_eq!(field, "oauth.privateKeyFile"),
            other => panic!("{other:?}"),
        }
        std::fs::write(&path, "sekrit").unwrap();
        match parse_config_with(&entry(""), &env) {
            Err(err @ ConfigError::Field { .. }) => {
                assert!(!err.to_string().contains("sekrit"), "{err}");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn bad_oauth_entries_name_the_field() {
        for (oauth, field) in [
            (r#""yes""#, "oauth"),
            (r#"{}"#, "oauth.redirectUri"),
            (r#"{"redirectUri": "myapp:/cb"}"#, "oauth.redirectUri"),
            (
                r#"{"redirectUri": "http://h/cb", "scopes": "a"}"#,
                "oauth.scopes",
            ),
            (
                r#"{"redirectUri": "http://h/cb", "scopes": [1]}"#,
                "oauth.scopes[0]",
            ),
            (
                r#"{"redirectUri": "http://h/cb", "clientSecret": "s"}"#,
                "oauth.clientSecret",
            ),
            (
                r#"{"redirectUri": "http://h/cb", "clientId": 7}"#,
                "oauth.clientId",
            ),
            (r#"{"grant": "implicit"}"#, "oauth.grant"),
            (
                r#"{"grant": "client_credentials", "clientSecret": "s"}"#,
                "oauth.clientSecret",
            ),
            (r#"{"grant": "client_credentials"}"#, "oauth.clientId"),
            (
                r#"{"grant": "client_credentials", "clientId": "bot"}"#,
                "oauth.clientSecret",
            ),
            (
                r#"{"grant": "client_credentials", "clientId": "bot",
                    "privateKeyFile": "/nonexistent/key.pem"}"#,
                "oauth.privateKeyFile",
            ),
            (
                r#"{"grant": "client_credentials", "clientId": "bot",
                    "clientSecret": "s", "signingAlgorithm": "HS256"}"#,
                "oauth.signingAlgorithm",
            ),
        ] {
            let config =
                format!(r#"{{"mcpServers": {{"x": {{"url": "http://h", "oauth": {oauth}}}}}}}"#);
            match parse_config_with(&config, &env) {
                Err(ConfigError::Field {
                    server, field: got, ..
                }) => {
                    assert_eq!((server.as_str(), got.as_str()), ("x", field), "{oauth}");
                }
                other => panic!("{oauth}: {other:?}"),
            }
        }
    }

    #[test]
    fn a_token_store_directory_is_read_with_variables() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().display().to_string();
        let lookup = |name: &str| (name == "TOKENS").then(|| root.clone());
        let entry = |store: &str| {
            format!(
                r#"{{"mcpServers": {{"x": {{"url": "http://h", "oauth":
                    {{"redirectUri": "http://h/cb", "tokenStore": {store}}}}}}}}}"#
            )
        };
        let specs = parse_config_with(&entry(r#""${TOKENS}/mcp""#), &lookup).unwrap();
        let TransportSpec::Http(http) = &specs[0].transport else {
            panic!("not http: {:?}", specs[0]);
        };
        let store = http.oauth.as_ref().unwrap().token_store.as_ref().unwrap();
        let expected = FileTokenStore::new(dir.path().join("mcp"));
        assert_eq!(format!("{:?}", store.0), format!("{expected:?}"));

        let file = dir.path().join("file");
        std::fs::write(&file, "x").unwrap();
        let file = serde_json::to_string(&file.display().to_string()).unwrap();
        for (value, problem) in [
            ("7", "must be a string"),
            (r#""  ""#, "must be a directory path, not empty"),
            (file.as_str(), "which is not a directory"),
        ] {
            match parse_config_with(&entry(value), &lookup) {
                Err(ConfigError::Field {
                    server,
                    field,
                    problem: got,
                }) => {
                    assert_eq!((server.as_str(), field.as_str()), ("x", "oauth.tokenStore"));
                    assert!(got.contains(problem), "{value}: {got}");
                }
                other => panic!("{value}: {other:?}"),
            }
        }
        assert!(matches!(
            parse_config_with(&entry(r#""${NOPE}""#), &lookup),
            Err(ConfigError::UnsetVariable { field, .. }) if field == "oauth.tokenStore"
        ));
    }

    #[test]
    fn variables_expand_with_defaults() {
        assert_eq!(expand_vars("a${ROOT}b", &env).unwrap(), "a/datab");
        assert_eq!(expand_vars("${NOPE:-x}", &env).unwrap(), "x");
        assert_eq!(expand_vars("${EMPTY:-x}", &env).unwrap(), "x");
        assert_eq!(expand_vars("${EMPTY}", &env).unwrap(), "");
        assert_eq!(expand_vars("no vars $HOME", &env).unwrap(), "no vars $HOME");
        assert_eq!(expand_vars("$${ROOT}", &env).unwrap(), "${ROOT}");
        assert_eq!(expand_vars("a$$b$", &env).unwrap(), "a$b$");
        assert_eq!(expand_vars("$$$${ROOT}", &env).unwrap(), "$${ROOT}");
        assert_eq!(expand_vars("$$${ROOT}", &env).unwrap(), "$/data");
        assert_eq!(
            expand_vars("${NOPE}", &env),
            Err(ExpandProblem::Unset("NOPE".into()))
        );
        assert_eq!(expand_vars("${ROOT", &env), Err(ExpandProblem::Unclosed));
        assert_eq!(
            expand_vars("${1X}", &env),
            Err(ExpandProblem::BadName("1X".into()))
        );
    }

    #[test]
    fn a_full_config_parses() {
        let text = r#"{"mcpServers": {
            "remote": {"type": "http", "url": "https://example.com/mcp",
                       "headers": {"X-Key": "${TOKEN}"}, "bearerToken": "${TOKEN}",
                       "toolTimeoutMs": 1500},
            "fs": {"command": "node", "args": ["server.js", "${ROOT}"], "env": {"K": "v"}, "cwd": "/tmp"},
            "off": {"command": "x", "disabled": true}
        }}"#;
        let specs = parse_config_with(text, &env).unwrap();
        assert_eq!(specs.len(), 2);
        assert_eq!(specs[0].name, "fs");
        let TransportSpec::Stdio(stdio) = &specs[0].transport else {
            panic!("fs is stdio")
        };
        assert_eq!(stdio.args, ["server.js", "/data"]);
        assert_eq!(stdio.env["K"].expose(), "v");
        assert_eq!(stdio.cwd.as_deref(), Some(std::path::Path::new("/tmp")));
        let TransportSpec::Http(http) = &specs[1].transport else {
            panic!("remote is http")
        };
        assert_eq!(http.headers["X-Key"].expose(), "s3cret");
        assert_eq!(specs[1].tool_timeout, Some(Duration::from_millis(1500)));
        // Secrets never show in Debug output.
        assert!(!format!("{:?}", specs).contains("s3cret"));
    }

    #[test]
    fn bad_configs_name_the_server_and_field() {
        let cases = [
            (
                r#"{"mcpServers": {"a": {"args": []}}}"#,
                "`a`: field `command`",
            ),
            (
                r#"{"mcpServers": {"a": {"command": 3}}}"#,
                "`a`: field `command` must be a string",
            ),
            (
                r#"{"mcpServers": {"b": {"command": "x", "args": ["ok", 1]}}}"#,
                "`b`: field `args[1]`",
            ),
            (
                r#"{"mcpServers": {"c": {"url": "ftp://x"}}}"#,
                "`c`: field `url`",
            ),
            (
                r#"{"mcpServers": {"d": {"type": "sse", "url": "http://x"}}}"#,
                "`d`: field `type`",
            ),
            (
                r#"{"mcpServers": {"e": {"command": "x", "env": {"K": "${MISSING}"}}}}"#,
                "`e`: field `env.K` uses `${MISSING}`",
            ),
            (
                r#"{"mcpServers": {"f": {"command": "x", "toolTimeoutMs": -1}}}"#,
                "`f`: field `toolTimeoutMs`",
            ),
            (
                r#"{"mcpServers": {"g": {"url": "http://x", "headers": {"bad header": "v"}}}}"#,
                "`g`: field `headers.bad header`",
            ),
            (
                r#"{"mcpServers": {"h": {"command": "x", "url": "http://x"}}}"#,
                "`h`: field `command`",
            ),
            (r#"{"servers": {}}"#, "mcpServers"),
            (r#"{"mcpServers": "#, "not valid JSON"),
        ];
        for (text, expected) in cases {
            let err = parse_config_with(text, &env).unwrap_err().to_string();
            assert!(err.contains(expected), "{text}: {err}");
        }
    }
}
