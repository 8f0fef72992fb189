//! The chat page (feature `page`): `GET /`, `/app.js` and `/app.css`, compiled into the crate
//! from `page/` (its source is `page/src/app.js`, bundled by esbuild into the committed
//! `page/dist/app.js`). [`crate::AguiRouter::with_page`] adds these routes, branded and placed
//! by [`PageOptions`].
//!
//! The page is public (it holds no secret: the bearer token comes in its URL and stays in the
//! tab), so its routes check the `Host` and `Origin` as the AG-UI routes do, but ask for no
//! token. Every answer carries a Content-Security-Policy that lets the page load only its own
//! script and styles and talk only to its own origin, `nosniff`, and `no-referrer` (the token
//! is in the first URL).

use std::sync::Arc;

use axum::Router;
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

/// The page's HTML, with `{{title}}`, `{{placeholder}}` and `{{base}}` to fill.
const INDEX_HTML: &str = include_str!("../page/index.html");
/// The longest path prefix [`PageOptions::prefix`] takes.
const MAX_PREFIX: usize = 200;

/// How the chat page looks and where it lives: its title (the tab and the heading), the
/// prompt box's placeholder, and a path prefix under which the router serves every route.
///
/// ```
/// use mux_web::page::PageOptions;
///
/// let page = PageOptions::new()
///     .title("Acme support")
///     .placeholder("Ask about your order…")
///     .prefix("/support/chat")?;
/// assert_eq!(page.base(), "/support/chat");
/// assert!(PageOptions::new().prefix("/../admin").is_err());
/// # Ok::<(), mux_web::page::PagePrefixError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageOptions {
    title: String,
    placeholder: String,
    base: String,
}

impl Default for PageOptions {
    fn default() -> Self {
        Self {
            title: "mux web agent".to_owned(),
            placeholder: "Ask about this directory…".to_owned(),
            base: String::new(),
        }
    }
}

impl PageOptions {
    /// The default page: titled "mux web agent", at the root.
    pub fn new() -> Self {
        Self::default()
    }

    /// The title, shown in the tab and as the heading (any text; it is escaped).
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.title = title.into();
        self
    }

    /// The prompt box's placeholder (any text; it is escaped).
    pub fn placeholder(mut self, placeholder: impl Into<String>) -> Self {
        self.placeholder = placeholder.into();
        self
    }

    /// Serves every route of the router (the page and `/agui`) under `prefix`, such as
    /// `/support/chat`: the page is then `/support/chat/` and calls `/support/chat/agui`.
    /// Serve the built router at the root (or merge it into one at the root). `prefix` is
    /// `/`-separated segments of letters, digits, `-`, `_`, `.` and `~` (no `.` or `..`
    /// segment, no empty one), at most 200 bytes; `/` alone (or nothing) is the root.
    pub fn prefix(mut self, prefix: &str) -> Result<Self, PagePrefixError> {
        self.base = checked_prefix(prefix)?;
        Ok(self)
    }

    /// The prefix every route is under: empty at the root, else `/a/b` (no trailing `/`).
    pub fn base(&self) -> &str {
        &self.base
    }

    /// The page's HTML with these options filled in.
    fn html(&self) -> String {
        INDEX_HTML
            .replace("{{title}}", &escape(&self.title))
            .replace("{{placeholder}}", &escape(&self.placeholder))
            .replace("{{base}}", &self.base)
    }
}

/// A path prefix [`PageOptions::prefix`] refuses, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("page prefix `{prefix}`: {reason}")]
pub struct PagePrefixError {
    /// The prefix as given.
    pub prefix: String,
    /// What is wrong with it.
    pub reason: &'static str,
}

