//! Who owns a thread: the principal that created it, recorded in the session's metadata
//! (`extra["mux_web_owner"]`) so it survives restarts and holds across processes sharing a
//! store, and cached here.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use mux_orchestrator::session::{SessionError, SessionMeta, SessionStore};

use crate::error::WebError;
use crate::security::Principal;

/// The metadata key of a thread's owner.
const OWNER_KEY: &str = "mux_web_owner";

/// Records `principal` as the owner in a new session's metadata.
pub(crate) fn record(meta: &mut SessionMeta, principal: &Principal) {
    meta.extra
        .insert(OWNER_KEY.to_owned(), principal.name().into());
}

/// Whether `principal` owns the session of `meta`.
pub(crate) fn owns(meta: &SessionMeta, principal: &Principal) -> bool {
    recorded(meta) == *principal
}

/// The owner named in `meta`; a session stored without one (before owners were recorded, or
/// by another face) belongs to [`Principal::local`].
fn recorded(meta: &SessionMeta) -> Principal {
    meta.extra
        .get(OWNER_KEY)
        .and_then(|v| v.as_str())
        .map_or_else(Principal::local, Principal::new)
}

/// A thread's owner as [`Owners::lookup`] finds it.
pub(crate) enum Owner {
    /// Cached, or recorded in the stored session.
    Known(Principal),
    /// The store has no such thread.
    NotStored,
}

/// Thread owners: the store's record, cached; claims of new threads.
pub(crate) struct Owners {
    store: Arc<dyn SessionStore>,
    cache: Mutex<HashMap<String, Principal>>,
}

impl Owners {
    pub(crate) fn new(store: Arc<dyn SessionStore>) -> Self {
        Self {
            store,
            cache: Mutex::default(),
        }
    }

    fn cache(&self) -> std::sync::MutexGuard<'_, HashMap<String, Principal>> {
        self.cache.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The thread's owner, from the cache or the store; [`Owner::NotStored`] when the store
    /// has no such thread (asked now, not cached).
    pub(crate) async fn lookup(&self, thread_id: &str) -> Result<Owner, WebError> {
        if let Some(owner) = self.cache().get(thread_id) {
            return Ok(Owner::Known(owner.clone()));
        }
        Ok(match self.stored(thread_id).await? {
            Some(owner) => Owner::Known(
                self.cache()
                    .entry(thread_id.to_owned())
                    .or_insert(owner)
                    .clone(),
            ),
            None => Owner::NotStored,
        })
    }

    /// The thread's owner as the store records it now, which replaces any cached owner (a
    /// claim another principal made here may be stale: its run found the thread made
    /// elsewhere meanwhile). [`Owner::NotStored`] leaves the cache as it is: a claim of a
    /// thread being made here holds.
    pub(crate) async fn reload(&self, thread_id: &str) -> Result<Owner, WebError> {
        Ok(match self.stored(thread_id).await? {
            Some(owner) => {
                self.cache().insert(thread_id.to_owned(), owner.clone());
                Owner::Known(owner)
            }
            None => Owner::NotStored,
        })
    }

    /// The owner the store records for the thread; `None` when it has no such thread.
    async fn stored(&self, thread_id: &str) -> Result<Option<Principal>, WebError> {
        match self.store.load_meta(thread_id).await {
            Ok(meta) => Ok(Some(recorded(&meta))),
            Err(SessionError::NotFound(_)) => Ok(None),
            Err(e) => Err(WebError::Session(e.to_string())),
        }
    }

    /// Makes a thread nobody owns `principal`'s; false when another claimed it first.
    pub(crate) fn claim(&self, thread_id: &str, principal: &Principal) -> bool {
        let mut cache = self.cache();
        cache
            .entry(thread_id.to_owned())
            .or_insert_with(|| principal.clone())
            == principal
    }

    /// Drops cached owners of threads `keep` does not keep (the store still knows them).
    pub(crate) fn forget_unless(&self, keep: impl Fn(&str) -> bool) {
        self.cache().retain(|id, _| keep(id));
    }
}
