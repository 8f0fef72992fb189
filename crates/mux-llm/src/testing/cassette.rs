//! Cassettes: recorded HTTP exchanges with a provider, kept as JSON files. A request is stored
//! as its method, its path (without key-like query parameters) and its body as normalised JSON
//! (object keys sorted); a response as its status, a few harmless headers and its body. No
//! request header is stored, and every secret the recorder saw is scrubbed from what it writes.
// Recording (and what only it uses) needs the `http` feature's client.
#![cfg_attr(not(feature = "http"), allow(dead_code, unused_imports))]

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The file format's version.
const VERSION: u32 = 1;
/// What replaces a secret in a cassette.
pub(crate) const REDACTED: &str = "[redacted]";

/// A failure to load, use or write a cassette.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CassetteError {
    /// The file does not exist and recording was not asked for.
    #[error("cassette {path} does not exist; record it with MUX_RECORD=1 (and a real key)")]
    Missing {
        /// The file.
        path: PathBuf,
    },
    /// The file could not be read or written.
    #[error("cassette {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The file is not a cassette.
    #[error("cassette {path} is not valid: {message}")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// Recording was asked for in a build without an HTTP client (enable a provider feature).
    #[error("recording cassette {path} needs mux-llm's `http` feature (any provider enables it)")]
    RecordingUnavailable {
        /// The file.
        path: PathBuf,
    },
}

/// A request as a cassette keeps it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CassetteRequest {
    /// The method (`POST`).
    pub method: String,
    /// The path and query, key-like query parameters removed.
    pub path: String,
    /// The body: normalised JSON, a string for a body that is not JSON, `null` when empty.
    pub body: Value,
}

/// A response as a cassette keeps it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CassetteResponse {
    /// The HTTP status.
    pub status: u16,
    /// Headers a client reads (content type, retry hints), names lowercased.
    pub headers: Vec<(String, String)>,
    /// The body text (an SSE stream as it came).
    pub body: String,
}

/// One recorded exchange.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Interaction {
    /// What was sent.
    pub request: CassetteRequest,
    /// What came back.
    pub response: CassetteResponse,
}

/// A cassette file's contents.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Cassette {
    /// The format version (1).
    pub version: u32,
    /// The exchanges, in the order they happened.
    pub interactions: Vec<Interaction>,
}

impl Cassette {
    /// Reads a cassette file.
    pub fn load(path: &Path) -> Result<Self, CassetteError> {
        let bytes = std::fs::read(path).map_err(|source| {
            if source.kind() == std::io::ErrorKind::NotFound {
                CassetteError::Missing {
                    path: path.to_owned(),
                }
            } else {
                CassetteError::Io {
                    path: path.to_owned(),
                    source,
                }
            }
        })?;
        let cassette: Self =
            serde_json::from_slice(&bytes).map_err(|err| CassetteError::Invalid {
                path: path.to_owned(),
                message: err.to_string(),
            })?;
        if cassette.version != VERSION {
            return Err(CassetteError::Invalid {
                path: path.to_owned(),
                message: format!("version {} (this build reads {VERSION})", cassette.version),
            });
        }
        Ok(cassette)
    }

    /// Writes the cassette (through a temporary file and a rename, so a reader never sees half
    /// a file), with every one of `secrets` scrubbed from the text.
    pub(crate) fn save(&self, path: &Path, secrets: &[String]) -> Result<(), CassetteError> {
        let io = |source| CassetteError::Io {
            path: path.to_owned(),
            source,
        };
        let mut text =
            serde_json::to_string_pretty(self).map_err(|err| CassetteError::Invalid {
                path: path.to_owned(),
                message: err.to_string(),
            })?;
        text = scrub(&text, secrets);
        text.push('\n');
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(io)?;
        }
        let mut temporary = path.as_os_str().to_owned();
        temporary.push(".recording");
        let temporary = PathBuf::from(temporary);
        std::fs::write(&temporary, text).map_err(io)?;
        std::fs::rename(&temporary, path).map_err(io)
    }
}

/// Query parameters that carry credentials (Gemini's `key`, signed URLs' `sig`, ...).
fn is_secret_param(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    matches!(
        name.as_str(),
        "key" | "api_key" | "apikey" | "api-key" | "access_token" | "token" | "sig" | "signature"
    ) || name.contains("secret")
        || name.contains("password")
}

