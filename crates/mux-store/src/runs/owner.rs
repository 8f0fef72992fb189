//! Leases and takeover, written once for every face: [`RunOwner`].

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;

use mux_tool::BoxFuture;
use tokio_util::sync::CancellationToken;

use super::{RunRecord, RunStore, RunStoreError, RunWriter};

/// The shortest lease an owner keeps (as [`RunWriter`] does).
pub const MIN_LEASE: Duration = Duration::from_millis(30);

/// The longest wait between two looks for runs to take over.
const MAX_POLL: Duration = Duration::from_secs(1);

/// How often an owner holding runs under `lease` looks for runs to take over: a third of
/// the lease (as often as a writer renews it), at most once a second.
pub fn poll_interval(lease: Duration) -> Duration {
    (lease.max(MIN_LEASE) / 3).min(MAX_POLL)
}

/// What a face does with a run its [`RunOwner`] took over.
pub trait Takeover: Send + Sync + 'static {
    /// Continues `record`, a run of the face whose owner's lease ran out and that this owner
    /// now holds (its `last_seq` is the last event stored). The face starts a writer for it
    /// ([`RunOwner::writer`]) and goes on from its session, or ends it.
    fn continue_run(&self, record: RunRecord) -> BoxFuture<'_, ()>;

    /// Housekeeping after each look (forgetting old runs, say). Default: nothing.
    fn after_look(&self) -> BoxFuture<'_, ()> {
        Box::pin(async {})
    }
}

/// One process (one face's router or server) as the owner of that face's runs in a run store:
/// the lease it holds them under, the writers it runs, and the takeover of runs whose owner
/// stopped. Leases and takeover are written here once, for every face. Clones are the same
/// owner.
///
/// - **Who.** An owner has an id of its own (the face's name and 128 random bits), the prefix
///   of the run ids its face gives out, and one lease. Every claim it makes (begin, claim,
///   hand over, take over) is under that id and lease, and every writer it starts renews it.
/// - **When.** An owner looks for runs to take over every [`poll_interval`]: a third of the
///   lease, at most a second. A run whose process died is therefore taken over within its
///   lease and one interval after that process's last heartbeat.
/// - **The takeover rule.** A look claims, one at a time, every running run under the prefix
///   whose lease ran out ([`RunStore::claim_expired`]: each such run goes to exactly one
///   claimant, however many processes look at once). A run that a writer of this owner still
///   holds (the store was out for longer than the lease, and is back) is left to that writer,
///   which takes it back itself; every other run claimed is handed to the face's
///   [`Takeover::continue_run`], which continues it from its session.
#[derive(Clone)]
pub struct RunOwner {
    shared: Arc<Shared>,
}

struct Shared {
    store: Arc<dyn RunStore>,
    id: String,
    prefix: String,
    lease: Duration,
    alive: CancellationToken,
    /// The writers this owner started, by run id (ended ones are dropped as they are seen).
    writers: Mutex<HashMap<String, RunWriter>>,
}

impl std::fmt::Debug for RunOwner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunOwner")
            .field("id", &self.shared.id)
            .field("prefix", &self.shared.prefix)
            .field("lease", &self.shared.lease)
            .finish_non_exhaustive()
    }
}

impl RunOwner {
    /// A new owner, `name` followed by 128 random bits, of the runs in `store` whose ids
    /// start with `prefix`, holding them for `lease` (at least [`MIN_LEASE`]). Cancelling
    /// `alive` stops its writers where they are and its watch, as a process that ends would:
    /// other processes then take its runs over.
    pub fn new(
        store: Arc<dyn RunStore>,
        name: &str,
        prefix: impl Into<String>,
        lease: Duration,
        alive: CancellationToken,
    ) -> Self {
        Self {
            shared: Arc::new(Shared {
                store,
                id: format!("{name}-{}", random_hex()),
                prefix: prefix.into(),
                lease: lease.max(MIN_LEASE),
                alive,
                writers: Mutex::default(),
            }),
        }
    }

    /// The run store.
    pub fn store(&self) -> &Arc<dyn RunStore> {
        &self.shared.store
    }

    /// The owner's id, as the store records it.
    pub fn id(&self) -> &str {
        &self.shared.id
    }

    /// The prefix of the ids of the runs it takes over.
    pub fn prefix(&self) -> &str {
        &self.shared.prefix
    }

    /// How long after its last heartbeat a run of this owner may be taken over.
    pub fn lease(&self) -> Duration {
        self.shared.lease
    }

    /// How often it looks for runs to take over ([`poll_interval`] of its lease): also a
    /// fair pace for a face to look again at a run another process holds.
    pub fn poll_interval(&self) -> Duration {
        poll_interval(self.shared.lease)
    }

    /// How long a face may wait for a run another process holds to end after a cancel:
    /// that owner sees the cancel at its next heartbeat, and a dead owner's run is taken over
    /// once its lease ran out and a look found it. Three leases.
    pub fn settle_within(&self) -> Duration {
        self.shared.lease * 3
    }

    /// Cancelled when the owner stops (its face went away).
    pub fn alive(&self) -> &CancellationToken {
        &self.shared.alive
    }

