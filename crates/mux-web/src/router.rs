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
use mux_orchestrator::runs::{
    MemoryRunStore, RunStatus, RunStore, RunStoreError, StoreFault, WRITE_TIMEOUT,
};
use mux_orchestrator::session::{MemorySessionStore, SessionStore};
use serde_json::json;
use tokio::time::Instant;
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
    runs: Arc<dyn RunStore>,
    config: WebConfig,
    #[cfg(feature = "page")]
    page: Option<crate::page::PageOptions>,
}

impl AguiRouter {
    /// A router whose threads are conversations of `agent` (an [`Agent`](mux_orchestrator::Agent),
    /// or any [`AgentFactory`]): each thread adds the page's frontend tools and its session id.
    /// Threads are kept in the agent's session store, or in memory when it has none.
    pub fn new(agent: impl AgentFactory) -> Self {
        let store = agent
            .session_store()
            .unwrap_or_else(|| Arc::new(MemorySessionStore::new()));
        let runs = agent
            .run_store()
            .unwrap_or_else(|| Arc::new(MemoryRunStore::new()));
        Self {
            factory: Arc::new(agent),
            store,
            runs,
            config: WebConfig::default(),
            #[cfg(feature = "page")]
            page: None,
        }
    }

    /// Keeps threads and runs in `store` (one database: [`Store::open`](mux_orchestrator::Store::open))
    /// rather than the agent's: a paused approval survives a restart, and every process on
    /// the store serves every thread.
    pub fn store(self, store: &mux_orchestrator::Store) -> Self {
        self.session_store(store.sessions()).run_store(store.runs())
    }

    /// Keeps threads in `store` (a file, SQLite or PostgreSQL session store) rather than the
    /// agent's, so history survives restarts and a thread can move between processes.
    pub fn session_store(mut self, store: Arc<dyn SessionStore>) -> Self {
        self.store = store;
        self
    }

