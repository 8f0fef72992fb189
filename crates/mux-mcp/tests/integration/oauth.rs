//! OAuth against a local HTTP server that plays an OAuth-protected MCP server and its
//! authorization server. (The official conformance suite, `cargo xtask conformance`, runs the
//! full matrix of OAuth scenarios; this test pins the flow inside the crate's own tests.)

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use ring::rand::SystemRandom;
use ring::signature::{self, EcdsaKeyPair, KeyPair};
use std::time::Duration;

use mux_mcp::{
    AuthProgress, ClientFeatures, ClientHandlers, ConnectError, ConnectionOptions, ConnectionState,
    FileTokenStore, HandlerError, JwtAlgorithm, Lifecycle, McpEvent, OAuthSpec, PrivateKeyJwt,
    Received, Secret, ServerConnection, ServerSpec, StoredCredentials, TokenStore, TokenStoreError,
};
use mux_tool::{BoxFuture, ToolContext};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const TOKEN: &str = "token-for-mux";
const REFRESH: &str = "refresh-for-mux";
const REDIRECT: &str = "http://127.0.0.1:9/callback";
/// The client-credentials client the fake knows: `cc-bot` with secret `cc-secret`.
const CC_CLIENT: &str = "cc-bot";
const CC_SECRET: &str = "cc-secret";
/// `Basic` credentials of `cc-bot:cc-secret`.
const CC_BASIC: &str = "Basic Y2MtYm90OmNjLXNlY3JldA==";

/// One parsed request.
struct Request {
    method: String,
    path: String,
    headers: HashMap<String, String>,
    body: String,
}

async fn read_request(stream: &mut TcpStream) -> Option<Request> {
    let mut buffer = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        if let Some(at) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buffer.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buffer[..head_end]).to_string();
    let mut lines = head.lines();
    let mut first = lines.next()?.split_whitespace();
    let method = first.next()?.to_string();
    let path = first.next()?.to_string();
    let headers: HashMap<String, String> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let length: usize = headers
        .get("content-length")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    while buffer.len() < head_end + length {
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            break;
        }
        buffer.extend_from_slice(&chunk[..n]);
    }
    let body = String::from_utf8_lossy(&buffer[head_end..]).to_string();
    Some(Request {
        method,
        path,
        headers,
        body,
    })
}

