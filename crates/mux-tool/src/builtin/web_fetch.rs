//! `web_fetch` (feature `web`): one URL, size- and time-bounded, HTML turned into markdown.

use std::sync::Arc;
use std::time::Duration;

use reqwest::redirect::{Attempt, Policy};
use reqwest::{StatusCode, Url};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use super::public_dns::PublicDns;
use super::text::decode_head;
use crate::{Subject, ToolAnnotations, ToolContext, ToolError, ToolKind, ToolOutput, TypedTool};

/// How many bytes of the body are read at most, by default.
const DEFAULT_MAX_BYTES: usize = 2 * 1024 * 1024;
/// How long a fetch may take, by default, body included.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
/// How many redirects (within the same host) are followed.
const MAX_REDIRECTS: usize = 10;

/// The arguments of `web_fetch`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WebFetchArgs {
    /// The http or https URL to fetch.
    pub url: String,
}

/// Fetches a URL and returns it as readable text: HTML becomes markdown (scripts and styles
/// dropped), other text is returned as is, binary content is refused.
///
/// The subject is the URL, so permission rules can match its domain. Redirects are followed
/// only within the same host; a redirect elsewhere (an internal address included) is
/// reported, not followed, so the permission granted for one domain does not carry to
/// another. A name that resolves only to internal addresses (loopback, link-local, cloud
/// metadata, unspecified; see [`crate::address`]) is refused, unless the name is internal
/// itself (`localhost`), which the permission layer denies unless a rule names it.
#[derive(Clone, Debug)]
pub struct WebFetch {
    client: reqwest::Client,
    max_bytes: usize,
}

impl WebFetch {
    /// `web_fetch` with the default size cap and timeout.
    pub fn new() -> Result<Self, reqwest::Error> {
        Self::with_timeout(DEFAULT_TIMEOUT)
    }

    /// `web_fetch` whose requests (body included) time out after `timeout`.
    pub fn with_timeout(timeout: Duration) -> Result<Self, reqwest::Error> {
        let client = reqwest::Client::builder()
            .timeout(timeout)
            .connect_timeout(timeout)
            .redirect(Policy::custom(same_host_redirects))
            .dns_resolver(Arc::new(PublicDns))
            .user_agent(concat!("mux-web-fetch/", env!("CARGO_PKG_VERSION")))
            .build()?;
        Ok(Self {
            client,
            max_bytes: DEFAULT_MAX_BYTES,
        })
    }

    /// Reads at most `bytes` bytes of a body; the rest is cut with a marker.
    pub fn max_bytes(mut self, bytes: usize) -> Self {
        self.max_bytes = bytes;
        self
    }
}

fn same_host_redirects(attempt: Attempt<'_>) -> reqwest::redirect::Action {
    let first_host = attempt.previous().first().and_then(Url::host_str);
    if attempt.previous().len() > MAX_REDIRECTS {
        attempt.error(format!("more than {MAX_REDIRECTS} redirects"))
    } else if attempt.url().host_str() == first_host {
        attempt.follow()
    } else {
        attempt.stop()
    }
}

impl TypedTool for WebFetch {
    type Args = WebFetchArgs;
    const NAME: &'static str = "web_fetch";

    fn description(&self) -> String {
        "Fetches an http(s) URL and returns its content as readable text; HTML pages are \
         converted to markdown. Large pages are cut."
            .into()
    }

    fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations::read_only()
            .with_open_world(true)
            .with_kind(ToolKind::Fetch)
    }

    fn subject(&self, args: &WebFetchArgs) -> Subject {
        Subject::url(&args.url)
    }

    async fn call(&self, args: WebFetchArgs, cx: ToolContext) -> Result<ToolOutput, ToolError> {
        let url = Url::parse(&args.url)
            .map_err(|err| ToolError::InvalidArguments(format!("bad URL {:?}: {err}", args.url)))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(ToolError::InvalidArguments(format!(
                "only http and https URLs can be fetched, not {}:",
                url.scheme()
            )));
        }
        tokio::select! {
            () = cx.cancellation().cancelled() => Err(ToolError::Cancelled),
            result = self.fetch(url) => result,
        }
    }
}

