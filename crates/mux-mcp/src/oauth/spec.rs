//! How a server's OAuth authorization is configured: the grant, the client and where tokens go.

use std::sync::Arc;

use super::token_store::TokenStore;
use mux_tool::Secret;

/// How mux authorizes with a server's OAuth authorization server (MCP authorization, OAuth 2.1
/// with PKCE). The client is identified, in this order of preference, by a pre-registered
/// `client_id`, by a Client ID Metadata Document URL when the server supports it, or by
/// Dynamic Client Registration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OAuthSpec {
    /// Where the authorization server sends the browser back; the
    /// [`authorize`](crate::ClientHandlers::authorize) handler receives that redirect.
    pub redirect_uri: String,
    /// Scopes to ask for; empty lets the server's challenge and metadata decide.
    pub scopes: Vec<String>,
    /// A client id registered with the authorization server out of band.
    pub client_id: Option<String>,
    /// The secret paired with `client_id`, for confidential clients.
    pub client_secret: Option<Secret>,
    /// The HTTPS URL of this client's metadata document (SEP-991), used as its client id.
    pub client_metadata_url: Option<String>,
    /// The name sent in Dynamic Client Registration.
    pub client_name: String,
    /// Where tokens are kept; `None` keeps them in memory, for this process only. Set it
    /// with [`OAuthSpec::with_token_store`].
    pub token_store: Option<SharedTokenStore>,
    /// How a token is obtained: through the user's browser (the default) or, for
    /// machine-to-machine use, with the client's own credentials.
    pub grant: OAuthGrant,
    /// For the client-credentials grant: authenticate with a signed JWT assertion
    /// (`private_key_jwt`) instead of `client_secret`.
    pub client_key: Option<PrivateKeyJwt>,
}

/// A private key the client signs its `private_key_jwt` assertions with (RFC 7523).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PrivateKeyJwt {
    /// The PEM PKCS#8 private key (`-----BEGIN PRIVATE KEY-----`).
    pub key_pem: Secret,
    /// The signing algorithm, which must match the key.
    pub algorithm: JwtAlgorithm,
}

impl PrivateKeyJwt {
    /// A key in PEM PKCS#8 form, signing with `algorithm`.
    pub fn new(key_pem: Secret, algorithm: JwtAlgorithm) -> Self {
        Self { key_pem, algorithm }
    }
}

/// A JWS algorithm for client assertions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum JwtAlgorithm {
    /// ECDSA on P-256 with SHA-256.
    ES256,
    /// ECDSA on P-384 with SHA-384.
    ES384,
    /// RSASSA-PKCS1-v1_5 with SHA-256.
    RS256,
}

/// The OAuth grant mux uses to obtain tokens.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum OAuthGrant {
    /// The authorization-code flow with PKCE: the user approves in a browser, through
    /// [`ClientHandlers::authorize`](crate::ClientHandlers::authorize).
    #[default]
    AuthorizationCode,
    /// The client-credentials grant (OAuth 2.1 §4.2, MCP extension SEP-1046): the
    /// pre-registered `client_id` and `client_secret` are exchanged for a token at the
    /// token endpoint, with no user and no browser. The secret goes in an HTTP Basic
    /// header when that is the only method the authorization server lists, in the
    /// request body otherwise.
    ClientCredentials,
}

/// A [`TokenStore`] shared between specs and connections. Two are equal when they are the
/// same store.
#[derive(Clone, Debug)]
pub struct SharedTokenStore(pub Arc<dyn TokenStore>);

impl PartialEq for SharedTokenStore {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for SharedTokenStore {}

impl OAuthSpec {
    /// OAuth with `redirect_uri`, Dynamic Client Registration as `mux`, and the server's
    /// choice of scopes.
    ///
    /// ```
    /// let oauth = mux_mcp::OAuthSpec::new("http://127.0.0.1:8976/callback")
    ///     .with_scopes(["files:read"]);
    /// let spec = mux_mcp::ServerSpec::http("docs", "https://mcp.example.com/mcp").with_oauth(oauth);
    /// # let _ = spec;
    /// ```
    pub fn new(redirect_uri: impl Into<String>) -> Self {
        Self {
            redirect_uri: redirect_uri.into(),
            scopes: Vec::new(),
            client_id: None,
            client_secret: None,
            client_metadata_url: None,
            client_name: "mux".to_string(),
            token_store: None,
            grant: OAuthGrant::AuthorizationCode,
            client_key: None,
        }
    }

    /// The client-credentials grant for machine-to-machine use: no user, no browser, no
    /// redirect URI. Tokens are fetched with `client_id` and `secret` when the server
    /// answers 401, and fetched again when a later request is refused.
    ///
    /// ```
    /// use mux_mcp::{OAuthSpec, Secret, ServerSpec};
    /// let oauth = OAuthSpec::client_credentials("reports-bot", Secret::new("s3cret"));
    /// let spec = ServerSpec::http("reports", "https://mcp.example.com/mcp").with_oauth(oauth);
    /// # let _ = spec;
    /// ```
    pub fn client_credentials(client_id: impl Into<String>, secret: Secret) -> Self {
        Self {
            grant: OAuthGrant::ClientCredentials,
            ..Self::new(String::new()).with_client(client_id, Some(secret))
        }
    }

    /// The client-credentials grant authenticating with `private_key_jwt`: each token
    /// request carries a fresh assertion signed with `key`, naming `client_id` as issuer
    /// and subject and the authorization server's issuer as audience.
    pub fn client_credentials_jwt(client_id: impl Into<String>, key: PrivateKeyJwt) -> Self {
        Self {
            grant: OAuthGrant::ClientCredentials,
            client_key: Some(key),
            ..Self::new(String::new()).with_client(client_id, None)
        }
    }

    /// Asks for these scopes.
    pub fn with_scopes<I, S>(mut self, scopes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.scopes = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// Uses a pre-registered client id, and its secret for a confidential client.
    pub fn with_client(mut self, client_id: impl Into<String>, secret: Option<Secret>) -> Self {
        self.client_id = Some(client_id.into());
        self.client_secret = secret;
        self
    }

    /// Identifies the client by its metadata document URL (SEP-991).
    pub fn with_client_metadata_url(mut self, url: impl Into<String>) -> Self {
        self.client_metadata_url = Some(url.into());
        self
    }

    /// Sets the name used in Dynamic Client Registration.
    pub fn with_client_name(mut self, name: impl Into<String>) -> Self {
        self.client_name = name.into();
        self
    }

    /// Keeps tokens in `store` (a [`FileTokenStore`](crate::FileTokenStore), say), so they
    /// survive restarts: a connect uses the stored access token, refreshes it when it has
    /// expired, and sends the user to the browser only when neither works.
    pub fn with_token_store(mut self, store: Arc<dyn TokenStore>) -> Self {
        self.token_store = Some(SharedTokenStore(store));
        self
    }
}
