//! The HTTP surface: routes, SSE streams, the security checks, CORS and the body limit.

use std::convert::Infallible;
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, Path, State};
use axum::http::{HeaderMap, HeaderValue, Method, header};
use axum::middleware;
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Extension, Json, Router};
use futures::{Stream, StreamExt as _};
use mux_orchestrator::session::{MemorySessionStore, SessionStore};
use serde_json::json;
use tower_http::cors::{AllowOrigin, CorsLayer};

use crate::buffer::RunBuffer;
use crate::config::{ConfigError, WebConfig};
use crate::error::WebError;
use crate::registry::{AgentFactory, RunRegistry};
use crate::security::{self, Guard, HostAllowList, OnePrincipal, OriginAllowList, Principal};
use crate::types::RunAgentInput;

/// Builds the AG-UI router.
///
/// Routes: `POST /agui` (a run, answered as `text/event-stream`), `GET
/// /agui/runs/{runId}/events` (reattach; honours `Last-Event-ID`), `POST
/// /agui/runs/{runId}/cancel`, and `GET /agui/threads/{threadId}/messages` (a thread's history
/// as AG-UI messages plus its unanswered interrupts, for a page that reloads). Merge it into an application's router, or serve it with
/// [`crate::serve`].
///
/// Every request passes [the security checks](crate::WebConfig) first: an allowed `Host`, an
/// allowed `Origin` when one is sent, the authenticator, the probe limit, and a JSON body for
/// `POST`.
pub struct AguiRouter {
    factory: Arc<dyn AgentFactory>,
    store: Arc<dyn SessionStore>,
    config: WebConfig,
    #[cfg(feature = "page")]
    page: bool,
}

impl AguiRouter {
    /// A router whose threads are conversations of `agent` (an [`Agent`](mux_orchestrator::Agent),
    /// or any [`AgentFactory`]): each thread adds the page's frontend tools and its session id.
    /// Threads are kept in the agent's session store, or in memory when it has none.
    pub fn new(agent: impl AgentFactory) -> Self {
        let store = agent
            .session_store()
            .unwrap_or_else(|| Arc::new(MemorySessionStore::new()));
        Self {
            factory: Arc::new(agent),
            store,
            config: WebConfig::default(),
            #[cfg(feature = "page")]
            page: false,
        }
    }

    /// Keeps threads in `store` (a file, SQLite or PostgreSQL session store) rather than the
    /// agent's, so history survives restarts and a thread can move between processes.
    pub fn session_store(mut self, store: Arc<dyn SessionStore>) -> Self {
        self.store = store;
        self
    }

    /// Sets the configuration.
    pub fn config(mut self, config: WebConfig) -> Self {
        self.config = config;
        self
    }

    /// Serves the chat page too (feature `page`): `GET /` (the HTML), `/app.js` and `/app.css`,
    /// an @ag-ui/client page that streams runs from `/agui`, shows tool calls, asks Approve or
    /// Deny for interrupts and reloads a thread's history. The page passes the same `Host` and
    /// `Origin` checks as the AG-UI routes but needs no token (it holds none: open it as
    /// `/?token=…` and it sends the token on every request); every answer carries
    /// [`crate::page::CONTENT_SECURITY_POLICY`]. The page calls `/agui` at the root, so merge
    /// this router at `/`, not under a prefix.
    #[cfg(feature = "page")]
    pub fn with_page(mut self) -> Self {
        self.page = true;
        self
    }

    /// The axum router. An allowed host that is not `name` or `name:port` matches no request
    /// (and is logged); [`AguiRouter::try_build`] reports it instead.
    pub fn build(self) -> Router {
        let hosts = HostAllowList::new(&self.config.allowed_hosts).unwrap_or_else(|err| {
            tracing::error!(%err, "ignoring the allowed hosts that do not parse");
            HostAllowList::parsable(&self.config.allowed_hosts)
        });
        self.build_with(hosts)
    }

    /// The axum router, or the configuration error.
    pub fn try_build(self) -> Result<Router, ConfigError> {
        let hosts = HostAllowList::new(&self.config.allowed_hosts)?;
        Ok(self.build_with(hosts))
    }

    fn build_with(self, hosts: HostAllowList) -> Router {
        let config = self.config.clone();
        #[cfg(feature = "page")]
        let page = self.page;
        let registry = Arc::new(RunRegistry::new(self.factory, self.store, self.config));
        let guard = Arc::new(Guard {
            hosts,
            origins: OriginAllowList::new(&config.cors_origins),
            authenticator: config
                .authenticator
                .clone()
                .unwrap_or_else(|| Arc::new(OnePrincipal)),
            probes: Arc::clone(&registry.probes),
            on_refusal: config.on_refusal.clone(),
        });
        let mut router = Router::new()
            .route("/agui", post(start_run))
            .route("/agui/runs/{run_id}/events", get(reattach))
            .route("/agui/runs/{run_id}/cancel", post(cancel))
            .route("/agui/threads/{thread_id}/messages", get(messages))
            .layer(DefaultBodyLimit::max(config.body_limit))
            .layer(middleware::from_fn_with_state(
                Arc::clone(&guard),
                security::guard,
            ));
        #[cfg(feature = "page")]
        if page {
            router = router.merge(crate::page::routes().layer(middleware::from_fn_with_state(
                Arc::clone(&guard),
                security::guard_public,
            )));
        }
        if let Some(cors) = cors(&config.cors_origins) {
            router = router.layer(cors);
        }
        router.with_state(registry)
    }
}