/// `prefix` as `/a/b` (or empty for the root), or why it cannot be one.
fn checked_prefix(prefix: &str) -> Result<String, PagePrefixError> {
    let refuse = |reason| PagePrefixError {
        prefix: prefix.to_owned(),
        reason,
    };
    if prefix.len() > MAX_PREFIX {
        return Err(refuse("longer than 200 bytes"));
    }
    let trimmed = prefix.strip_suffix('/').unwrap_or(prefix);
    if trimmed.is_empty() {
        return Ok(String::new());
    }
    let Some(rest) = trimmed.strip_prefix('/') else {
        return Err(refuse("does not start with `/`"));
    };
    for segment in rest.split('/') {
        if segment.is_empty() {
            return Err(refuse("has an empty segment (`//`)"));
        }
        if segment == "." || segment == ".." {
            return Err(refuse("has a `.` or `..` segment"));
        }
        if !segment
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~'))
        {
            return Err(refuse(
                "has a character other than letters, digits, `-`, `_`, `.`, `~` and `/`",
            ));
        }
    }
    Ok(trimmed.to_owned())
}

/// `text` safe inside HTML text and double- or single-quoted attributes.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}
/// The page's script: `page/src/app.js` with @ag-ui/client, bundled by esbuild.
const APP_JS: &str = include_str!("../page/dist/app.js");
/// The page's styles.
const APP_CSS: &str = include_str!("../page/app.css");

/// The `Content-Security-Policy` of every page answer: nothing but the page's own script,
/// styles and requests to its own origin; no inline script or style, no frames, no plugins,
/// no `<base>`, no form posts.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; \
style-src 'self'; connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; \
frame-ancestors 'none'";

/// The page's routes (`GET` and `HEAD`), without the checks: the router adds those (and the
/// prefix).
pub(crate) fn routes<S: Clone + Send + Sync + 'static>(options: &PageOptions) -> Router<S> {
    index_at("/", options)
        .route(
            "/app.js",
            get(|| async { asset("text/javascript; charset=utf-8", APP_JS) }),
        )
        .route(
            "/app.css",
            get(|| async { asset("text/css; charset=utf-8", APP_CSS) }),
        )
}

/// The page's HTML at `path`.
pub(crate) fn index_at<S: Clone + Send + Sync + 'static>(
    path: &str,
    options: &PageOptions,
) -> Router<S> {
    let html: Arc<str> = options.html().into();
    Router::new().route(
        path,
        get(move || {
            let html = Arc::clone(&html);
            async move { asset("text/html; charset=utf-8", html) }
        }),
    )
}

/// One of the page's files with its type and the security headers.
fn asset(content_type: &'static str, body: impl AsRef<str>) -> Response {
    let mut response = body.as_ref().to_owned().into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CONTENT_SECURITY_POLICY),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_are_normalised_or_refused_with_the_reason() {
        for (given, base) in [
            ("", ""),
            ("/", ""),
            ("/a", "/a"),
            ("/a/b-c_d.e~f/", "/a/b-c_d.e~f"),
        ] {
            assert_eq!(checked_prefix(given).as_deref(), Ok(base), "{given}");
        }
        for (given, reason) in [
            ("a", "start with"),
            ("//evil.example", "empty segment"),
            ("/a//b", "empty segment"),
            ("/a/../b", "`..`"),
            ("/./a", "`.`"),
            ("/a b", "character"),
            ("/a\"><script>", "character"),
            ("/a%2e%2e", "character"),
            ("/caf\u{e9}", "character"),
        ] {
            let err = checked_prefix(given).unwrap_err();
            assert!(err.reason.contains(reason), "{given}: {err}");
            assert!(err.to_string().contains(given), "{err}");
        }
        assert!(checked_prefix(&format!("/{}", "a".repeat(200))).is_err());
    }

    #[test]
    fn title_and_placeholder_cannot_leave_their_element() {
        let html = PageOptions::new()
            .title("</title><script>alert(1)</script>")
            .placeholder("\" autofocus onfocus=\"alert(1)")
            .html();
        assert!(!html.contains("<script>alert"), "{html}");
        assert!(!html.contains("\" autofocus"), "{html}");
        assert!(html.contains("&lt;/title&gt;&lt;script&gt;"), "{html}");
        assert!(!html.contains("{{"), "every slot is filled: {html}");
    }
}
