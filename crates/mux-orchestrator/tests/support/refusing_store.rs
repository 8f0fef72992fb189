//! A session store that refuses writes on demand, which the faces' tests (the A2A face's and
//! the web face's) share, included by path.

use std::sync::atomic::{AtomicBool, Ordering};

use mux_orchestrator::session::{
    HistoryRecord, MemorySessionStore, Session, SessionError, SessionMeta, SessionStore,
};

/// The trait's boxed future.
type BoxFuture<'a, T> = std::pin::Pin<Box<dyn std::future::Future<Output = T> + Send + 'a>>;

/// A session store that refuses every write while `refuse` is set (a disk that filled): reads
/// go on.
pub(super) struct Refusing {
    inner: MemorySessionStore,
    refuse: AtomicBool,
}

impl Refusing {
    /// A store in memory that takes writes until [`Refusing::refuse`] says otherwise.
    pub(super) fn new() -> Self {
        Self {
            inner: MemorySessionStore::new(),
            refuse: AtomicBool::new(false),
        }
    }

    /// Refuses writes (`true`) or takes them again (`false`).
    pub(super) fn refuse(&self, refuse: bool) {
        self.refuse.store(refuse, Ordering::SeqCst);
    }

    fn check(&self, id: &str) -> Result<(), SessionError> {
        if self.refuse.load(Ordering::SeqCst) {
            return Err(SessionError::Io {
                id: Some(id.to_owned()),
                operation: "writing",
                source: std::io::Error::from(std::io::ErrorKind::StorageFull),
            });
        }
        Ok(())
    }
}

impl Default for Refusing {
    fn default() -> Self {
        Self::new()
    }
}

impl SessionStore for Refusing {
    fn create<'a>(&'a self, meta: &'a SessionMeta) -> BoxFuture<'a, Result<(), SessionError>> {
        Box::pin(async move {
            self.check(&meta.id)?;
            self.inner.create(meta).await
        })
    }

    fn save_meta<'a>(&'a self, meta: &'a SessionMeta) -> BoxFuture<'a, Result<(), SessionError>> {
        Box::pin(async move {
            self.check(&meta.id)?;
            self.inner.save_meta(meta).await
        })
    }

    fn append<'a>(
        &'a self,
        id: &'a str,
        records: &'a [HistoryRecord],
    ) -> BoxFuture<'a, Result<(), SessionError>> {
        Box::pin(async move {
            self.check(id)?;
            self.inner.append(id, records).await
        })
    }

    fn save_and_append<'a>(
        &'a self,
        meta: &'a SessionMeta,
        records: &'a [HistoryRecord],
    ) -> BoxFuture<'a, Result<(), SessionError>> {
        Box::pin(async move {
            self.check(&meta.id)?;
            self.inner.save_and_append(meta, records).await
        })
    }

    fn create_and_append<'a>(
        &'a self,
        meta: &'a SessionMeta,
        records: &'a [HistoryRecord],
    ) -> BoxFuture<'a, Result<(), SessionError>> {
        Box::pin(async move {
            self.check(&meta.id)?;
            self.inner.create_and_append(meta, records).await
        })
    }

    fn load<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Session, SessionError>> {
        self.inner.load(id)
    }

    fn list(&self) -> BoxFuture<'_, Result<Vec<SessionMeta>, SessionError>> {
        self.inner.list()
    }

    fn delete<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<(), SessionError>> {
        Box::pin(async move {
            self.check(id)?;
            self.inner.delete(id).await
        })
    }
}
