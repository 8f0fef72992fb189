//! OAuth for Streamable HTTP servers, on rmcp's `auth` support: the reactive flow of the MCP
//! authorization spec. A request goes out without a token; a 401 challenge starts discovery
//! (protected resource metadata, then authorization server metadata), client identification
//! (pre-registered, metadata document or dynamic registration) and the authorization-code
//! flow with PKCE; a 403 `insufficient_scope` challenge asks again for the union of the
//! granted and the required scopes. The user's part, visiting the authorization URL, goes
//! to [`ClientHandlers::authorize`].
//!
//! With the client-credentials grant (SEP-1046) there is no user: the same discovery is
//! followed by a token request with the client's id and secret, and a later 401 fetches
//! a new token the same way.
//!
//! Tokens live in the spec's [`TokenStore`] (in memory by default). Before the first
//! request the stored credentials are loaded; rmcp then sends the stored access token,
//! refreshes it when it has expired, and only a refused refresh (or no credentials at all)
//! leads to the 401 that starts the browser flow.

use std::sync::Arc;

use rmcp::transport::auth::{
    AuthClient, AuthError, AuthorizationCallback, AuthorizationManager, AuthorizationMetadata,
    AuthorizationRequest, ClientCredentialsConfig, CredentialStore, OAuthClientConfig, OAuthState,
    OAuthTokenResponse, StoredCredentials, WWWAuthenticateParams,
};
use std::time::{SystemTime, UNIX_EPOCH};

use rmcp::service::{ClientInitializeError, ServiceError};
use rmcp::transport::streamable_http_client::{AuthRequiredError, InsufficientScopeError};

use rustls::pki_types::CertificateDer;

use self::http::OAuthHttp;
use self::spec::{OAuthGrant, OAuthSpec, PrivateKeyJwt};
use self::token_store::{InMemoryTokenStore, ServerCredentials, TokenStore, TokenStoreError};
use crate::client::ClientHandlers;
use crate::state::AuthProgress;
use crate::tls;

mod http;
mod jwt;
pub(crate) mod spec;
pub(crate) mod token_file;
pub(crate) mod token_store;

/// The OAuth state of one server connection. It outlives reconnects, so a token is reused.
pub(crate) struct OAuth {
    url: String,
    spec: OAuthSpec,
    client: AuthClient<reqwest::Client>,
    /// The client of every OAuth request (discovery, registration, tokens).
    oauth_http: Arc<OAuthHttp>,
    /// Where the tokens are kept.
    store: Arc<dyn TokenStore>,
}

/// Why stored credentials could not be restored.
#[derive(Debug)]
pub(crate) enum RestoreError {
    /// The store could not be read.
    Store(TokenStoreError),
    /// The stored credentials could not be set up (discovery failed, say).
    Flow(String),
}

/// Where the flow reports its steps and reaches the user.
pub(crate) struct FlowContext<'a> {
    pub(crate) server: &'a str,
    pub(crate) handlers: Option<Arc<dyn ClientHandlers>>,
    pub(crate) progress: &'a (dyn Fn(AuthProgress) + Send + Sync),
}

fn failed(what: &str, err: AuthError) -> String {
    format!("OAuth {what} failed: {err}")
}

impl OAuth {
    /// The OAuth state for the server at `url`; its requests trust the platform's roots and
    /// `extra_roots`.
    pub(crate) async fn new(
        url: &str,
        spec: OAuthSpec,
        extra_roots: Vec<CertificateDer<'static>>,
    ) -> Result<Self, String> {
        let http = tls::http_client(extra_roots.clone())?;
        let oauth_http = Arc::new(OAuthHttp::new(url, extra_roots)?);
        let store = match &spec.token_store {
            Some(shared) => shared.0.clone(),
            None => Arc::new(InMemoryTokenStore::new()),
        };
        let manager = manager(url, &oauth_http, &store).await?;
        Ok(Self {
            url: url.to_string(),
            spec,
            client: AuthClient::new(http, manager),
            oauth_http,
            store,
        })
    }

