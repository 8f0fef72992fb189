//! [`A2aServer`]: one agent, its card, its tasks and contexts, as a router or a running
//! server.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use mux_http::serve::{Addrs, Limits, RequestBody, accept_loop};
use mux_orchestrator::Agent;
use mux_orchestrator::runs::{MemoryRunStore, RunOwner, RunRecord, RunStore, Takeover};
use mux_orchestrator::session::{MemorySessionStore, SessionStore};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::card::{Card, RPC_PATH};
use crate::config::A2aConfig;
use crate::contexts::Contexts;
use crate::methods::Methods;
use crate::router::{LocalPort, Shared, router};
use crate::security::Guard;
use crate::stored::Durable;
use crate::tasks::Tasks;

/// Why a server could not be built or started.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum A2aError {
    /// The configuration does not hold together.
    #[error("invalid A2A server configuration: {0}")]
    Config(String),
    /// The address could not be bound.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// Why.
        source: std::io::Error,
    },
    /// A non-loopback address without a bearer token: anyone on the network could run the
    /// agent's tools.
    #[error(
        "refusing to listen on {addr} without a bearer token (A2aConfig::bearer_token); only loopback addresses may go without one"
    )]
    Unprotected {
        /// The address.
        addr: SocketAddr,
    },
}

/// One agent served over A2A 1.0: `GET /.well-known/agent-card.json` and the JSON-RPC
/// endpoint `POST /a2a`.
///
/// Each A2A context is a session of the agent (in the agent's session store, or one given
/// with [`session_store`](Self::session_store), or in memory); each task is one prompt's run
/// on it, from `submitted` through `working` and any `input-required` pause (an approval, a
/// question) to `completed`, `failed` or `canceled`.
///
/// Tasks live in a run store ([`run_store`](Self::run_store); in memory by default): every
/// process serving the same agent on the same session and run stores (SQLite on one machine,
/// PostgreSQL across machines) gets, lists, follows, cancels and answers every task, and a
/// restarted process finds them all. See docs/a2a.md for what a restart or a crash does to
/// a task.
pub struct A2aServer {
    agent: Agent,
    config: A2aConfig,
    store: Option<Arc<dyn SessionStore>>,
    runs: Option<Arc<dyn RunStore>>,
}