async fn respond(stream: &mut TcpStream, status: &str, extra: &[(&str, String)], body: &str) {
    let mut head = format!(
        "HTTP/1.1 {status}\r\ncontent-length: {}\r\nconnection: close\r\n",
        body.len()
    );
    if !body.is_empty() {
        head.push_str("content-type: application/json\r\n");
    }
    for (name, value) in extra {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    let _ = stream.write_all(head.as_bytes()).await;
    let _ = stream.write_all(body.as_bytes()).await;
    let _ = stream.shutdown().await;
}

/// What the fake saw.
#[derive(Default)]
struct Seen {
    registrations: usize,
    token_requests: Vec<String>,
    /// The `Authorization` header of each token request.
    token_auth_headers: Vec<Option<String>>,
    /// The token is refused (as if revoked) until the next token request.
    revoked: bool,
    unauthorized_mcp_requests: usize,
    /// MCP messages sent without the token (discovery's probe is a GET).
    unauthorized_mcp_posts: usize,
}

/// Serves, on one port: the MCP endpoint `/mcp` (401 without the token; `initialize`,
/// `notifications/initialized` and `tools/list` with it), its protected resource metadata,
/// the authorization server metadata, registration and the token endpoint.
async fn serve(listener: TcpListener, seen: Arc<Mutex<Seen>>) {
    let base = format!("http://{}", listener.local_addr().unwrap());
    loop {
        let Ok((mut stream, _)) = listener.accept().await else {
            return;
        };
        let base = base.clone();
        let seen = seen.clone();
        tokio::spawn(async move {
            let Some(request) = read_request(&mut stream).await else {
                return;
            };
            let path = request
                .path
                .split('?')
                .next()
                .unwrap_or_default()
                .to_string();
            match (request.method.as_str(), path.as_str()) {
                ("GET", "/.well-known/oauth-protected-resource/mcp") => {
                    let body =
                        json!({"resource": format!("{base}/mcp"), "authorization_servers": [base]});
                    respond(&mut stream, "200 OK", &[], &body.to_string()).await;
                }
                ("GET", "/.well-known/oauth-authorization-server") => {
                    let body = json!({
                        "issuer": base,
                        "authorization_endpoint": format!("{base}/authorize"),
                        "token_endpoint": format!("{base}/token"),
                        "registration_endpoint": format!("{base}/register"),
                        "response_types_supported": ["code"],
                        "grant_types_supported": ["authorization_code", "refresh_token"],
                        "code_challenge_methods_supported": ["S256"],
                        "token_endpoint_auth_methods_supported":
                            ["none", "client_secret_basic", "private_key_jwt"],
                    });
                    respond(&mut stream, "200 OK", &[], &body.to_string()).await;
                }
                ("POST", "/register") => {
                    seen.lock().unwrap().registrations += 1;
                    let body =
                        json!({"client_id": "registered-client", "redirect_uris": [REDIRECT]});
                    respond(&mut stream, "201 Created", &[], &body.to_string()).await;
                }
                ("POST", "/token") => {
                    let basic = request.headers.get("authorization").cloned();
                    {
                        let mut seen = seen.lock().unwrap();
                        seen.revoked = false;
                        seen.token_requests.push(request.body.clone());
                        seen.token_auth_headers.push(basic.clone());
                    }
                    let (status, body) = if request.body.contains("grant_type=client_credentials") {
                        client_credentials_response(basic.as_deref(), &request.body, &base)
                    } else {
                        token_response(&request.body)
                    };
                    respond(&mut stream, status, &[], &body.to_string()).await;
                }
                (_, "/mcp") => mcp(&mut stream, &request, &base, &seen).await,
                _ => respond(&mut stream, "404 Not Found", &[], "").await,
            }
        });
    }
}

/// The token endpoint: a code grant gets the token and a refresh token; a refresh grant
/// with that refresh token gets the token again (no new refresh token); any other refresh
/// token is refused with `invalid_grant`.
fn token_response(body: &str) -> (&'static str, Value) {
    if !body.contains("grant_type=refresh_token") {
        let tokens = json!({"access_token": TOKEN, "token_type": "Bearer", "expires_in": 3600,
            "refresh_token": REFRESH});
        return ("200 OK", tokens);
    }
    if body.contains(&format!("refresh_token={REFRESH}")) {
        let tokens = json!({"access_token": TOKEN, "token_type": "Bearer", "expires_in": 3600});
        ("200 OK", tokens)
    } else {
        ("400 Bad Request", json!({"error": "invalid_grant"}))
    }
}

/// The ES256 key of `cc-bot`'s `private_key_jwt` client: its PEM PKCS#8 form and its
/// public key.
fn jwt_key() -> &'static (String, Vec<u8>) {
    static KEY: OnceLock<(String, Vec<u8>)> = OnceLock::new();
    KEY.get_or_init(|| {
        let rng = SystemRandom::new();
        let alg = &signature::ECDSA_P256_SHA256_FIXED_SIGNING;
        let doc = EcdsaKeyPair::generate_pkcs8(alg, &rng).unwrap();
        let pair = EcdsaKeyPair::from_pkcs8(alg, doc.as_ref(), &rng).unwrap();
        let b64 = STANDARD.encode(doc.as_ref());
        let pem = format!("-----BEGIN PRIVATE KEY-----\n{b64}\n-----END PRIVATE KEY-----\n");
        (pem, pair.public_key().as_ref().to_vec())
    })
}