impl WebFetch {
    async fn fetch(&self, url: Url) -> Result<ToolOutput, ToolError> {
        let mut response = self.client.get(url.clone()).send().await.map_err(|err| {
            ToolError::failed(format!("fetching {url} failed: {}", describe(&err)))
        })?;
        let status = response.status();
        let final_url = response.url().clone();
        if status.is_redirection() {
            let location = response
                .headers()
                .get(reqwest::header::LOCATION)
                .and_then(|value| value.to_str().ok())
                .unwrap_or("(no location)");
            return Ok(ToolOutput::error(format!(
                "{url} redirects to another host: {location}; fetch that URL if it is the one you want"
            ))
            .with_metadata("status", json!(status.as_u16())));
        }
        let content_type = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|value| value.to_str().ok())
            .unwrap_or("")
            .to_ascii_lowercase();

        let mut body = Vec::new();
        let mut cut = false;
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|err| ToolError::failed(format!("reading {url} failed: {}", describe(&err))))?
        {
            let room = self.max_bytes - body.len();
            if chunk.len() > room {
                body.extend_from_slice(&chunk[..room]);
                cut = true;
                break;
            }
            body.extend_from_slice(&chunk);
        }

        let kind = Kind::of(&content_type, &body);
        if kind == Kind::Binary {
            return Ok(ToolOutput::error(format!(
                "{final_url} returned binary content ({}); web_fetch reads text and HTML only",
                if content_type.is_empty() {
                    "no content type"
                } else {
                    &content_type
                }
            )));
        }
        let text = decode_head(&body);
        let mut text = match kind {
            Kind::Html => html_to_markdown(&text)?,
            _ => text.into_owned(),
        };
        if cut {
            text.push_str(&format!(
                "\n\n[content cut: only the first {} bytes were read]",
                self.max_bytes
            ));
        }
        let mut output = ToolOutput::text(text)
            .with_metadata("status", json!(status.as_u16()))
            .with_metadata("url", json!(final_url.as_str()))
            .with_metadata("content_type", json!(content_type))
            .with_metadata("bytes", json!(body.len()));
        if !status.is_success() {
            output.is_error = true;
            output.content.insert(
                0,
                crate::Content::text(format!("HTTP {} from {final_url}", status_line(status))),
            );
        }
        Ok(output)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Html,
    Text,
    Binary,
}

impl Kind {
    fn of(content_type: &str, body: &[u8]) -> Self {
        let mime = content_type.split(';').next().unwrap_or("").trim();
        if mime == "text/html" || mime == "application/xhtml+xml" {
            return Self::Html;
        }
        let textual = mime.starts_with("text/")
            || mime.ends_with("+json")
            || mime.ends_with("+xml")
            || matches!(
                mime,
                "application/json" | "application/xml" | "application/javascript"
            );
        if textual {
            return Self::Text;
        }
        let head = &body[..body.len().min(1024)];
        if !mime.is_empty() || head.contains(&0) {
            return Self::Binary;
        }
        let start = String::from_utf8_lossy(head)
            .trim_start()
            .to_ascii_lowercase();
        if start.starts_with("<!doctype html") || start.starts_with("<html") {
            Self::Html
        } else {
            Self::Text
        }
    }
}

fn html_to_markdown(html: &str) -> Result<String, ToolError> {
    htmd::HtmlToMarkdown::builder()
        .skip_tags(vec!["script", "style", "noscript", "iframe", "svg", "head"])
        .build()
        .convert(html)
        .map_err(|err| ToolError::failed(format!("cannot convert the HTML to text: {err}")))
}

fn status_line(status: StatusCode) -> String {
    match status.canonical_reason() {
        Some(reason) => format!("{} {reason}", status.as_u16()),
        None => status.as_u16().to_string(),
    }
}

/// The error and its causes, without the URL's query string repeated (reqwest's Display
/// includes the URL, which may carry tokens).
fn describe(err: &reqwest::Error) -> String {
    let kind = if err.is_timeout() {
        "timed out"
    } else if err.is_connect() {
        "could not connect"
    } else if err.is_redirect() {
        "too many redirects"
    } else if err.is_body() || err.is_decode() {
        "the body could not be read"
    } else {
        "request error"
    };
    let mut source = std::error::Error::source(err);
    let mut causes = Vec::new();
    while let Some(cause) = source {
        causes.push(cause.to_string());
        source = cause.source();
    }
    if causes.is_empty() {
        kind.to_owned()
    } else {
        format!("{kind} ({})", causes.join(": "))
    }
}
