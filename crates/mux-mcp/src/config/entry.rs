//! From a [`RawEntry`] to a validated [`ServerSpec`]: the transport, its fields and timeouts.

use std::path::PathBuf;

use serde::Deserialize;
use serde_json::Value;

use super::error::ConfigError;
use super::fields::{Fields, is_http_url};
use super::raw::{Loose, Object, RawEntry, RawHttp, RawStdio};
use super::sandbox::StdioSandbox;
use super::spec::{HttpSpec, ServerSpec, StdioSpec, TransportSpec};
use mux_tool::Secret;

/// A [`RawEntry`] with what validating it needs: the server's name (the entry's key in
/// `mcpServers`) and the lookup for `${VAR}` expansion.
pub(crate) struct Entry<'a> {
    /// The server's name.
    pub(crate) server: &'a str,
    /// The entry as written.
    pub(crate) raw: RawEntry,
    /// Looks a variable up.
    pub(crate) lookup: &'a dyn Fn(&str) -> Option<String>,
    /// The wall of a stdio server whose entry has no `sandbox` (the config's top-level one).
    pub(crate) default_sandbox: Option<&'a StdioSandbox>,
}

/// Reads the entry `value` of server `server`: `None` when it is `disabled`. A stdio server
/// whose entry has no `sandbox` gets `default_sandbox`.
pub(super) fn read_entry(
    server: &str,
    value: &Value,
    lookup: &dyn Fn(&str) -> Option<String>,
    default_sandbox: Option<&StdioSandbox>,
) -> Result<Option<ServerSpec>, ConfigError> {
    let fields = Fields { server, lookup };
    if server.trim().is_empty() {
        return Err(fields.error("name", "must not be empty"));
    }
    if !value.is_object() {
        return Err(fields.error("(entry)", "must be an object"));
    }
    // Every field of a raw entry takes any JSON value, so an object always reads.
    let mut raw =
        RawEntry::deserialize(value).map_err(|err| fields.error("(entry)", err.to_string()))?;
    if fields
        .flag("disabled", raw.disabled.take())?
        .unwrap_or(false)
    {
        return Ok(None);
    }
    ServerSpec::try_from(Entry {
        server,
        raw,
        lookup,
        default_sandbox,
    })
    .map(Some)
}

impl TryFrom<Entry<'_>> for ServerSpec {
    type Error = ConfigError;

    /// Validates the entry's fields in a fixed order (`type`, the transport's fields, then
    /// the timeouts), so the first problem reported does not depend on the JSON's key order.
    fn try_from(entry: Entry<'_>) -> Result<Self, ConfigError> {
        let Entry {
            server,
            raw,
            lookup,
            default_sandbox,
        } = entry;
        let fields = Fields { server, lookup };
        let kind = fields.string("type", raw.kind)?;
        let sandbox = fields.sandbox(raw.sandbox)?;
        let stdio = |raw_stdio| {
            let sandbox = sandbox.clone().unwrap_or_else(|| default_sandbox.cloned());
            stdio(fields, raw_stdio, sandbox)
        };
        let http = |raw_http| {
            if sandbox.is_some() {
                return Err(fields.error(
                    "sandbox",
                    "applies to stdio servers only; mux starts no process for an HTTP server",
                ));
            }
            http(fields, raw_http)
        };
        let transport = match kind.as_deref() {
            Some("stdio") => stdio(raw.stdio)?,
            Some("http" | "streamable-http" | "streamableHttp") => http(raw.http)?,
            Some(other) => {
                return Err(fields.error(
                    "type",
                    format!("is `{other}`; expected `stdio`, `http` or `streamable-http`"),
                ));
            }
            None => match (raw.stdio.command.is_some(), raw.http.url.is_some()) {
                (true, true) => {
                    return Err(fields.error("command", "and `url` are both set; pick one"));
                }
                (true, false) => stdio(raw.stdio)?,
                (false, true) => http(raw.http)?,
                (false, false) => return Err(fields.error("command", "is missing (or set `url`)")),
            },
        };
        Ok(ServerSpec {
            name: server.to_string(),
            transport,
            tool_timeout: fields.millis("toolTimeoutMs", raw.tool_timeout_ms)?,
            connect_timeout: fields.millis("connectTimeoutMs", raw.connect_timeout_ms)?,
        })
    }
}

/// `command`, `args`, `env`, `cwd` and the wall (`sandbox`, or the config's default).
fn stdio(
    fields: Fields<'_>,
    raw: RawStdio,
    sandbox: Option<StdioSandbox>,
) -> Result<TransportSpec, ConfigError> {
    let command = fields
        .string("command", raw.command)?
        .ok_or_else(|| fields.error("command", "is missing"))?;
    if command.trim().is_empty() {
        return Err(fields.error("command", "must not be empty"));
    }
    let args = fields.strings("args", raw.args, "must be an array of strings")?;
    let env = fields.secrets("env", raw.env)?;
    let cwd = fields.string("cwd", raw.cwd)?.map(PathBuf::from);
    if let (Some(cwd), Some(root)) = (
        &cwd,
        sandbox.as_ref().and_then(|sandbox| sandbox.root.as_ref()),
    ) && cwd != root
    {
        return Err(fields.error(
            "sandbox.root",
            format!(
                "is {} but `cwd` is {}: behind the wall the server starts in its root; set one of them",
                root.display(),
                cwd.display()
            ),
        ));
    }
    Ok(TransportSpec::Stdio(StdioSpec {
        command,
        args,
        env,
        cwd,
        sandbox,
    }))
}

/// `url`, `headers`, `bearerToken`, `oauth` and `caCertificates`.
fn http(fields: Fields<'_>, raw: RawHttp) -> Result<TransportSpec, ConfigError> {
    let url = fields
        .string("url", raw.url)?
        .ok_or_else(|| fields.error("url", "is missing"))?;
    if !is_http_url(&url) {
        return Err(fields.error("url", "must start with http:// or https://"));
    }
    let headers = fields.secrets("headers", raw.headers)?;
    if let Some(name) = headers
        .keys()
        .find(|name| http::HeaderName::from_bytes(name.as_bytes()).is_err())
    {
        return Err(fields.error(
            &format!("headers.{name}"),
            "is not a valid HTTP header name",
        ));
    }
    let bearer_token = fields
        .string("bearerToken", raw.bearer_token)?
        .map(Secret::new);
    let oauth = match raw.oauth {
        None => None,
        Some(Loose::Given(Object(oauth))) => Some(fields.oauth(oauth)?),
        Some(Loose::Wrong) => return Err(fields.error("oauth", "must be an object")),
    };
    let ca_certificates = ca_certificates(fields, raw.ca_certificates)?;
    Ok(TransportSpec::Http(HttpSpec {
        url,
        headers,
        bearer_token,
        oauth,
        ca_certificates,
    }))
}

/// `caCertificates`: an array of PEM file paths, each read and checked now so that a bad
/// file is reported with the config.
fn ca_certificates(
    fields: Fields<'_>,
    raw: super::raw::Texts,
) -> Result<Vec<PathBuf>, ConfigError> {
    let paths = fields.strings("caCertificates", raw, "must be an array of file paths")?;
    paths
        .into_iter()
        .enumerate()
        .map(|(i, path)| {
            let path = PathBuf::from(path);
            crate::tls::read_ca_file(&path)
                .map_err(|problem| fields.error(&format!("caCertificates[{i}]"), problem))?;
            Ok(path)
        })
        .collect()
}
