//! The chat page (feature `page`): `GET /`, `/app.js` and `/app.css`, compiled into the crate
//! from `page/` (its source is `page/src/app.js`, bundled by esbuild into the committed
//! `page/dist/app.js`). [`crate::AguiRouter::with_page`] adds these routes.
//!
//! The page is public (it holds no secret: the bearer token comes in its URL and stays in the
//! tab), so its routes check the `Host` and `Origin` as the AG-UI routes do, but ask for no
//! token. Every answer carries a Content-Security-Policy that lets the page load only its own
//! script and styles and talk only to its own origin, `nosniff`, and `no-referrer` (the token
//! is in the first URL).

use axum::Router;
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

/// The page's HTML.
const INDEX_HTML: &str = include_str!("../page/index.html");
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

/// The page's routes (`GET` and `HEAD`), without the checks: the router adds those.
pub(crate) fn routes<S: Clone + Send + Sync + 'static>() -> Router<S> {
    Router::new()
        .route(
            "/",
            get(|| async { asset("text/html; charset=utf-8", INDEX_HTML) }),
        )
        .route(
            "/app.js",
            get(|| async { asset("text/javascript; charset=utf-8", APP_JS) }),
        )
        .route(
            "/app.css",
            get(|| async { asset("text/css; charset=utf-8", APP_CSS) }),
        )
}

/// One of the page's files with its type and the security headers.
fn asset(content_type: &'static str, body: &'static str) -> Response {
    let mut response = body.into_response();
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