    /// Keeps runs in `runs` (SQLite or PostgreSQL, beside the session store) rather than in
    /// this process's memory, so that every process on the store serves every thread: a
    /// run's events replay on any of them, a busy thread is busy on all, cancel and resume
    /// reach the run wherever it is, and a run whose process died is taken over after its
    /// [lease](WebConfig::lease). See the run model in `docs/web.md`.
    pub fn run_store(mut self, runs: Arc<dyn RunStore>) -> Self {
        self.runs = runs;
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
    /// [`crate::page::CONTENT_SECURITY_POLICY`]. `options` brand it (title, placeholder) and
    /// can place every route of this router under a path prefix
    /// ([`PageOptions::prefix`](crate::page::PageOptions::prefix)); serve or merge the built
    /// router at `/` either way. `PageOptions::default()` is the plain page at the root.
    #[cfg(feature = "page")]
    pub fn with_page(mut self, options: crate::page::PageOptions) -> Self {
        self.page = Some(options);
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
        let registry = Arc::new(RunRegistry::new(
            self.factory,
            self.store,
            self.runs,
            self.config,
        ));
        // Outside a tokio runtime the owner says it takes no runs over.
        registry.watch_runs();
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
        if let Some(options) = &page {
            let public =
                || middleware::from_fn_with_state(Arc::clone(&guard), security::guard_public);
            router = router.merge(crate::page::routes(options).layer(public()));
            if !options.base().is_empty() {
                // Under a prefix, the page is both `/a/b` and `/a/b/`.
                let slash = format!("{}/", options.base());
                router = Router::new()
                    .nest(options.base(), router)
                    .merge(crate::page::index_at(&slash, options).layer(public()));
            }
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
    let stored = registry.stored_of(&principal, &run);
    let guard = registry
        .config
        .cancel_on_disconnect
        .then(|| DisconnectGuard {
            registry: Arc::clone(&registry),
            principal,
            run: Arc::clone(&run),
        });
    Ok(sse(follow(run, 0, guard, stored)))
}

async fn reattach(
    State(registry): Shared,
    Extension(principal): Extension<Principal>,
    Path(run_id): Path<String>,
    headers: HeaderMap,
) -> Result<Response, WebError> {
    let after = match headers.get("last-event-id").map(|v| v.to_str()) {
        None => 0,
        Some(Ok(text)) => text.trim().parse::<u64>().map_err(|_| {
            WebError::BadRequest(format!("Last-Event-ID `{text}` is not an event number"))
        })?,
        Some(Err(_)) => {
            return Err(WebError::BadRequest("Last-Event-ID is not text".into()));
        }
    };
    if let Some(run) = registry.local_run(&principal, &run_id) {
        let stored = registry.stored_of(&principal, &run);
        return Ok(sse(follow(run, after, None, stored)));
    }
    // Another process's run (or one this process no longer keeps): from the run store.
    let id = registry.stored_run(&principal, &run_id).await?;
    let store = Arc::clone(registry.durable.owner.store());
    Ok(sse(follow_stored(store, id, after)))
}

async fn cancel(
    State(registry): Shared,
    Extension(principal): Extension<Principal>,
    Path(run_id): Path<String>,
) -> Result<Response, WebError> {
    let cancelled = registry.cancel(&principal, &run_id).await?;
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
            let registry = Arc::clone(&self.registry);
            let principal = self.principal.clone();
            let run_id = self.run.run_id.clone();
            tokio::spawn(async move {
                let _ = registry.cancel(&principal, &run_id).await;
            });
        }
    }
}

/// Where a store follower reads: the run store and the run's id there.
type StoredRun = (Arc<dyn RunStore>, String);

/// The run's events numbered after `after`, then live ones, until the run ends. When this
/// process stops writing a stored run (another one took it over), what follows comes from
/// the run store, `stored`, with the same numbers.
fn follow(
    run: Arc<RunBuffer>,
    after: u64,
    guard: Option<DisconnectGuard>,
    stored: Option<StoredRun>,
) -> impl Stream<Item = Result<SseEvent, Infallible>> + Send + 'static {
    let changes = run.watch();
    let local = futures::stream::unfold(
        (run, after, changes, false, guard),
        |(run, next, mut changes, ended, guard)| async move {
            if ended {
                return None;
            }
            loop {
                changes.borrow_and_update();
                let (events, done) = run.read(next);
                if !events.is_empty() {
                    let next = events.last().map_or(next, |(i, _)| *i);
                    let ended = done && run.read(next).0.is_empty();
                    let batch: Vec<Followed> = events
                        .into_iter()
                        .map(|(i, data)| Followed::Event(i, data))
                        .collect();
                    return Some((
                        futures::stream::iter(batch),
                        (run, next, changes, ended, guard),
                    ));
                }
                if done {
                    return None;
                }
                if run.is_moved() {
                    let rest = vec![Followed::Moved(next)];
                    return Some((
                        futures::stream::iter(rest),
                        (run, next, changes, true, guard),
                    ));
                }
                if changes.changed().await.is_err() {
                    return None;
                }
            }
        },
    )
    .flat_map(|batch| batch);
    local.flat_map(move |followed| match followed {
        Followed::Event(id, data) => {
            let event = SseEvent::default().id(id.to_string()).data(&*data);
            futures::stream::once(async move { Ok(event) }).left_stream()
        }
        Followed::Moved(next) => futures::stream::iter(stored.clone())
            .flat_map(move |(store, id)| follow_stored(store, id, next))
            .right_stream(),
    })
}

/// What a local follower yields: an event, or the number it read through when the run moved
/// to the run store.
enum Followed {
    Event(u64, Arc<str>),
    Moved(u64),
}

/// How many stored events one read takes.
const PAGE: usize = 256;
/// The longest a reader waits for a wake-up before it reads the store again.
const POLL: std::time::Duration = std::time::Duration::from_secs(1);

