//! A local server that replays a cassette, or records one by forwarding to the real provider.
// Recording (and what only it uses) needs the `http` feature's client.
#![cfg_attr(not(feature = "http"), allow(dead_code, unused_imports))]

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde_json::json;
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinSet;

use super::cassette::{
    Cassette, CassetteError, CassetteRequest, Interaction, clean_path, explain, scrub, secrets_of,
};
use super::replay::{RecordedRequest, Reply, read_request, write_reply};

/// Whether a cassette is replayed or recorded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CassetteMode {
    /// Serve the recorded responses; a request that matches none gets a diff.
    Replay,
    /// Forward every request to the provider and write what happened to the file.
    Record,
}

impl CassetteMode {
    /// `Record` when `MUX_RECORD=1`, else `Replay`.
    pub fn from_env() -> Self {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// Like [`CassetteMode::from_env`], reading variables through `get`.
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Self {
        if get("MUX_RECORD").is_some_and(|v| v.trim() == "1") {
            Self::Record
        } else {
            Self::Replay
        }
    }
}

/// The response headers a cassette keeps: what a client reads. Everything else (cookies,
/// organisation and request ids, …) is left out.
fn kept_header(name: &str) -> bool {
    matches!(name, "content-type" | "retry-after" | "retry-after-ms")
        || name.starts_with("x-ratelimit-")
        || name.starts_with("anthropic-ratelimit-")
}

#[cfg(feature = "http")]
struct Upstream {
    base: String,
    client: reqwest::Client,
}

struct State {
    path: PathBuf,
    mode: CassetteMode,
    #[cfg(feature = "http")]
    upstream: Option<Upstream>,
    cassette: Mutex<Cassette>,
    /// Replay: which recorded interactions were served.
    used: Mutex<Vec<bool>>,
    /// Every secret seen while recording, scrubbed from each write.
    secrets: Mutex<Vec<String>>,
    mismatches: Mutex<Vec<String>>,
    errors: Mutex<Vec<String>>,
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A cassette served on 127.0.0.1: point a provider client's base URL at [`url`](Self::url).
///
/// In [`CassetteMode::Replay`] each request is matched on its method, path (key-like query
/// parameters removed) and normalised JSON body against the recorded interactions not used
/// yet; a request that matches none gets a 400 whose message is a diff against the closest
/// one, so the client fails with an `invalid_request` error that says what changed. In
/// [`CassetteMode::Record`] each request goes to the real provider and the exchange is
/// appended to the file, with no request header and every key scrubbed.
///
/// ```no_run
/// # #[cfg(feature = "anthropic")]
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// use mux_llm::anthropic::AnthropicClient;
/// use mux_llm::testing::CassetteServer;
/// use mux_llm::{LlmClient, Request};
///
/// // Replays tests/cassettes/hello.json; MUX_RECORD=1 re-records it from the real API.
/// let cassette =
///     CassetteServer::start("tests/cassettes/hello.json", "https://api.anthropic.com").await?;
/// let key = std::env::var("ANTHROPIC_API_KEY").unwrap_or_else(|_| "offline".into());
/// let client = AnthropicClient::new(mux_llm::Secret::new(key))?.base_url(cassette.url())?;
/// let reply = client.complete(Request::new("claude-sonnet-4-5", 256).user("Hi")).await?;
/// println!("{}", reply.text());
/// # Ok(()) }
/// ```
pub struct CassetteServer {
    addr: SocketAddr,
    state: Arc<State>,
    task: tokio::task::JoinHandle<()>,
}

impl std::fmt::Debug for CassetteServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CassetteServer")
            .field("path", &self.state.path)
            .field("mode", &self.state.mode)
            .field("addr", &self.addr)
            .finish()
    }
}

impl CassetteServer {
    /// Replays `path`, or records it from `upstream` (the provider's real base URL, such as
    /// `https://api.openai.com`) when `MUX_RECORD=1`.
    pub async fn start(path: impl AsRef<Path>, upstream: &str) -> Result<Self, CassetteError> {
        match CassetteMode::from_env() {
            CassetteMode::Replay => Self::replay(path).await,
            CassetteMode::Record => Self::record(path, upstream).await,
        }
    }

    /// Replays the cassette at `path`.
    pub async fn replay(path: impl AsRef<Path>) -> Result<Self, CassetteError> {
        let path = path.as_ref().to_owned();
        let cassette = Cassette::load(&path)?;
        Self::serve(path, CassetteMode::Replay, cassette, None).await
    }