/// Request headers that carry credentials.
pub(crate) fn is_secret_header(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    matches!(
        name.as_str(),
        "authorization"
            | "proxy-authorization"
            | "cookie"
            | "x-api-key"
            | "x-goog-api-key"
            | "api-key"
    ) || name.contains("key")
        || name.contains("token")
        || name.contains("secret")
        || name.contains("auth")
}

/// The secrets a request carries: credential header values (a bearer token also alone) and
/// the values of key-like query parameters.
pub(crate) fn secrets_of(path: &str, headers: &[(String, String)]) -> Vec<String> {
    let mut secrets = Vec::new();
    for (name, value) in headers {
        if is_secret_header(name) {
            secrets.push(value.clone());
            if let Some((_, token)) = value.split_once(' ') {
                secrets.push(token.trim().to_owned());
            }
        }
    }
    if let Some((_, query)) = path.split_once('?') {
        for pair in query.split('&') {
            if let Some((name, value)) = pair.split_once('=')
                && is_secret_param(name)
            {
                secrets.push(value.to_owned());
            }
        }
    }
    // Too short a value would scrub ordinary text; no real key is that short.
    secrets.retain(|s| s.len() >= 6);
    secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
    secrets.dedup();
    secrets
}

/// `text` with every secret replaced by `[redacted]` (longest first, so a bearer header goes
/// before the token inside it).
pub(crate) fn scrub(text: &str, secrets: &[String]) -> String {
    let mut text = text.to_owned();
    for secret in secrets {
        if text.contains(secret.as_str()) {
            text = text.replace(secret.as_str(), REDACTED);
        }
    }
    text
}

/// The path with key-like query parameters removed.
pub(crate) fn clean_path(path: &str) -> String {
    let Some((base, query)) = path.split_once('?') else {
        return path.to_owned();
    };
    let kept: Vec<&str> = query
        .split('&')
        .filter(|pair| {
            let name = pair.split_once('=').map_or(*pair, |(name, _)| name);
            !pair.is_empty() && !is_secret_param(name)
        })
        .collect();
    if kept.is_empty() {
        base.to_owned()
    } else {
        format!("{base}?{}", kept.join("&"))
    }
}

/// JSON with every object's keys sorted, so two bodies that differ only in key order compare
/// equal and a cassette's text does not depend on the order a client wrote.
pub fn normalize(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            let mut sorted = Map::new();
            for key in keys {
                sorted.insert(key.clone(), normalize(&map[key]));
            }
            Value::Object(sorted)
        }
        Value::Array(items) => Value::Array(items.iter().map(normalize).collect()),
        other => other.clone(),
    }
}

/// A request body as a cassette compares it: normalised JSON, a string when it is not JSON,
/// `null` when empty.
pub(crate) fn body_value(body: &[u8]) -> Value {
    if body.is_empty() {
        return Value::Null;
    }
    match serde_json::from_slice::<Value>(body) {
        Ok(value) => normalize(&value),
        Err(_) => Value::String(String::from_utf8_lossy(body).into_owned()),
    }
}

