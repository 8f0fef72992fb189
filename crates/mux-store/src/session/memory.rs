//! Sessions in memory, for tests and short-lived processes.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use super::{
    HistoryRecord, Session, SessionError, SessionFuture, SessionMeta, SessionStore, check_id,
};

/// Keeps sessions in a map; nothing survives the process.
#[derive(Debug, Default)]
pub struct MemorySessionStore {
    sessions: Mutex<HashMap<String, (SessionMeta, Vec<HistoryRecord>)>>,
}

impl MemorySessionStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn with<T>(
        &self,
        f: impl FnOnce(&mut HashMap<String, (SessionMeta, Vec<HistoryRecord>)>) -> T,
    ) -> T {
        f(&mut self.sessions.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

impl SessionStore for MemorySessionStore {
    fn create<'a>(&'a self, meta: &'a SessionMeta) -> SessionFuture<'a, ()> {
        let result = check_id(&meta.id).and_then(|()| {
            self.with(|map| {
                if map.contains_key(&meta.id) {
                    return Err(SessionError::AlreadyExists(meta.id.clone()));
                }
                map.insert(meta.id.clone(), (meta.clone(), Vec::new()));
                Ok(())
            })
        });
        Box::pin(std::future::ready(result))
    }

    fn save_meta<'a>(&'a self, meta: &'a SessionMeta) -> SessionFuture<'a, ()> {
        let result = self.with(|map| match map.get_mut(&meta.id) {
            Some(entry) => {
                entry.0 = meta.clone();
                Ok(())
            }
            None => Err(SessionError::NotFound(meta.id.clone())),
        });
        Box::pin(std::future::ready(result))
    }

    fn append<'a>(&'a self, id: &'a str, records: &'a [HistoryRecord]) -> SessionFuture<'a, ()> {
        let result = self.with(|map| match map.get_mut(id) {
            Some(entry) => {
                entry.1.extend_from_slice(records);
                Ok(())
            }
            None => Err(SessionError::NotFound(id.to_owned())),
        });
        Box::pin(std::future::ready(result))
    }

    fn load<'a>(&'a self, id: &'a str) -> SessionFuture<'a, Session> {
        let result = self.with(|map| match map.get(id) {
            Some((meta, records)) => Ok(Session::replay(meta.clone(), records.iter().cloned())),
            None => Err(SessionError::NotFound(id.to_owned())),
        });
        Box::pin(std::future::ready(result))
    }

    fn load_meta<'a>(&'a self, id: &'a str) -> SessionFuture<'a, SessionMeta> {
        let result = self.with(|map| match map.get(id) {
            Some((meta, _)) => Ok(meta.clone()),
            None => Err(SessionError::NotFound(id.to_owned())),
        });
        Box::pin(std::future::ready(result))
    }

    fn list(&self) -> SessionFuture<'_, Vec<SessionMeta>> {
        let mut metas: Vec<SessionMeta> =
            self.with(|map| map.values().map(|(meta, _)| meta.clone()).collect());
        super::page::sort(&mut metas);
        Box::pin(std::future::ready(Ok(metas)))
    }

    fn delete<'a>(&'a self, id: &'a str) -> SessionFuture<'a, ()> {
        let result = self.with(|map| {
            map.remove(id)
                .map(|_| ())
                .ok_or_else(|| SessionError::NotFound(id.to_owned()))
        });
        Box::pin(std::future::ready(result))
    }
}