    /// Loads the credentials an earlier connect or process stored, so requests carry the
    /// stored token (refreshed when it has expired). Returns whether there were any.
    pub(crate) async fn restore(&self) -> Result<bool, RestoreError> {
        let stored = self
            .store
            .load(&self.url)
            .await
            .map_err(RestoreError::Store)?;
        let Some(stored) = stored.filter(|stored| stored.token_response.is_some()) else {
            return Ok(false);
        };
        let mut manager = self.client.auth_manager.lock().await;
        let restored = manager
            .initialize_from_store()
            .await
            .map_err(|err| RestoreError::Flow(failed("restoring stored credentials", err)))?;
        // A confidential client refreshes with its secret, which is not stored. A
        // client-credentials client fetches a new token instead of refreshing.
        if self.spec.grant == OAuthGrant::AuthorizationCode
            && let (true, Some(client_id), Some(secret)) =
                (restored, &self.spec.client_id, &self.spec.client_secret)
            && *client_id == stored.client_id
        {
            let config = OAuthClientConfig::new(client_id.clone(), self.spec.redirect_uri.clone())
                .with_client_secret(secret.expose());
            manager
                .configure_client(config)
                .map_err(|err| RestoreError::Flow(failed("restoring stored credentials", err)))?;
        }
        tracing::debug!(restored, "loaded stored OAuth credentials");
        Ok(restored)
    }

    /// The HTTP client the transport sends through: it adds the current token.
    pub(crate) fn http_client(&self) -> AuthClient<reqwest::Client> {
        self.client.clone()
    }

    /// Gets a token after a 401 `challenge` (its `WWW-Authenticate`): the authorization-code
    /// flow, or a client-credentials token request, as the spec's grant says.
    pub(crate) async fn authorize(
        &self,
        challenge: &str,
        cx: &FlowContext<'_>,
    ) -> Result<(), String> {
        (cx.progress)(AuthProgress::Starting);
        match self.spec.grant {
            OAuthGrant::ClientCredentials => self.client_credentials(challenge, cx).await,
            OAuthGrant::AuthorizationCode => self.authorization_code(challenge, cx).await,
        }
    }

    /// The client-credentials grant: discovery seeded by `challenge`, then a token request
    /// with the client's id and secret and the server URL as the `resource`.
    async fn client_credentials(
        &self,
        challenge: &str,
        cx: &FlowContext<'_>,
    ) -> Result<(), String> {
        let Some(client_id) = &self.spec.client_id else {
            return Err("the client_credentials grant needs a client id".to_string());
        };
        let mut manager = manager(&self.url, &self.oauth_http, &self.store).await?;
        let resolution = manager
            .resolve_metadata_from_challenge(Some(challenge))
            .await
            .map_err(|err| failed("discovery", err))?;
        let metadata = resolution.metadata;
        manager.set_metadata(metadata.clone());
        let scopes = if self.spec.scopes.is_empty() {
            manager.select_initial_scopes(&[]).await
        } else {
            self.spec.scopes.clone()
        };
        if let Some(key) = &self.spec.client_key {
            (cx.progress)(AuthProgress::ExchangingToken);
            self.jwt_token(key, client_id, &metadata, &scopes).await?;
            manager
                .initialize_from_store()
                .await
                .map_err(|err| failed("client credentials setup", err))?;
            *self.client.auth_manager.lock().await = manager;
            return Ok(());
        }
        let Some(secret) = &self.spec.client_secret else {
            return Err(
                "the client_credentials grant needs a client secret or a private key".to_string(),
            );
        };
        let config = ClientCredentialsConfig::ClientSecret {
            client_id: client_id.clone(),
            client_secret: secret.expose().to_string(),
            scopes,
            resource: Some(resource(&self.url)),
        };
        manager
            .validate_client_credentials_metadata(&config)
            .and_then(|()| manager.configure_client_credentials(&config))
            .map_err(|err| failed("client credentials setup", err))?;
        (cx.progress)(AuthProgress::ExchangingToken);
        manager
            .exchange_client_credentials(&config)
            .await
            .map_err(|err| failed("client credentials token request", err))?;
        *self.client.auth_manager.lock().await = manager;
        Ok(())
    }