    /// Records a new cassette at `path` (replacing the file) from the provider at `upstream`.
    pub async fn record(path: impl AsRef<Path>, upstream: &str) -> Result<Self, CassetteError> {
        let path = path.as_ref().to_owned();
        let cassette = Cassette {
            version: 1,
            interactions: Vec::new(),
        };
        #[cfg(feature = "http")]
        {
            let client = reqwest::Client::builder()
                .tcp_nodelay(true)
                .connect_timeout(std::time::Duration::from_secs(30))
                .build()
                .map_err(|err| CassetteError::Invalid {
                    path: path.clone(),
                    message: format!("building the HTTP client: {err}"),
                })?;
            let upstream = Upstream {
                base: upstream.trim_end_matches('/').to_owned(),
                client,
            };
            cassette.save(&path, &[])?;
            Self::serve(path, CassetteMode::Record, cassette, Some(upstream)).await
        }
        #[cfg(not(feature = "http"))]
        {
            let _ = (upstream, cassette);
            Err(CassetteError::RecordingUnavailable { path })
        }
    }

    async fn serve(
        path: PathBuf,
        mode: CassetteMode,
        cassette: Cassette,
        #[cfg(feature = "http")] upstream: Option<Upstream>,
        #[cfg(not(feature = "http"))] _upstream: Option<()>,
    ) -> Result<Self, CassetteError> {
        let io = |source| CassetteError::Io {
            path: path.clone(),
            source,
        };
        let listener = TcpListener::bind("127.0.0.1:0").await.map_err(io)?;
        let addr = listener.local_addr().map_err(io)?;
        let state = Arc::new(State {
            used: Mutex::new(vec![false; cassette.interactions.len()]),
            path,
            mode,
            #[cfg(feature = "http")]
            upstream,
            cassette: Mutex::new(cassette),
            secrets: Mutex::new(Vec::new()),
            mismatches: Mutex::new(Vec::new()),
            errors: Mutex::new(Vec::new()),
        });
        let shared = state.clone();
        let task = tokio::spawn(async move {
            let mut connections = JoinSet::new();
            while let Ok((stream, _)) = listener.accept().await {
                let state = shared.clone();
                connections.spawn(async move {
                    if let Err(err) = handle(stream, &state).await {
                        lock(&state.errors).push(err.to_string());
                    }
                });
                while connections.try_join_next().is_some() {}
            }
        });
        Ok(Self { addr, state, task })
    }

    /// The base URL, `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Whether this server replays or records.
    pub fn mode(&self) -> CassetteMode {
        self.state.mode
    }

    /// The explanation of each request that matched no recorded interaction.
    pub fn mismatches(&self) -> Vec<String> {
        lock(&self.state.mismatches).clone()
    }

    /// Recorded interactions not served yet (replay), or the number recorded (record).
    pub fn remaining(&self) -> usize {
        match self.state.mode {
            CassetteMode::Replay => lock(&self.state.used).iter().filter(|u| !**u).count(),
            CassetteMode::Record => lock(&self.state.cassette).interactions.len(),
        }
    }

    /// Failures while serving or writing (an unreachable provider, a file that could not be
    /// written).
    pub fn errors(&self) -> Vec<String> {
        lock(&self.state.errors).clone()
    }
}

impl Drop for CassetteServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn to_cassette(request: &RecordedRequest) -> CassetteRequest {
    CassetteRequest {
        method: request.method.clone(),
        path: clean_path(&request.path),
        body: super::cassette::body_value(&request.body),
    }
}

/// A 400 whose JSON error body every provider's client reads as `invalid_request`.
fn mismatch_reply(message: &str) -> Reply {
    let body = json!({"error": {"type": "cassette_mismatch", "message": message}});
    Reply::json(400, body.to_string())
}

async fn handle(mut stream: TcpStream, state: &State) -> Result<(), CassetteError> {
    let io = |source| CassetteError::Io {
        path: state.path.clone(),
        source,
    };
    stream.set_nodelay(true).map_err(io)?;
    let Some(request) = read_request(&mut stream).await.map_err(io)? else {
        return Ok(());
    };
    let reply = match state.mode {
        CassetteMode::Replay => replay(state, &request),
        CassetteMode::Record => record(state, &request).await,
    };
    write_reply(&mut stream, &reply).await.map_err(io)
}

fn replay(state: &State, request: &RecordedRequest) -> Reply {
    let received = to_cassette(request);
    let cassette = lock(&state.cassette);
    let mut used = lock(&state.used);
    let unused = || (0..used.len()).filter(|i| !used[*i]);
    if let Some(i) = unused().find(|i| cassette.interactions[*i].request == received) {
        used[i] = true;
        let recorded = &cassette.interactions[i].response;
        let mut reply = Reply::new(
            recorded.status,
            "application/octet-stream",
            recorded.body.clone(),
        );
        reply.set_headers(recorded.headers.clone());
        return reply;
    }
    let closest = unused()
        .find(|i| {
            let r = &cassette.interactions[*i].request;
            r.method == received.method && r.path == received.path
        })
        .or_else(|| unused().next());
    let message = match closest {
        Some(i) => format!(
            "cassette {}: {} {} matches no recorded request; against recorded request {} of {} \
             (- recorded, + received):\n{}\n",
            state.path.display(),
            received.method,
            received.path,
            i + 1,
            cassette.interactions.len(),
            explain(&cassette.interactions[i].request, &received),
        ),
        None => {
            let mut message = format!(
                "cassette {}: {} {} came after all {} recorded requests were used",
                state.path.display(),
                received.method,
                received.path,
                cassette.interactions.len(),
            );
            let same = |i: &usize| cassette.interactions[*i].request == received;
            if let Some(i) = (0..cassette.interactions.len()).find(same) {
                message.push_str(&format!(" (it repeats recorded request {})", i + 1));
            } else if let Some(last) = cassette.interactions.last() {
                message.push_str(&format!(
                    "; against the last one (- recorded, + received):\n{}\n",
                    explain(&last.request, &received)
                ));
            }
            message
        }
    };
    lock(&state.mismatches).push(message.clone());
    mismatch_reply(&message)
}