impl std::fmt::Debug for A2aServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("A2aServer")
            .field("agent", &self.agent)
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl A2aServer {
    /// Serves `agent` with the default configuration.
    pub fn new(agent: Agent) -> Self {
        Self {
            agent,
            config: A2aConfig::default(),
            store: None,
            runs: None,
        }
    }

    /// Sets the configuration.
    pub fn config(mut self, config: A2aConfig) -> Self {
        self.config = config;
        self
    }

    /// Keeps contexts and tasks in `store` (one database: [`Store::open`](mux_orchestrator::Store::open))
    /// rather than the agent's: give every process that serves the agent the same one.
    pub fn store(self, store: &mux_orchestrator::Store) -> Self {
        self.session_store(store.sessions()).run_store(store.runs())
    }

    /// Keeps contexts in `store` rather than the agent's store.
    pub fn session_store(mut self, store: Arc<dyn SessionStore>) -> Self {
        self.store = Some(store);
        self
    }

    /// Keeps tasks in `store` rather than in memory: give every process that serves the
    /// agent the same run store and the same session store.
    pub fn run_store(mut self, store: Arc<dyn RunStore>) -> Self {
        self.runs = Some(store);
        self
    }

    /// The axum router, to merge into an application (serve it with
    /// `into_make_service`; the server's own loopback origin is then unknown, so browser
    /// pages need [`A2aConfig::allowed_origins`]). The returned token stops every run of
    /// the router where it is, as a process that ends would.
    pub fn router(self) -> Result<(Router, CancellationToken), A2aError> {
        let stop = CancellationToken::new();
        let guard = Guard::new(&self.config).map_err(A2aError::Config)?;
        let store = self
            .store
            .or_else(|| self.agent.session_store().cloned())
            .unwrap_or_else(|| Arc::new(MemorySessionStore::new()));
        let runs = self
            .runs
            .or_else(|| self.agent.run_store().cloned())
            .unwrap_or_else(|| Arc::new(MemoryRunStore::new()));
        let card = Card::new(&self.agent, &self.config);
        let config = self.config;
        let shared = Shared {
            methods: Methods {
                tasks: Arc::new(Tasks::new(config.max_tasks)),
                contexts: Contexts::new(self.agent, store),
                durable: Durable {
                    owner: RunOwner::new(
                        runs,
                        "a2a",
                        crate::stored::PREFIX,
                        config.lease,
                        stop.clone(),
                    ),
                },
                max_log: config.max_task_log,
                retention: config.task_retention,
                pruned: std::sync::Mutex::default(),
            },
            guard,
            card,
            public_url: config.public_url.clone(),
            body_limit: config.body_limit,
            body_timeout: config.body_timeout,
        };
        let shared = Arc::new(shared);
        // Tasks of stopped processes are taken over here, and old ended ones forgotten.
        shared.methods.durable.owner.watch(Arc::downgrade(&shared));
        Ok((router(shared), stop))
    }

    /// Listens on `addr` and serves until [`Running::shutdown`]. A non-loopback address
    /// needs a bearer token.
    pub async fn serve(self, addr: SocketAddr) -> Result<Running, A2aError> {
        if !addr.ip().is_loopback() && self.config.bearer_token.is_none() {
            return Err(A2aError::Unprotected { addr });
        }
        let listener = TcpListener::bind(addr)
            .await
            .map_err(|source| A2aError::Bind { addr, source })?;
        let addr = listener.local_addr().unwrap_or(addr);
        // mux-http's one accept loop, as every mux server: at the cap a new connection sheds
        // the oldest idle one. Stopping stops every run, so nothing is left to wait for.
        let limits = Limits::default()
            .header_read_timeout(self.config.header_timeout)
            .body_read_timeout(self.config.body_timeout)
            .idle_timeout(self.config.idle_timeout)
            .max_connections(self.config.max_connections)
            .shutdown_grace(std::time::Duration::ZERO);
        let (router, stop) = self.router()?;
        let task = tokio::spawn(accept_loop(
            listener,
            limits,
            stop.clone(),
            move |request: axum::http::Request<RequestBody>, addrs: Addrs| {
                let mut router = router.clone();
                let mut request = request.map(Body::new);
                request
                    .extensions_mut()
                    .insert(LocalPort(addrs.local.port()));
                async move {
                    match tower_service::Service::call(&mut router, request).await {
                        Ok(response) => response,
                        Err(never) => match never {},
                    }
                }
            },
        ));
        Ok(Running { addr, stop, task })
    }
}

/// A running server. Dropping it does not stop it; call [`Running::shutdown`].
#[derive(Debug)]
pub struct Running {
    addr: SocketAddr,
    stop: CancellationToken,
    task: JoinHandle<()>,
}

impl Running {
    /// The address it listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://<addr>/`: where clients find the card.
    pub fn url(&self) -> String {
        format!("http://{}/", self.addr)
    }

    /// `http://<addr>/a2a`: the JSON-RPC endpoint.
    pub fn rpc_url(&self) -> String {
        format!("http://{}{RPC_PATH}", self.addr)
    }

    /// Stops accepting, closes the connections, stops every run where it is (a process
    /// sharing the run store takes the tasks over once their writers fall silent) and waits
    /// for the accept loop to end.
    pub async fn shutdown(self) {
        self.stop.cancel();
        let _ = self.task.await;
    }

    /// Waits until the server stops.
    pub async fn wait(self) {
        let _ = self.task.await;
    }
}

/// The tasks of processes that stopped, continued here; after each look, old ended tasks
/// are forgotten.
impl Takeover for Shared {
    fn continue_run(&self, record: RunRecord) -> futures::future::BoxFuture<'_, ()> {
        Box::pin(self.methods.continue_taken_run(record))
    }

    fn after_look(&self) -> futures::future::BoxFuture<'_, ()> {
        Box::pin(self.methods.prune())
    }
}