    /// A client-credentials token request authenticated with a `private_key_jwt`
    /// assertion; the token is saved in the store, where the manager finds it.
    async fn jwt_token(
        &self,
        key: &PrivateKeyJwt,
        client_id: &str,
        metadata: &AuthorizationMetadata,
        scopes: &[String],
    ) -> Result<(), String> {
        let methods = metadata
            .additional_fields
            .get("token_endpoint_auth_methods_supported")
            .and_then(|v| v.as_array());
        if let Some(methods) = methods
            && !methods
                .iter()
                .any(|m| m.as_str() == Some("private_key_jwt"))
        {
            return Err(
                "the authorization server does not accept private_key_jwt client authentication"
                    .to_string(),
            );
        }
        let audience = metadata
            .issuer
            .clone()
            .unwrap_or_else(|| metadata.token_endpoint.clone());
        let assertion = jwt::assertion(key, client_id, &audience)?;
        let mut form = reqwest::Url::parse("http://form/").map_err(|err| err.to_string())?;
        {
            let mut pairs = form.query_pairs_mut();
            pairs
                .append_pair("grant_type", "client_credentials")
                .append_pair(
                    "client_assertion_type",
                    "urn:ietf:params:oauth:client-assertion-type:jwt-bearer",
                )
                .append_pair("client_assertion", &assertion)
                .append_pair("resource", &resource(&self.url));
            if !scopes.is_empty() {
                pairs.append_pair("scope", &scopes.join(" "));
            }
        }
        let body = form.query().unwrap_or_default().to_string();
        let response = self
            .oauth_http
            .post_form(&metadata.token_endpoint, body)
            .await
            .map_err(|err| format!("OAuth client credentials token request failed: {err}"))?;
        if !response.status().is_success() {
            let error = serde_json::from_slice::<serde_json::Value>(response.body())
                .ok()
                .and_then(|v| v.get("error").and_then(|e| e.as_str()).map(str::to_string))
                .unwrap_or_else(|| "no OAuth error code".to_string());
            return Err(format!(
                "OAuth client credentials token request failed: HTTP {}: {error}",
                response.status()
            ));
        }
        let not_a_token = |err: serde_json::Error| {
            format!("OAuth client credentials response is not a token: {err}")
        };
        let value: serde_json::Value =
            serde_json::from_slice(response.body()).map_err(not_a_token)?;
        let granted = match value.get("scope").and_then(|s| s.as_str()) {
            Some(scope) => scope.split_whitespace().map(str::to_string).collect(),
            None => scopes.to_vec(),
        };
        let token: OAuthTokenResponse = serde_json::from_value(value).map_err(not_a_token)?;
        let received = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs())
            .ok();
        let stored = StoredCredentials::new(client_id.to_string(), Some(token), granted, received)
            .with_issuer(metadata.issuer.clone());
        ServerCredentials::new(self.store.clone(), &self.url)
            .save(stored)
            .await
            .map_err(|err| failed("saving the token", err))
    }

    /// Runs the authorization-code flow seeded by a 401 `challenge`.
    async fn authorization_code(
        &self,
        challenge: &str,
        cx: &FlowContext<'_>,
    ) -> Result<(), String> {
        let mut request = AuthorizationRequest::new(self.spec.redirect_uri.clone())
            .with_challenge(challenge)
            .with_client_name(self.spec.client_name.clone());
        if !self.spec.scopes.is_empty() {
            request = request.with_scopes(self.spec.scopes.clone());
        }
        if let Some(client_id) = &self.spec.client_id {
            request = request.with_preregistered_client(client_id.clone());
            if let Some(secret) = &self.spec.client_secret {
                request = request.with_client_secret(secret.expose());
            }
        }
        if let Some(url) = &self.spec.client_metadata_url {
            request = request.with_client_metadata_url(url.clone());
        }
        let manager = manager(&self.url, &self.oauth_http, &self.store).await?;
        let mut state = OAuthState::Unauthorized(manager);
        state
            .start_authorization(request)
            .await
            .map_err(|err| failed("discovery and client registration", err))?;
        let url = state
            .get_authorization_url()
            .await
            .map_err(|err| failed("authorization", err))?;
        let redirect = self.ask_user(&url, cx).await?;
        (cx.progress)(AuthProgress::ExchangingToken);
        state
            .handle_callback_url(&redirect)
            .await
            .map_err(|err| failed("token exchange", err))?;
        let manager = state
            .into_authorization_manager()
            .ok_or("OAuth flow ended without an authorized client")?;
        *self.client.auth_manager.lock().await = manager;
        Ok(())
    }

    /// Asks for the scopes a 403 `insufficient_scope` `challenge` names, on top of those
    /// already granted. rmcp allows three such upgrades per authorization.
    pub(crate) async fn upgrade(
        &self,
        challenge: &str,
        cx: &FlowContext<'_>,
    ) -> Result<(), String> {
        let base =
            reqwest::Url::parse(&self.url).map_err(|err| format!("bad server URL: {err}"))?;
        let params = WWWAuthenticateParams::parse(challenge, &base);
        let scope = params
            .scope
            .ok_or("the server refused for lack of scope but named no scope")?;
        let manager = self.client.auth_manager.lock().await;
        let url = manager
            .request_scope_upgrade(&scope)
            .await
            .map_err(|err| failed("scope upgrade", err))?;
        let redirect = self.ask_user(&url, cx).await?;
        let callback = AuthorizationCallback::from_redirect_url(&redirect)
            .map_err(|err| failed("callback", err))?;
        (cx.progress)(AuthProgress::ExchangingToken);
        manager
            .exchange_code_for_token_with_issuer(
                &callback.code,
                &callback.csrf_token,
                callback.issuer.as_deref(),
            )
            .await
            .map_err(|err| failed("token exchange", err))?;
        Ok(())
    }

    /// Hands `url` to the user through the client handlers; returns the redirect they got.
    async fn ask_user(&self, url: &str, cx: &FlowContext<'_>) -> Result<String, String> {
        let Some(handlers) = cx.handlers.as_ref() else {
            return Err(
                "the server requires OAuth authorization, but no client handlers are set to \
                 send the user to the authorization page"
                    .to_string(),
            );
        };
        (cx.progress)(AuthProgress::OpeningBrowser {
            url: url.to_string(),
        });
        (cx.progress)(AuthProgress::WaitingForCallback);
        handlers
            .authorize(cx.server, url)
            .await
            .map_err(|err| format!("authorization was not completed: {err}"))
    }
}