type Shared = State<Arc<RunRegistry>>;

fn cors(origins: &[String]) -> Option<CorsLayer> {
    if origins.is_empty() {
        return None;
    }
    let allow = if origins.iter().any(|o| o == "*") {
        AllowOrigin::any()
    } else {
        AllowOrigin::list(
            origins
                .iter()
                .filter_map(|o| HeaderValue::from_str(o).ok())
                .collect::<Vec<_>>(),
        )
    };
    Some(
        CorsLayer::new()
            .allow_origin(allow)
            .allow_methods([Method::GET, Method::POST])
            .allow_headers([
                header::CONTENT_TYPE,
                header::AUTHORIZATION,
                header::ACCEPT,
                header::HeaderName::from_static("last-event-id"),
            ]),
    )
}

async fn start_run(
    State(registry): Shared,
    Extension(principal): Extension<Principal>,
    body: Bytes,
) -> Result<Response, WebError> {
    let input: RunAgentInput =
        serde_json::from_slice(&body).map_err(|e| WebError::BadRequest(e.to_string()))?;
    let run = registry.start(&principal, input).await?;
    let guard = registry
        .config
        .cancel_on_disconnect
        .then(|| DisconnectGuard {
            registry: Arc::clone(&registry),
            principal,
            run: Arc::clone(&run),
        });
    Ok(sse(follow(run, 0, guard)))
}

async fn reattach(
    State(registry): Shared,
    Extension(principal): Extension<Principal>,
    Path(run_id): Path<String>,
    headers: HeaderMap,
) -> Result<Response, WebError> {
    let run = registry.run(&principal, &run_id)?;
    let from = match headers.get("last-event-id").map(|v| v.to_str()) {
        None => 0,
        Some(Ok(text)) => text.trim().parse::<usize>().map(|n| n + 1).map_err(|_| {
            WebError::BadRequest(format!("Last-Event-ID `{text}` is not an event number"))
        })?,
        Some(Err(_)) => {
            return Err(WebError::BadRequest("Last-Event-ID is not text".into()));
        }
    };
    Ok(sse(follow(run, from, None)))
}

async fn cancel(
    State(registry): Shared,
    Extension(principal): Extension<Principal>,
    Path(run_id): Path<String>,
) -> Result<Response, WebError> {
    let cancelled = registry.cancel(&principal, &run_id)?;
    Ok(Json(json!({"runId": run_id, "cancelled": cancelled})).into_response())
}

async fn messages(
    State(registry): Shared,
    Extension(principal): Extension<Principal>,
    Path(thread_id): Path<String>,
) -> Result<Response, WebError> {
    let (messages, interrupts) = registry.history(&principal, &thread_id).await?;
    let body = json!({"threadId": thread_id, "messages": messages, "interrupts": interrupts});
    Ok(Json(body).into_response())
}

fn sse(stream: impl Stream<Item = Result<SseEvent, Infallible>> + Send + 'static) -> Response {
    let mut response = Sse::new(stream)
        .keep_alive(KeepAlive::default())
        .into_response();
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
        .headers_mut()
        .insert("x-accel-buffering", HeaderValue::from_static("no"));
    response
}

/// Cancels a run whose `POST /agui` stream was dropped before it ended.
struct DisconnectGuard {
    registry: Arc<RunRegistry>,
    principal: Principal,
    run: Arc<RunBuffer>,
}

impl Drop for DisconnectGuard {
    fn drop(&mut self) {
        if !self.run.is_done() {
            let _ = self.registry.cancel(&self.principal, &self.run.run_id);
        }
    }
}

/// The run's events from `from` on, then live ones, until the run ends.
fn follow(
    run: Arc<RunBuffer>,
    from: usize,
    guard: Option<DisconnectGuard>,
) -> impl Stream<Item = Result<SseEvent, Infallible>> + Send + 'static {
    let changes = run.watch();
    futures::stream::unfold(
        (run, from, changes, false, guard),
        |(run, next, mut changes, ended, guard)| async move {
            if ended {
                return None;
            }
            loop {
                changes.borrow_and_update();
                let (events, done) = run.read(next);
                if !events.is_empty() {
                    let next = events.last().map_or(next, |(i, _)| i + 1);
                    let ended = done && run.read(next).0.is_empty();
                    let batch: Vec<Result<SseEvent, Infallible>> = events
                        .into_iter()
                        .map(|(i, data)| Ok(SseEvent::default().id(i.to_string()).data(&*data)))
                        .collect();
                    return Some((
                        futures::stream::iter(batch),
                        (run, next, changes, ended, guard),
                    ));
                }
                if done {
                    return None;
                }
                if changes.changed().await.is_err() {
                    return None;
                }
            }
        },
    )
    .flat_map(|batch| batch)
}