    /// Stops the owner: its writers stop where they are and its watch ends, as when its
    /// process ends.
    pub fn stop(&self) {
        self.shared.alive.cancel();
    }

    /// Records a new running run `run_id` on `session_id`, held by this owner
    /// ([`RunStore::begin`]).
    pub async fn begin(&self, session_id: &str, run_id: &str) -> Result<RunRecord, RunStoreError> {
        let shared = &self.shared;
        shared
            .store
            .begin(session_id, run_id, &shared.id, shared.lease)
            .await
    }

    /// Takes `run_id` for this owner: a paused run, or a running one whose lease ran out
    /// ([`RunStore::claim`]).
    pub async fn claim(&self, run_id: &str) -> Result<RunRecord, RunStoreError> {
        let shared = &self.shared;
        shared.store.claim(run_id, &shared.id, shared.lease).await
    }

    /// Ends `from` and begins `to` on its session for this owner, in one step
    /// ([`RunStore::hand_over`]).
    pub async fn hand_over(&self, from: &str, to: &str) -> Result<RunRecord, RunStoreError> {
        let shared = &self.shared;
        shared
            .store
            .hand_over(from, to, &shared.id, shared.lease)
            .await
    }

    /// Starts the writer of `run_id`, which this owner holds (it began, claimed, handed over
    /// or took it over) with `last_seq` events stored. The run counts as held here until the
    /// writer is done.
    pub fn writer(&self, run_id: impl Into<String>, last_seq: u64) -> RunWriter {
        let shared = &self.shared;
        let run_id = run_id.into();
        let writer = RunWriter::start(
            Arc::clone(&shared.store),
            run_id.clone(),
            last_seq,
            shared.id.clone(),
            shared.lease,
            shared.alive.child_token(),
        );
        let mut writers = self.writers();
        writers.retain(|_, writer| !writer.is_done());
        writers.insert(run_id, writer.clone());
        writer
    }

    /// Whether a writer of this owner holds `run_id` (it is not done).
    pub fn holds(&self, run_id: &str) -> bool {
        self.writers()
            .get(run_id)
            .is_some_and(|writer| !writer.is_done())
    }

    fn writers(&self) -> std::sync::MutexGuard<'_, HashMap<String, RunWriter>> {
        self.shared
            .writers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Takes over one run under the prefix whose lease ran out and that no writer of this
    /// owner holds, or `None` when there is none left (the rule is [`RunOwner`]'s).
    pub async fn take_over_one(&self) -> Result<Option<RunRecord>, RunStoreError> {
        let shared = &self.shared;
        loop {
            let claimed = shared
                .store
                .claim_expired(&shared.prefix, &shared.id, shared.lease)
                .await?;
            match claimed {
                // Ours, back after the store was unreachable: its writer goes on (the claim
                // renewed its lease under this owner's id).
                Some(record) if self.holds(&record.run_id) => continue,
                other => return Ok(other),
            }
        }
    }

    /// One look: takes over every run it can and hands each to `face`.
    pub async fn look(&self, face: &dyn Takeover) {
        loop {
            match self.take_over_one().await {
                Ok(Some(record)) => {
                    tracing::info!(
                        run = %record.run_id,
                        session = %record.session_id,
                        owner = %self.shared.id,
                        "taking over a run whose owner stopped"
                    );
                    face.continue_run(record).await;
                }
                Ok(None) => return,
                Err(err) => {
                    tracing::debug!(owner = %self.shared.id, "looking for runs to take over: {err}");
                    return;
                }
            }
        }
    }

    /// Starts the watch: every [`poll_interval`] a [`look`](Self::look) for `face`, then its
    /// [`after_look`](Takeover::after_look). It ends when the owner stops or `face` is
    /// dropped. Outside a tokio runtime nothing starts (and a warning says so).
    pub fn watch<F: Takeover>(&self, face: Weak<F>) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            tracing::warn!(
                owner = %self.shared.id,
                "no tokio runtime: runs of stopped processes are not taken over"
            );
            return;
        };
        let owner = self.clone();
        runtime.spawn(async move {
            let every = owner.poll_interval();
            loop {
                tokio::select! {
                    () = tokio::time::sleep(every) => {}
                    () = owner.shared.alive.cancelled() => return,
                }
                let Some(face) = face.upgrade() else {
                    return;
                };
                owner.look(&*face).await;
                face.after_look().await;
            }
        });
    }
}

/// 128 random bits in hex, or (should the OS generator fail) bits of std's randomly keyed
/// hasher over the time and the process.
fn random_hex() -> String {
    let mut bytes = [0u8; 16];
    if getrandom::fill(&mut bytes).is_err() {
        use std::hash::{BuildHasher as _, Hasher as _};
        for (i, half) in bytes.chunks_mut(8).enumerate() {
            let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
            hasher.write_u128(
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map(|d| d.as_nanos())
                    .unwrap_or_default(),
            );
            hasher.write_u32(std::process::id());
            hasher.write_usize(i);
            half.copy_from_slice(&hasher.finish().to_le_bytes());
        }
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