#[cfg(not(feature = "http"))]
async fn record(_state: &State, _request: &RecordedRequest) -> Reply {
    mismatch_reply("recording needs mux-llm's `http` feature")
}

#[cfg(feature = "http")]
async fn record(state: &State, request: &RecordedRequest) -> Reply {
    match forward(state, request).await {
        Ok(reply) => reply,
        Err(message) => {
            lock(&state.errors).push(message.clone());
            let body = json!({"error": {"type": "cassette_record_error", "message": message}});
            Reply::json(502, body.to_string())
        }
    }
}

/// Forwards a request to the provider, appends the exchange to the cassette and returns the
/// provider's reply.
#[cfg(feature = "http")]
async fn forward(state: &State, request: &RecordedRequest) -> Result<Reply, String> {
    let upstream = state
        .upstream
        .as_ref()
        .ok_or_else(|| "no upstream to record from".to_owned())?;
    {
        let mut secrets = lock(&state.secrets);
        secrets.extend(secrets_of(&request.path, &request.headers));
        secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
        secrets.dedup();
    }
    let secrets = lock(&state.secrets).clone();
    // Only a path goes after the provider's base URL, never another URL or authority.
    if !request.path.starts_with('/') || request.path.starts_with("//") {
        return Err(format!(
            "refusing to forward a request target that is not a path: `{}`",
            scrub(&request.path, &secrets)
        ));
    }
    let method = reqwest::Method::from_bytes(request.method.as_bytes())
        .map_err(|_| format!("unsupported method `{}`", request.method))?;
    let url = format!("{}{}", upstream.base, request.path);
    let mut builder = upstream
        .client
        .request(method, &url)
        .body(request.body.clone());
    for (name, value) in &request.headers {
        let hop = matches!(
            name.as_str(),
            "host" | "content-length" | "connection" | "transfer-encoding" | "accept-encoding"
        );
        if !hop {
            builder = builder.header(name.as_str(), value.as_str());
        }
    }
    let timeout = std::time::Duration::from_secs(600);
    let response = tokio::time::timeout(timeout, builder.send())
        .await
        .map_err(|_| format!("the provider did not answer within {timeout:?}"))?
        .map_err(|err| scrub(&format!("forwarding to the provider: {err}"), &secrets))?;
    let status = response.status().as_u16();
    let headers: Vec<(String, String)> = response
        .headers()
        .iter()
        .filter(|(name, _)| kept_header(name.as_str()))
        .filter_map(|(name, value)| {
            Some((name.as_str().to_owned(), value.to_str().ok()?.to_owned()))
        })
        .collect();
    let body = tokio::time::timeout(timeout, response.bytes())
        .await
        .map_err(|_| format!("the provider's body did not end within {timeout:?}"))?
        .map_err(|err| scrub(&format!("reading the provider's body: {err}"), &secrets))?;
    let text = String::from_utf8(body.to_vec())
        .map_err(|_| "the provider's body is not UTF-8 text; not recorded".to_owned())?;
    let interaction = Interaction {
        request: scrubbed_request(to_cassette(request), &secrets),
        response: super::cassette::CassetteResponse {
            status,
            headers: headers.clone(),
            body: scrub(&text, &secrets),
        },
    };
    {
        let mut cassette = lock(&state.cassette);
        cassette.interactions.push(interaction);
        cassette
            .save(&state.path, &secrets)
            .map_err(|err| err.to_string())?;
    }
    let mut reply = Reply::new(status, "application/octet-stream", body.to_vec());
    reply.set_headers(headers);
    Ok(reply)
}

#[cfg(feature = "http")]
fn scrubbed_request(mut request: CassetteRequest, secrets: &[String]) -> CassetteRequest {
    fn walk(value: &mut serde_json::Value, secrets: &[String]) {
        match value {
            serde_json::Value::String(text) => *text = scrub(text, secrets),
            serde_json::Value::Array(items) => items.iter_mut().for_each(|v| walk(v, secrets)),
            serde_json::Value::Object(map) => map.values_mut().for_each(|v| walk(v, secrets)),
            _ => {}
        }
    }
    request.path = scrub(&request.path, secrets);
    walk(&mut request.body, secrets);
    request
}