/// A line diff of `recorded` against `received` (`-` recorded, `+` received), with two lines
/// of context around each change and at most `limit` lines.
pub fn diff_lines(recorded: &str, received: &str, limit: usize) -> String {
    let a: Vec<&str> = recorded.lines().collect();
    let b: Vec<&str> = received.lines().collect();
    // Longest common subsequence table; bodies are small enough (the cap keeps it bounded).
    const CAP: usize = 4000;
    if a.len() > CAP || b.len() > CAP {
        return format!(
            "  (bodies too long to diff line by line: {} and {} lines)",
            a.len(),
            b.len()
        );
    }
    let mut lcs = vec![vec![0u32; b.len() + 1]; a.len() + 1];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            lcs[i][j] = if a[i] == b[j] {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let mut ops: Vec<(char, &str)> = Vec::new();
    let (mut i, mut j) = (0, 0);
    while i < a.len() || j < b.len() {
        if i < a.len() && j < b.len() && a[i] == b[j] {
            ops.push((' ', a[i]));
            i += 1;
            j += 1;
        } else if i < a.len() && (j == b.len() || lcs[i + 1][j] >= lcs[i][j + 1]) {
            ops.push(('-', a[i]));
            i += 1;
        } else {
            ops.push(('+', b[j]));
            j += 1;
        }
    }
    let near_change = |k: usize| {
        let lo = k.saturating_sub(2);
        let hi = (k + 2).min(ops.len().saturating_sub(1));
        (lo..=hi).any(|m| ops[m].0 != ' ')
    };
    let mut out = Vec::new();
    let mut skipped = false;
    for (k, (op, line)) in ops.iter().enumerate() {
        if near_change(k) {
            if skipped {
                out.push("  …".to_owned());
                skipped = false;
            }
            out.push(format!("{op} {line}"));
        } else {
            skipped = true;
        }
        if out.len() >= limit {
            out.push("  … (diff cut)".to_owned());
            break;
        }
    }
    out.join("\n")
}

/// Explains why `received` does not match `recorded`: the method and path when they differ,
/// and a diff of the bodies.
pub(crate) fn explain(recorded: &CassetteRequest, received: &CassetteRequest) -> String {
    let mut out = Vec::new();
    if recorded.method != received.method || recorded.path != received.path {
        out.push(format!(
            "- {} {}\n+ {} {}",
            recorded.method, recorded.path, received.method, received.path
        ));
    }
    if recorded.body != received.body {
        let pretty = |v: &Value| serde_json::to_string_pretty(v).unwrap_or_default();
        out.push(diff_lines(
            &pretty(&recorded.body),
            &pretty(&received.body),
            80,
        ));
    }
    out.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn key_order_does_not_matter_and_values_do() {
        let a = body_value(br#"{"b":1,"a":{"y":2,"x":[{"q":1,"p":2}]}}"#);
        let b = body_value(br#"{"a":{"x":[{"p":2,"q":1}],"y":2},"b":1}"#);
        assert_eq!(a, b);
        assert_eq!(a.to_string(), r#"{"a":{"x":[{"p":2,"q":1}],"y":2},"b":1}"#);
        assert_ne!(a, body_value(br#"{"b":2,"a":{"y":2,"x":[{"q":1,"p":2}]}}"#));
        assert_eq!(body_value(b""), Value::Null);
        assert_eq!(body_value(b"not json"), json!("not json"));
    }

    #[test]
    fn key_like_query_parameters_are_dropped_and_their_values_are_secrets() {
        let path = "/v1beta/models/g:generate?alt=sse&key=AIzaSyExampleKey123&Api_Key=zzzzzzzz";
        assert_eq!(clean_path(path), "/v1beta/models/g:generate?alt=sse");
        let headers = vec![
            (
                "authorization".to_owned(),
                "Bearer sk-proj-abcdef123".to_owned(),
            ),
            ("x-goog-api-key".to_owned(), "AIzaSyHeader987".to_owned()),
            ("content-type".to_owned(), "application/json".to_owned()),
        ];
        let secrets = secrets_of(path, &headers);
        for secret in [
            "sk-proj-abcdef123",
            "AIzaSyHeader987",
            "AIzaSyExampleKey123",
            "zzzzzzzz",
        ] {
            assert!(secrets.iter().any(|s| s == secret), "{secret} missed");
        }
        assert!(!secrets.iter().any(|s| s == "application/json"));
        let text = scrub(
            "echo: Bearer sk-proj-abcdef123 and sk-proj-abcdef123",
            &secrets,
        );
        assert_eq!(text, "echo: [redacted] and [redacted]");
    }

    #[test]
    fn a_diff_shows_the_changed_lines_with_context() {
        let recorded =
            "{\n  \"a\": 1,\n  \"b\": 2,\n  \"c\": 3,\n  \"d\": 4,\n  \"e\": 5,\n  \"f\": 6\n}";
        let received = recorded.replace("\"e\": 5", "\"e\": 50");
        let diff = diff_lines(recorded, &received, 80);
        assert!(diff.contains("-   \"e\": 5,"), "{diff}");
        assert!(diff.contains("+   \"e\": 50,"), "{diff}");
        assert!(!diff.contains("\"a\": 1"), "context is two lines: {diff}");
        assert!(diff.starts_with("  …"), "{diff}");
    }
}