/// A run's events from the run store, numbered after `after`, then new ones as they are
/// stored (a wake-up makes the reader look; a lost one only delays it), until the run's
/// events end. A store that cannot be read for [`WRITE_TIMEOUT`] on end (each read bounded
/// by it too) ends the stream with a `RUN_ERROR` (code `run_store`) naming the cause.
fn follow_stored(
    store: Arc<dyn RunStore>,
    id: String,
    after: u64,
) -> impl Stream<Item = Result<SseEvent, Infallible>> + Send + 'static {
    futures::stream::unfold(
        (store, id, after, false),
        |(store, id, next, ended)| async move {
            if ended {
                return None;
            }
            // Since when the store could not be read (reset by a read that succeeds).
            let mut failing: Option<Instant> = None;
            loop {
                let wake = mux_orchestrator::runs::watch(&*store, &id, POLL).await;
                let read = tokio::time::timeout(WRITE_TIMEOUT, store.events_after(&id, next, PAGE))
                    .await
                    .unwrap_or_else(|_| Err(unanswered()));
                match read {
                    Ok(events) if !events.is_empty() => {
                        let last = events.last().map_or(next, |e| e.seq);
                        let ended = events
                            .iter()
                            .any(|e| crate::durable::ending_of(e).is_some());
                        let batch: Vec<Result<SseEvent, Infallible>> = events
                            .iter()
                            .map(|e| {
                                Ok(SseEvent::default()
                                    .id(e.seq.to_string())
                                    .data(e.event.to_string()))
                            })
                            .collect();
                        drop(wake);
                        return Some((futures::stream::iter(batch), (store, id, last, ended)));
                    }
                    Ok(_) => {
                        failing = None;
                        let over = tokio::time::timeout(
                            WRITE_TIMEOUT,
                            stored_run_over(&*store, &id, next),
                        )
                        .await;
                        if matches!(over, Ok(true)) {
                            return None;
                        }
                    }
                    Err(err) => {
                        drop(wake);
                        tracing::debug!(run = %id, "reading stored events: {err}");
                        let since = *failing.get_or_insert_with(Instant::now);
                        if since.elapsed() >= WRITE_TIMEOUT {
                            let event = unreadable(&id, &err);
                            return Some((
                                futures::stream::iter(vec![Ok(event)]),
                                (store, id, next, true),
                            ));
                        }
                        tokio::time::sleep(RETRY).await;
                        continue;
                    }
                }
                if let Some(wake) = wake {
                    wake.await;
                }
            }
        },
    )
    .flat_map(|batch| batch)
}

/// How long a reader waits before it reads a store that failed again.
const RETRY: std::time::Duration = std::time::Duration::from_millis(250);

/// The error of a store read cut short after [`WRITE_TIMEOUT`].
fn unanswered() -> RunStoreError {
    RunStoreError::Unavailable {
        operation: "reading a run",
        fault: StoreFault::Unanswered,
        reason: format!("the run store did not answer within {WRITE_TIMEOUT:?}"),
    }
}

/// The `RUN_ERROR` that ends a stream whose run store could not be read for
/// [`WRITE_TIMEOUT`]: it names the cause in a client's words (the driver's text, `err`, goes
/// to the log). It has no event id: it is not one of the run's stored events.
fn unreadable(id: &str, err: &RunStoreError) -> SseEvent {
    let fault = err.fault().unwrap_or(StoreFault::Failed);
    tracing::warn!(
        run = %id,
        fault = fault.as_str(),
        "ending a stream read from the run store: it could not be read for {WRITE_TIMEOUT:?}: {err}"
    );
    let error = crate::types::Event::RunError {
        message: format!(
            "{fault}: the run store could not be read for {} s; reattach once it is back",
            WRITE_TIMEOUT.as_secs()
        ),
        code: Some(crate::error::ErrorCode::RunStore.as_str().to_owned()),
    };
    SseEvent::default().data(serde_json::to_string(&error).unwrap_or_else(|_| "{}".into()))
}

/// Whether no event will follow `after` in run `id`: it is not running, or its last event
/// (already read) ended it.
async fn stored_run_over(store: &dyn RunStore, id: &str, after: u64) -> bool {
    let Ok(record) = store.get(id).await else {
        return false;
    };
    if record.status != RunStatus::Running {
        return record.last_seq <= after;
    }
    if record.last_seq == 0 || record.last_seq > after {
        return false;
    }
    match store.events_after(id, record.last_seq - 1, 1).await {
        Ok(last) => last
            .first()
            .is_some_and(|e| crate::durable::ending_of(e).is_some()),
        Err(_) => false,
    }
}