/// Whether `body` carries a jwt-bearer assertion for `cc-bot`, for audience `issuer`,
/// signed with [`jwt_key`].
fn valid_assertion(body: &str, issuer: &str) -> bool {
    let field = |key: &str| {
        body.split('&')
            .filter_map(|pair| pair.split_once('='))
            .find(|(k, _)| *k == key)
            .map(|(_, v)| v.to_string())
    };
    if field("client_assertion_type").as_deref()
        != Some("urn%3Aietf%3Aparams%3Aoauth%3Aclient-assertion-type%3Ajwt-bearer")
    {
        return false;
    }
    let Some(jwt) = field("client_assertion") else {
        return false;
    };
    let parts: Vec<&str> = jwt.split('.').collect();
    let [header, claims, sig] = parts[..] else {
        return false;
    };
    let signed = format!("{header}.{claims}");
    let verified =
        signature::UnparsedPublicKey::new(&signature::ECDSA_P256_SHA256_FIXED, &jwt_key().1)
            .verify(signed.as_bytes(), &URL_SAFE_NO_PAD.decode(sig).unwrap())
            .is_ok();
    let claims: Value = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(claims).unwrap()).unwrap();
    verified && claims["iss"] == CC_CLIENT && claims["sub"] == CC_CLIENT && claims["aud"] == issuer
}

/// A client-credentials grant: the token for `cc-bot` with its secret in a Basic header or
/// a valid assertion, `invalid_client` for anything else.
fn client_credentials_response(
    basic: Option<&str>,
    body: &str,
    issuer: &str,
) -> (&'static str, Value) {
    if basic == Some(CC_BASIC) || valid_assertion(body, issuer) {
        let tokens = json!({"access_token": TOKEN, "token_type": "Bearer", "expires_in": 3600});
        ("200 OK", tokens)
    } else {
        ("401 Unauthorized", json!({"error": "invalid_client"}))
    }
}

async fn mcp(stream: &mut TcpStream, request: &Request, base: &str, seen: &Mutex<Seen>) {
    let authorized = request.headers.get("authorization").map(String::as_str)
        == Some(&format!("Bearer {TOKEN}"))
        && !seen.lock().unwrap().revoked;
    if !authorized {
        {
            let mut seen = seen.lock().unwrap();
            seen.unauthorized_mcp_requests += 1;
            if request.method == "POST" {
                seen.unauthorized_mcp_posts += 1;
            }
        }
        let challenge =
            format!("Bearer resource_metadata=\"{base}/.well-known/oauth-protected-resource/mcp\"");
        respond(
            stream,
            "401 Unauthorized",
            &[("www-authenticate", challenge)],
            "{}",
        )
        .await;
        return;
    }
    if request.method != "POST" {
        respond(stream, "405 Method Not Allowed", &[], "").await;
        return;
    }
    let message: Value = serde_json::from_str(&request.body).unwrap_or(Value::Null);
    let id = message.get("id").cloned();
    let result = match message["method"].as_str() {
        Some("initialize") => json!({
            "protocolVersion": "2025-11-25",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "fake-protected", "version": "1.0.0"},
        }),
        Some("tools/list") => {
            json!({"tools": [{"name": "whoami", "inputSchema": {"type": "object"}}]})
        }
        Some("tools/call") => json!({"content": [{"type": "text", "text": "you"}]}),
        _ => {
            respond(stream, "202 Accepted", &[], "").await;
            return;
        }
    };
    let body = json!({"jsonrpc": "2.0", "id": id, "result": result});
    respond(stream, "200 OK", &[], &body.to_string()).await;
}

/// Plays the user: records the authorization URL and answers with the redirect the
/// authorization server would send, or refuses.
struct User {
    urls: Mutex<Vec<String>>,
    consent: bool,
}

impl ClientHandlers for User {
    fn features(&self) -> ClientFeatures {
        ClientFeatures::default()
    }

    fn authorize(&self, _server: &str, url: &str) -> BoxFuture<'_, Result<String, HandlerError>> {
        self.urls.lock().unwrap().push(url.to_string());
        let state = reqwest_free_query(url, "state");
        let consent = self.consent;
        Box::pin(async move {
            if consent {
                Ok(format!(
                    "{REDIRECT}?code=the-code&state={}",
                    state.unwrap_or_default()
                ))
            } else {
                Err(HandlerError("the user closed the browser".into()))
            }
        })
    }
}