/// The `resource` of token requests (RFC 8707): the server URL as written, without a
/// fragment (a parser would add `/` to a pathless URL, which servers compare exactly).
fn resource(url: &str) -> String {
    url.split('#').next().unwrap_or(url).to_string()
}

/// An authorization manager for the server at `url` that keeps its credentials in `store`.
async fn manager(
    url: &str,
    oauth_http: &Arc<OAuthHttp>,
    store: &Arc<dyn TokenStore>,
) -> Result<AuthorizationManager, String> {
    let mut manager = AuthorizationManager::new_with_oauth_http_client(url, oauth_http.clone())
        .await
        .map_err(|err| failed("setup", err))?;
    manager.set_credential_store(ServerCredentials::new(store.clone(), url));
    Ok(manager)
}

/// The challenge of the 401 or 403 that made the handshake fail, if that is why it failed.
pub(crate) fn init_challenge(error: &ClientInitializeError) -> Option<Challenge> {
    error.auth_challenge().map(Challenge::from_header)
}

/// The challenge of the 401 or 403 that made a request fail, if that is why it failed.
pub(crate) fn request_challenge(error: &ServiceError) -> Option<Challenge> {
    let ServiceError::TransportSend(error) = error else {
        return None;
    };
    let mut current: Option<&(dyn std::error::Error + 'static)> = Some(error.error.as_ref());
    while let Some(err) = current {
        if let Some(found) = err.downcast_ref::<AuthRequiredError>() {
            return Some(Challenge::Unauthorized(
                found.www_authenticate_header.clone(),
            ));
        }
        if let Some(found) = err.downcast_ref::<InsufficientScopeError>() {
            return Some(Challenge::InsufficientScope(
                found.www_authenticate_header.clone(),
            ));
        }
        current = err.source();
    }
    None
}

/// Why the server refused a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Challenge {
    /// 401: no token, or one it does not accept. The `WWW-Authenticate` value.
    Unauthorized(String),
    /// 403 `insufficient_scope`. The `WWW-Authenticate` value.
    InsufficientScope(String),
}

impl Challenge {
    /// Classifies a `WWW-Authenticate` value by its `error` parameter.
    fn from_header(header: &str) -> Self {
        let params = reqwest::Url::parse("http://localhost/")
            .map(|base| WWWAuthenticateParams::parse(header, &base))
            .unwrap_or_default();
        if params.is_insufficient_scope() {
            Self::InsufficientScope(header.to_string())
        } else {
            Self::Unauthorized(header.to_string())
        }
    }
}
