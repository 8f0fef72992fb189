//! [`FaultyRunStore`]: a run store that fails on purpose, for tests of what a face does when
//! its store is unreachable or loses an answer (feature `testing`).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use mux_tool::BoxFuture;

use super::{
    EventJson, ListedRun, RunFuture, RunRecord, RunStatus, RunStore, RunStoreError, StoreFault,
    StoredEvent,
};

/// Wraps a run store: while [cut off](Self::cut_off) every call fails as an unreachable
/// store would (a partition between one process and the database), and after
/// [`lose_next_answer`](Self::lose_next_answer) the next append is stored but answered with
/// an error (the connection dropped after the commit); while [hung](Self::hang) every call
/// waits without an answer (a lock held elsewhere, a server that stopped answering) until the
/// store is let go.
pub struct FaultyRunStore {
    inner: Arc<dyn RunStore>,
    cut: AtomicBool,
    lose_answer: AtomicBool,
    crash: AtomicBool,
    hung: tokio::sync::watch::Sender<bool>,
}

impl std::fmt::Debug for FaultyRunStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FaultyRunStore")
            .field("cut", &self.cut)
            .field("lose_answer", &self.lose_answer)
            .field("crash", &self.crash)
            .field("hung", &*self.hung.borrow())
            .finish_non_exhaustive()
    }
}

impl FaultyRunStore {
    /// `inner`, working until told otherwise.
    pub fn new(inner: Arc<dyn RunStore>) -> Self {
        Self {
            inner,
            cut: AtomicBool::new(false),
            lose_answer: AtomicBool::new(false),
            crash: AtomicBool::new(false),
            hung: tokio::sync::watch::Sender::new(false),
        }
    }

    /// Makes every call wait without an answer (`true`) until let go (`false`).
    pub fn hang(&self, hung: bool) {
        self.hung.send_replace(hung);
    }

    /// Cuts the store off (`true`) or reconnects it (`false`).
    pub fn cut_off(&self, cut: bool) {
        self.cut.store(cut, Ordering::SeqCst);
    }

    /// The next append is stored, then answered with an error.
    pub fn lose_next_answer(&self) {
        self.lose_answer.store(true, Ordering::SeqCst);
    }

    /// The next append is stored, then the store is cut off before it answers (a database
    /// that crashed after the commit): the writer cannot learn that it was stored.
    pub fn crash_after_next_append(&self) {
        self.crash.store(true, Ordering::SeqCst);
    }

    async fn reach(&self, operation: &'static str) -> Result<(), RunStoreError> {
        let mut hung = self.hung.subscribe();
        // Closed only with the store, which outlives its calls.
        let _ = hung.wait_for(|hung| !hung).await;
        if self.cut.load(Ordering::SeqCst) {
            return Err(RunStoreError::Unavailable {
                operation,
                fault: StoreFault::Unreachable,
                reason: "cut off".into(),
            });
        }
        Ok(())
    }
}

/// Forwards `$call` to the inner store once the store is reachable.
macro_rules! reached {
    ($self:ident, $operation:literal, $call:expr) => {
        Box::pin(async move {
            $self.reach($operation).await?;
            $call.await
        })
    };
}

impl RunStore for FaultyRunStore {
    fn begin<'a>(
        &'a self,
        session_id: &'a str,
        run_id: &'a str,
        owner: &'a str,
        lease: Duration,
    ) -> RunFuture<'a, RunRecord> {
        reached!(
            self,
            "beginning a run",
            self.inner.begin(session_id, run_id, owner, lease)
        )
    }

    fn renew<'a>(
        &'a self,
        run_id: &'a str,
        owner: &'a str,
        lease: Duration,
    ) -> RunFuture<'a, RunRecord> {
        reached!(
            self,
            "renewing a lease",
            self.inner.renew(run_id, owner, lease)
        )
    }

    fn set_status<'a>(
        &'a self,
        run_id: &'a str,
        owner: &'a str,
        status: RunStatus,
    ) -> RunFuture<'a, ()> {
        reached!(
            self,
            "setting a status",
            self.inner.set_status(run_id, owner, status)
        )
    }

    fn claim<'a>(
        &'a self,
        run_id: &'a str,
        owner: &'a str,
        lease: Duration,
    ) -> RunFuture<'a, RunRecord> {
        reached!(
            self,
            "claiming a run",
            self.inner.claim(run_id, owner, lease)
        )
    }

    fn hand_over<'a>(
        &'a self,
        from: &'a str,
        to: &'a str,
        owner: &'a str,
        lease: Duration,
    ) -> RunFuture<'a, RunRecord> {
        reached!(
            self,
            "handing a run over",
            self.inner.hand_over(from, to, owner, lease)
        )
    }

    fn claim_expired<'a>(
        &'a self,
        prefix: &'a str,
        owner: &'a str,
        lease: Duration,
    ) -> RunFuture<'a, Option<RunRecord>> {
        reached!(
            self,
            "claiming an expired run",
            self.inner.claim_expired(prefix, owner, lease)
        )
    }

    fn get<'a>(&'a self, run_id: &'a str) -> RunFuture<'a, RunRecord> {
        reached!(self, "reading a run", self.inner.get(run_id))
    }

    fn active_run<'a>(&'a self, session_id: &'a str) -> RunFuture<'a, Option<RunRecord>> {
        reached!(
            self,
            "reading the active run",
            self.inner.active_run(session_id)
        )
    }

    fn request_cancel<'a>(&'a self, run_id: &'a str) -> RunFuture<'a, ()> {
        reached!(
            self,
            "asking for a cancel",
            self.inner.request_cancel(run_id)
        )
    }

    fn append_json<'a>(
        &'a self,
        run_id: &'a str,
        owner: &'a str,
        events: &'a [EventJson],
        end: Option<RunStatus>,
    ) -> RunFuture<'a, u64> {
        Box::pin(async move {
            self.reach("appending events").await?;
            let stored = self.inner.append_json(run_id, owner, events, end).await?;
            if self.crash.swap(false, Ordering::SeqCst) {
                self.cut_off(true);
                return Err(RunStoreError::Unavailable {
                    operation: "appending events",
                    fault: StoreFault::Unreachable,
                    reason: "the connection closed".into(),
                });
            }
            if self.lose_answer.swap(false, Ordering::SeqCst) {
                return Err(RunStoreError::Store {
                    operation: "appending events",
                    reason: "connection reset by peer".into(),
                });
            }
            Ok(stored)
        })
    }

    fn events_after<'a>(
        &'a self,
        run_id: &'a str,
        after: u64,
        limit: usize,
    ) -> RunFuture<'a, Vec<StoredEvent>> {
        reached!(
            self,
            "reading events",
            self.inner.events_after(run_id, after, limit)
        )
    }

    fn list_runs<'a>(
        &'a self,
        prefix: &'a str,
        after: &'a str,
        limit: usize,
    ) -> RunFuture<'a, Vec<ListedRun>> {
        reached!(
            self,
            "listing runs",
            self.inner.list_runs(prefix, after, limit)
        )
    }

    fn forget_ended<'a>(&'a self, older_than: Duration) -> RunFuture<'a, u64> {
        reached!(
            self,
            "forgetting ended runs",
            self.inner.forget_ended(older_than)
        )
    }

    fn changed<'a>(&'a self, run_id: &'a str, wait: Duration) -> BoxFuture<'a, ()> {
        self.inner.changed(run_id, wait)
    }

    fn notifies(&self) -> bool {
        self.inner.notifies()
    }
}