/// The raw (still percent-encoded) value of `key` in `url`'s query.
fn reqwest_free_query(url: &str, key: &str) -> Option<String> {
    let query = url.split_once('?')?.1;
    query
        .split('&')
        .filter_map(|pair| pair.split_once('='))
        .find(|(k, _)| *k == key)
        .map(|(_, v)| v.to_string())
}

async fn start() -> (String, Arc<Mutex<Seen>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Seen::default()));
    tokio::spawn(serve(listener, seen.clone()));
    (url, seen)
}

fn connection(url: &str, user: Arc<User>) -> ServerConnection {
    connection_with(url, user, OAuthSpec::new(REDIRECT))
}

fn connection_with(url: &str, user: Arc<User>, oauth: OAuthSpec) -> ServerConnection {
    let spec = ServerSpec::http("protected", url).with_oauth(oauth);
    let connection = ServerConnection::new(
        spec,
        ConnectionOptions {
            connect_timeout: Duration::from_secs(10),
            lifecycle: Lifecycle::Initialize,
            authorization_timeout: Duration::from_secs(10),
            ..ConnectionOptions::default()
        },
    );
    connection.set_client_handlers(user);
    connection
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_401_runs_the_authorization_code_flow_and_connects_with_the_token() {
    let (url, seen) = start().await;
    let user = Arc::new(User {
        urls: Mutex::new(Vec::new()),
        consent: true,
    });
    let connection = connection(&url, user.clone());
    let mut events = connection.subscribe();
    let tools = connection.connect().await.unwrap();
    assert_eq!(tools[0].name, "whoami");
    assert!(connection.state().is_connected());

    let urls = user.urls.lock().unwrap().clone();
    assert_eq!(urls.len(), 1, "{urls:?}");
    let auth_url = &urls[0];
    assert!(auth_url.contains("/authorize?"), "{auth_url}");
    assert_eq!(
        reqwest_free_query(auth_url, "client_id").as_deref(),
        Some("registered-client")
    );
    assert_eq!(
        reqwest_free_query(auth_url, "code_challenge_method").as_deref(),
        Some("S256")
    );
    assert!(
        reqwest_free_query(auth_url, "resource").is_some(),
        "{auth_url}"
    );
    {
        let seen = seen.lock().unwrap();
        assert_eq!(seen.registrations, 1);
        assert_eq!(seen.token_requests.len(), 1);
        let token_request = &seen.token_requests[0];
        assert!(token_request.contains("code=the-code"), "{token_request}");
        assert!(token_request.contains("code_verifier="), "{token_request}");
        assert!(seen.unauthorized_mcp_requests >= 1);
    }

    // The state machine went connecting -> authenticating (each step) -> connected.
    let mut steps = Vec::new();
    while let Some(received) = events.try_recv() {
        match received {
            Received::Event(McpEvent::StateChanged { to, .. }) => steps.push(to),
            Received::Lagged { missed } => panic!("missed {missed} events"),
            _ => {}
        }
    }
    let names: Vec<&str> = steps.iter().map(ConnectionState::name).collect();
    assert_eq!(names.first(), Some(&"connecting"), "{names:?}");
    assert_eq!(names.last(), Some(&"connected"), "{names:?}");
    assert!(steps.contains(&ConnectionState::Authenticating {
        progress: AuthProgress::ExchangingToken
    }));
    assert!(steps.iter().any(|s| matches!(
        s,
        ConnectionState::Authenticating { progress: AuthProgress::OpeningBrowser { url } } if url == auth_url
    )));

    // A reconnect reuses the token: no second authorization.
    connection.disconnect().await;
    connection.connect().await.unwrap();
    assert_eq!(user.urls.lock().unwrap().len(), 1);
    connection.disconnect().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_authorization_is_a_typed_error() {
    let (url, seen) = start().await;
    let user = Arc::new(User {
        urls: Mutex::new(Vec::new()),
        consent: false,
    });
    let connection = connection(&url, user);
    let err = connection.connect().await.unwrap_err();
    match &err {
        ConnectError::Authorization { server, reason } => {
            assert_eq!(server, "protected");
            assert!(reason.contains("the user closed the browser"), "{reason}");
        }
        other => panic!("expected an authorization error, got {other:?}"),
    }
    assert_eq!(connection.state().name(), "failed");
    assert!(seen.lock().unwrap().token_requests.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_oauth_a_401_is_a_handshake_error() {
    let (url, _seen) = start().await;
    let connection = ServerConnection::new(
        ServerSpec::http("protected", url),
        ConnectionOptions {
            connect_timeout: Duration::from_secs(10),
            lifecycle: Lifecycle::Initialize,
            ..ConnectionOptions::default()
        },
    );
    let err = connection.connect().await.unwrap_err();
    assert!(
        matches!(&err, ConnectError::Handshake { reason, .. } if reason.contains("Auth required")),
        "{err:?}"
    );
}

fn user() -> Arc<User> {
    Arc::new(User {
        urls: Mutex::new(Vec::new()),
        consent: true,
    })
}

fn file_oauth(dir: &std::path::Path) -> OAuthSpec {
    OAuthSpec::new(REDIRECT).with_token_store(Arc::new(FileTokenStore::new(dir)))
}

/// Saves, as an earlier process would have, credentials whose access token is `access` and
/// expired an hour ago, with the refresh token `refresh`.
async fn store_expired(store: &FileTokenStore, url: &str, access: &str, refresh: &str) {
    let tokens = serde_json::from_value(json!({
        "access_token": access,
        "token_type": "Bearer",
        "expires_in": 3600,
        "refresh_token": refresh,
    }))
    .unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let credentials = StoredCredentials::new(
        "registered-client".into(),
        Some(tokens),
        vec![],
        Some(now - 7200),
    );
    store.save(url, credentials).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stored_tokens_let_a_new_connection_in_without_authorizing() {
    let (url, seen) = start().await;
    let dir = tempfile::tempdir().unwrap();
    let tokens = dir.path().join("tokens");

    let first_user = user();
    let first = connection_with(&url, first_user.clone(), file_oauth(&tokens));
    first.connect().await.unwrap();
    first.disconnect().await;
    assert_eq!(first_user.urls.lock().unwrap().len(), 1);

    // A new connection with a new store on the same directory, as after a restart.
    let second_user = user();
    let second = connection_with(&url, second_user.clone(), file_oauth(&tokens));
    let tools = second.connect().await.unwrap();
    assert_eq!(tools[0].name, "whoami");
    assert!(second_user.urls.lock().unwrap().is_empty());
    {
        let seen = seen.lock().unwrap();
        assert_eq!(seen.registrations, 1);
        assert_eq!(seen.token_requests.len(), 1);
    }
    second.disconnect().await;

    // One file, named by a hash: neither the token nor the URL is in its name.
    let store = FileTokenStore::new(&tokens);
    let path = store.path_for(&url);
    let names: Vec<String> = std::fs::read_dir(&tokens)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, [path.file_name().unwrap().to_string_lossy()]);
    assert!(!names[0].contains(TOKEN) && !names[0].contains("127.0.0.1"));
    let stored = store.load(&url).await.unwrap().unwrap();
    assert_eq!(stored.client_id, "registered-client");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let mode = std::fs::metadata(&tokens).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_stored_token_is_refreshed_without_authorizing() {
    let (url, seen) = start().await;
    let dir = tempfile::tempdir().unwrap();
    let store = FileTokenStore::new(dir.path());
    store_expired(&store, &url, "expired-token", REFRESH).await;

    let user = user();
    let connection = connection_with(&url, user.clone(), file_oauth(dir.path()));
    connection.connect().await.unwrap();
    assert!(user.urls.lock().unwrap().is_empty());
    {
        let seen = seen.lock().unwrap();
        assert_eq!(seen.registrations, 0);
        // The refresh came before the first message: none went out without the token.
        assert_eq!(seen.unauthorized_mcp_posts, 0);
        assert_eq!(seen.token_requests.len(), 1);
        let request = &seen.token_requests[0];
        assert!(request.contains("grant_type=refresh_token"), "{request}");
        assert!(request.contains("client_id=registered-client"), "{request}");
    }
    connection.disconnect().await;

    // The refreshed token was saved, with the refresh token kept.
    let stored = store.load(&url).await.unwrap().unwrap();
    let tokens = serde_json::to_value(stored.token_response.unwrap()).unwrap();
    assert_eq!(tokens["access_token"], TOKEN);
    assert_eq!(tokens["refresh_token"], REFRESH);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_refresh_falls_back_to_the_browser() {
    let (url, seen) = start().await;
    let dir = tempfile::tempdir().unwrap();
    let store = FileTokenStore::new(dir.path());
    store_expired(&store, &url, "expired-token", "revoked-refresh").await;

    let user = user();
    let connection = connection_with(&url, user.clone(), file_oauth(dir.path()));
    connection.connect().await.unwrap();
    assert_eq!(user.urls.lock().unwrap().len(), 1);
    let grants: Vec<bool> = seen
        .lock()
        .unwrap()
        .token_requests
        .iter()
        .map(|body| body.contains("grant_type=refresh_token"))
        .collect();
    assert_eq!(grants, [true, false]);
    connection.disconnect().await;
    let stored = store.load(&url).await.unwrap().unwrap();
    let tokens = serde_json::to_value(stored.token_response.unwrap()).unwrap();
    assert_eq!(tokens["refresh_token"], REFRESH);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_corrupt_token_file_is_a_typed_error_without_its_content() {
    let (url, seen) = start().await;
    let dir = tempfile::tempdir().unwrap();
    let path = FileTokenStore::new(dir.path()).path_for(&url);
    let leaked = "leaked-access-token-5c1d";
    std::fs::write(&path, format!("{{\"access_token\": \"{leaked}\", ")).unwrap();

    let user = user();
    let connection = connection_with(&url, user.clone(), file_oauth(dir.path()));
    let err = connection.connect().await.unwrap_err();
    match &err {
        ConnectError::TokenStore {
            server,
            source: TokenStoreError::Corrupt { path: named, .. },
        } => {
            assert_eq!(server, "protected");
            assert_eq!(named, &path);
        }
        other => panic!("expected a token store error, got {other:?}"),
    }
    let shown = format!("{err} {err:?}");
    assert!(!shown.contains(leaked), "{shown}");
    assert!(shown.contains(&path.display().to_string()), "{shown}");
    assert!(user.urls.lock().unwrap().is_empty());
    assert!(seen.lock().unwrap().token_requests.is_empty());

    // Logging out (clearing the entry) lets the next connect authorize afresh.
    FileTokenStore::new(dir.path()).clear(&url).await.unwrap();
    connection.connect().await.unwrap();
    assert_eq!(user.urls.lock().unwrap().len(), 1);
    connection.disconnect().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_credentials_connect_without_a_user() {
    let (url, seen) = start().await;
    let user = user();
    let oauth = OAuthSpec::client_credentials(CC_CLIENT, Secret::new(CC_SECRET));
    let connection = connection_with(&url, user.clone(), oauth);
    let tools = connection.connect().await.unwrap();
    assert_eq!(tools[0].name, "whoami");
    assert!(user.urls.lock().unwrap().is_empty(), "the browser flow ran");
    {
        let seen = seen.lock().unwrap();
        assert_eq!(seen.registrations, 0);
        assert_eq!(seen.token_requests.len(), 1);
        let body = &seen.token_requests[0];
        assert!(body.contains("grant_type=client_credentials"), "{body}");
        let resource = format!("resource={}", url.replace(':', "%3A").replace('/', "%2F"));
        assert!(body.contains(&resource), "{body}");
        assert!(
            !body.contains(CC_SECRET),
            "the secret went in the body: {body}"
        );
        assert_eq!(seen.token_auth_headers[0].as_deref(), Some(CC_BASIC));
    }

    // A reconnect reuses the token.
    connection.disconnect().await;
    connection.connect().await.unwrap();
    assert_eq!(seen.lock().unwrap().token_requests.len(), 1);

    // A 401 mid-session (the token was revoked) fetches a new token and repeats the call.
    seen.lock().unwrap().revoked = true;
    let result = connection
        .call_tool(
            "whoami",
            json!({}),
            &ToolContext::new("c"),
            Duration::from_secs(10),
        )
        .await
        .unwrap();
    assert_ne!(result.is_error, Some(true));
    assert!(
        format!("{:?}", result.content).contains("you"),
        "{result:?}"
    );
    assert_eq!(seen.lock().unwrap().token_requests.len(), 2);
    assert!(user.urls.lock().unwrap().is_empty());
    connection.disconnect().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_client_secret_is_a_typed_error_without_the_secret() {
    let (url, seen) = start().await;
    let user = user();
    let oauth = OAuthSpec::client_credentials(CC_CLIENT, Secret::new("not-the-secret"));
    let connection = connection_with(&url, user.clone(), oauth);
    let err = connection.connect().await.unwrap_err();
    match &err {
        ConnectError::Authorization { server, reason } => {
            assert_eq!(server, "protected");
            assert!(
                reason.contains("client credentials token request"),
                "{reason}"
            );
            assert!(reason.contains("invalid_client"), "{reason}");
        }
        other => panic!("expected an authorization error, got {other:?}"),
    }
    assert!(!format!("{err} {err:?}").contains("not-the-secret"));
    assert!(user.urls.lock().unwrap().is_empty());
    assert_eq!(seen.lock().unwrap().token_requests.len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_credentials_with_a_private_key_jwt_connect() {
    let (url, seen) = start().await;
    let user = user();
    let key = PrivateKeyJwt::new(Secret::new(jwt_key().0.clone()), JwtAlgorithm::ES256);
    let connection = connection_with(
        &url,
        user.clone(),
        OAuthSpec::client_credentials_jwt(CC_CLIENT, key),
    );
    let tools = connection.connect().await.unwrap();
    assert_eq!(tools[0].name, "whoami");
    assert!(user.urls.lock().unwrap().is_empty(), "the browser flow ran");
    {
        let seen = seen.lock().unwrap();
        assert_eq!(seen.token_requests.len(), 1);
        let body = &seen.token_requests[0];
        assert!(body.contains("grant_type=client_credentials"), "{body}");
        assert!(body.contains("resource="), "{body}");
        assert!(!body.contains("client_id="), "{body}");
        assert_eq!(seen.token_auth_headers[0], None);
    }
    connection.disconnect().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_assertion_signed_with_another_key_is_refused() {
    let (url, _seen) = start().await;
    let rng = SystemRandom::new();
    let doc =
        EcdsaKeyPair::generate_pkcs8(&signature::ECDSA_P256_SHA256_FIXED_SIGNING, &rng).unwrap();
    let pem = format!(
        "-----BEGIN PRIVATE KEY-----\n{}\n-----END PRIVATE KEY-----\n",
        STANDARD.encode(doc.as_ref())
    );
    let key = PrivateKeyJwt::new(Secret::new(pem), JwtAlgorithm::ES256);
    let connection = connection_with(
        &url,
        user(),
        OAuthSpec::client_credentials_jwt(CC_CLIENT, key),
    );
    match connection.connect().await.unwrap_err() {
        ConnectError::Authorization { reason, .. } => {
            assert!(reason.contains("invalid_client"), "{reason}");
        }
        other => panic!("expected an authorization error, got {other:?}"),
    }
}
