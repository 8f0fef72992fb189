//! Where OAuth credentials live between connects and between processes: the [`TokenStore`]
//! trait, keyed by server URL, its in-memory default, and the adapter onto rmcp's
//! per-manager [`CredentialStore`].

use std::collections::HashMap;
use std::fmt;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

use mux_tool::BoxFuture;
use rmcp::transport::auth::{AuthError, CredentialStore};

pub use rmcp::transport::auth::StoredCredentials;

/// Why a token store could not load, save or clear credentials. It names the file (or the
/// backend) and never holds token text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TokenStoreError {
    /// The token file exists but could not be read.
    #[error("cannot read OAuth token file {}: {reason}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        reason: String,
    },
    /// The token file is not credentials mux wrote: bad JSON, a wrong shape, or another
    /// server's file. Deleting it (or [`TokenStore::clear`]) makes the next connect authorize
    /// again.
    #[error("OAuth token file {} is corrupt: {reason}", path.display())]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// What is wrong, without the file's content.
        reason: String,
    },
    /// The token file (or its directory) could not be written or deleted.
    #[error("cannot write OAuth token file {}: {reason}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        reason: String,
    },
    /// A store that is not file based failed (a keychain, a database).
    #[error("OAuth token store failed: {reason}")]
    Backend {
        /// What went wrong, without secrets.
        reason: String,
    },
}

/// Keeps the OAuth credentials of MCP servers, one entry per server URL: the access and
/// refresh tokens, their expiry, the granted scopes and the client id (the one Dynamic Client
/// Registration returned, included). A connect loads them first and authorizes in the
/// browser only when there are none or they cannot be refreshed.
///
/// Implementations must keep secrets out of their `Debug` output and errors.
pub trait TokenStore: Send + Sync + fmt::Debug {
    /// The credentials saved for `server_url`, or `None`.
    fn load<'a>(
        &'a self,
        server_url: &'a str,
    ) -> BoxFuture<'a, Result<Option<StoredCredentials>, TokenStoreError>>;

    /// Saves `credentials` for `server_url`, replacing any before.
    fn save<'a>(
        &'a self,
        server_url: &'a str,
        credentials: StoredCredentials,
    ) -> BoxFuture<'a, Result<(), TokenStoreError>>;

    /// Forgets the credentials of `server_url` (logout); nothing saved is not an error.
    fn clear<'a>(&'a self, server_url: &'a str) -> BoxFuture<'a, Result<(), TokenStoreError>>;
}

/// Credentials in memory only: they outlive reconnects but not the process. The default.
#[derive(Default)]
pub struct InMemoryTokenStore {
    entries: Mutex<HashMap<String, StoredCredentials>>,
}

impl InMemoryTokenStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn entries(&self) -> std::sync::MutexGuard<'_, HashMap<String, StoredCredentials>> {
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl fmt::Debug for InMemoryTokenStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InMemoryTokenStore")
            .field("servers", &self.entries().len())
            .finish()
    }
}

impl TokenStore for InMemoryTokenStore {
    fn load<'a>(
        &'a self,
        server_url: &'a str,
    ) -> BoxFuture<'a, Result<Option<StoredCredentials>, TokenStoreError>> {
        let found = self.entries().get(server_url).cloned();
        Box::pin(async move { Ok(found) })
    }

    fn save<'a>(
        &'a self,
        server_url: &'a str,
        credentials: StoredCredentials,
    ) -> BoxFuture<'a, Result<(), TokenStoreError>> {
        self.entries().insert(server_url.to_string(), credentials);
        Box::pin(async { Ok(()) })
    }

    fn clear<'a>(&'a self, server_url: &'a str) -> BoxFuture<'a, Result<(), TokenStoreError>> {
        self.entries().remove(server_url);
        Box::pin(async { Ok(()) })
    }
}

/// One server's entry of a [`TokenStore`], as the rmcp [`CredentialStore`] of its
/// authorization manager.
pub(crate) struct ServerCredentials {
    store: Arc<dyn TokenStore>,
    url: String,
}

impl ServerCredentials {
    pub(crate) fn new(store: Arc<dyn TokenStore>, url: &str) -> Self {
        Self {
            store,
            url: url.to_string(),
        }
    }
}

fn store_failed(err: TokenStoreError) -> AuthError {
    AuthError::CredentialStoreError(err.to_string())
}

#[async_trait::async_trait]
impl CredentialStore for ServerCredentials {
    async fn load(&self) -> Result<Option<StoredCredentials>, AuthError> {
        self.store.load(&self.url).await.map_err(store_failed)
    }

    async fn save(&self, credentials: StoredCredentials) -> Result<(), AuthError> {
        self.store
            .save(&self.url, credentials)
            .await
            .map_err(store_failed)?;
        tracing::debug!("saved OAuth credentials");
        Ok(())
    }

    async fn clear(&self) -> Result<(), AuthError> {
        self.store.clear(&self.url).await.map_err(store_failed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn credentials(client_id: &str) -> StoredCredentials {
        StoredCredentials::new(client_id.to_string(), None, vec!["a".into()], Some(1))
    }

    #[tokio::test]
    async fn memory_entries_are_per_server_and_clearable() {
        let store = InMemoryTokenStore::new();
        assert!(store.load("http://a/mcp").await.unwrap().is_none());
        store
            .save("http://a/mcp", credentials("one"))
            .await
            .unwrap();
        store
            .save("http://b/mcp", credentials("two"))
            .await
            .unwrap();
        let a = store.load("http://a/mcp").await.unwrap().unwrap();
        assert_eq!(a.client_id, "one");
        store.clear("http://a/mcp").await.unwrap();
        assert!(store.load("http://a/mcp").await.unwrap().is_none());
        assert!(store.load("http://b/mcp").await.unwrap().is_some());
        store.clear("http://a/mcp").await.unwrap();
        assert_eq!(format!("{store:?}"), "InMemoryTokenStore { servers: 1 }");
    }

    #[tokio::test]
    async fn the_adapter_reaches_the_servers_entry() {
        let store: Arc<dyn TokenStore> = Arc::new(InMemoryTokenStore::new());
        let adapter = ServerCredentials::new(store.clone(), "http://a/mcp");
        CredentialStore::save(&adapter, credentials("one"))
            .await
            .unwrap();
        assert!(store.load("http://a/mcp").await.unwrap().is_some());
        assert!(store.load("http://b/mcp").await.unwrap().is_none());
        CredentialStore::clear(&adapter).await.unwrap();
        assert!(CredentialStore::load(&adapter).await.unwrap().is_none());
    }
}
