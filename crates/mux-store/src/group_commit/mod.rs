//! Group commit for the PostgreSQL stores: the writes of concurrent runs (a run's events and
//! status, a session's records and metadata) gathered while a commit is in flight and
//! written together, in one multi-row statement and one commit.
//!
//! - **One writer per database per process.** Every [`GroupCommit`] on the same database
//!   (host or socket, port, user, database) shares it, so a run store and a session store on
//!   that database commit together. It writes on [`FLIGHTS`] connections of its own, kept
//!   open between commits.
//! - **Batches.** A write waits in a queue; the writer takes everything queued (up to
//!   [`MAX_BATCH`]) into one commit. Under a light load, up to [`FLIGHTS`] commits run at
//!   once, so a write seldom waits for another's; once [`PARALLEL_BELOW`] writes are in
//!   flight, the next batch waits for the first commit to end and grows meanwhile
//!   ([`may_start`]). Batches grow with the load and the database's latency, and nothing
//!   waits on a timer. A commit is one statement, whatever kinds of write it holds: one
//!   round trip, its own transaction.
//! - **Order per key.** A batch holds at most one write per run and per session, and a run or
//!   session with a write in flight waits for it: writes to one key commit in the order they
//!   were queued.
//! - **Each caller gets its own answer.** The statements check each row alone (a run's lease,
//!   a session's existence): a refused write changes nothing and the others commit. When the
//!   database refuses the whole batch (a statement error, not an unreachable server), each write
//!   is retried alone, so one bad write fails only itself.
//! - **Outages.** When the database cannot be reached (2 s to get a connection) every write of
//!   the batch gets the error; its caller keeps its data and retries, as it would on a single
//!   statement. Callers wait for their answer, so the queue holds at most one write per waiting
//!   caller.
//! - **Locks and slow statements.** A commit waits at most [`LOCK_TIMEOUT`] for a lock held
//!   elsewhere (an operator's open transaction, a schema change) and runs at most
//!   [`STATEMENT_TIMEOUT`]: PostgreSQL then gives the statement up, rolled back for certain.
//!   Under load one commit is in flight, so without the bounds one held lock would hold up
//!   every write of the process. A URL's own `lock_timeout` or `statement_timeout` wins.
//! - **One write given up fails alone.** The writes of a batch PostgreSQL gave up are queued
//!   again, each to commit alone, so those that did not wait commit at once and only the one
//!   that waited fails (after waiting again). Its key is then a suspect for [`SUSPECT_FOR`]:
//!   its writes commit alone, so it cannot hold up the batches of others.
//! - **Unanswered commits.** A commit waits for its answer at most twice its statement
//!   timeout; one whose answer was lost is settled by stopping its server process and reading
//!   back what landed (see [`settle`]).

mod job;
mod part;
mod runs;
mod sessions;
mod settle;
mod token;

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;

use sqlx::postgres::{PgConnectOptions, PgConnection, PgPool};

use crate::fault::StoreFault;
use crate::pg_connections::Connections;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinSet;

pub(crate) use job::{Failure, Write, Written};
use job::{Job, Key};
use part::{Part, shift};
pub(crate) use runs::{RunAppend, RunBegin};
pub(crate) use sessions::{SavedMeta, SessionRow, SessionWrite};
use settle::Outcome;

/// The most commits a writer has in flight at once (and its connections).
pub(crate) const FLIGHTS: usize = 4;
/// Below this many writes in flight, a further commit starts at once (see [`may_start`]).
const PARALLEL_BELOW: usize = 8;
/// The most writes one commit takes.
pub(crate) const MAX_BATCH: usize = 512;
/// How long a commit waits for a lock before PostgreSQL gives it up (see the module's docs).
pub(crate) const LOCK_TIMEOUT: &str = "5s";
/// How long a commit's statement may run before PostgreSQL gives it up.
pub(crate) const STATEMENT_TIMEOUT: &str = "30s";
/// How long a key whose write PostgreSQL gave up, alone, has its writes committed alone.
const SUSPECT_FOR: Duration = Duration::from_secs(60);
/// The `application_name` the writer's connections show in `pg_stat_activity`, unless the URL
/// names its own: who holds a lock or waits for one is then plain to an operator.
const APPLICATION_NAME: &str = "mux group commit";
/// How many writes may wait to be taken before callers wait to queue theirs.
const QUEUE: usize = 4_096;
/// How long the writer waits for a connection before the batch fails.
const ACQUIRE: Duration = Duration::from_secs(2);

/// The handle a store holds on its database's writer.
#[derive(Debug)]
pub(crate) struct GroupCommit {
    key: String,
    options: PgConnectOptions,
    writer: Mutex<Arc<Writer>>,
}

/// A running writer: its queue.
#[derive(Debug)]
struct Writer {
    jobs: mpsc::Sender<Job>,
}

/// The writers of this process, by database.
static WRITERS: Mutex<Vec<(String, Weak<Writer>)>> = Mutex::new(Vec::new());

/// The identity of the database `options` connect to, and of the server options asked for
/// (a store that relaxes `synchronous_commit` does not share a writer with one that does not).
fn database_key(options: &PgConnectOptions) -> String {
    format!(
        "{:?}|{}|{}|{}|{:?}|{:?}",
        options.get_socket(),
        options.get_host(),
        options.get_port(),
        options.get_username(),
        options.get_database(),
        options.get_options()
    )
}

/// This process's writer on the database `key`, started on `options` if none runs.
fn shared_writer(key: &str, options: &PgConnectOptions) -> Arc<Writer> {
    let mut writers = WRITERS.lock().unwrap_or_else(PoisonError::into_inner);
    writers.retain(|(_, writer)| writer.upgrade().is_some_and(|w| !w.jobs.is_closed()));
    if let Some(writer) = writers
        .iter()
        .find(|(k, _)| k == key)
        .and_then(|(_, writer)| writer.upgrade())
    {
        return writer;
    }
    let writer = Arc::new(Writer::start(options));
    writers.push((key.to_owned(), Arc::downgrade(&writer)));
    writer
}

impl GroupCommit {
    /// The writer of the database `pool` connects to (started here if none runs in this
    /// process). Needs a tokio runtime.
    pub(crate) fn for_pool(pool: &PgPool) -> Self {
        let options = (*pool.connect_options()).clone();
        let key = database_key(&options);
        let writer = shared_writer(&key, &options);
        Self {
            key,
            options,
            writer: Mutex::new(writer),
        }
    }

    /// The current writer; a new one when the last stopped (its runtime ended).
    fn writer(&self) -> Arc<Writer> {
        let mut writer = self.writer.lock().unwrap_or_else(PoisonError::into_inner);
        if writer.jobs.is_closed() {
            *writer = shared_writer(&self.key, &self.options);
        }
        Arc::clone(&writer)
    }

    /// Queues `write` and waits for its commit.
    pub(crate) async fn write(&self, write: Write) -> Result<Written, Failure> {
        let (reply, answer) = oneshot::channel();
        let mut job = Job {
            write,
            reply,
            alone: false,
        };
        // A writer whose runtime ended is replaced once.
        for _ in 0..2 {
            match self.writer().jobs.send(job).await {
                Ok(()) => {
                    return answer.await.unwrap_or_else(|_| Err(stopped()));
                }
                Err(mpsc::error::SendError(back)) => job = back,
            }
        }
        Err(stopped())
    }
}

impl GroupCommit {
    /// Queues a run's begin and waits for its commit: whether it was inserted.
    pub(crate) async fn begin_run(&self, begin: RunBegin) -> Result<bool, Failure> {
        match self.write(Write::Begin(begin)).await? {
            Written::Begin(inserted) => Ok(inserted),
            _ => Err(mismatch()),
        }
    }

    /// Queues a run's append and waits for its commit: the number before its first event, or
    /// `None` when the owner does not hold the run.
    pub(crate) async fn append_run(&self, append: RunAppend) -> Result<Option<i64>, Failure> {
        match self.write(Write::Run(append)).await? {
            Written::Run(first) => Ok(first),
            _ => Err(mismatch()),
        }
    }

    /// Queues a session's write and waits for its commit: whether the session exists.
    pub(crate) async fn write_session(&self, write: SessionWrite) -> Result<bool, Failure> {
        match self.write(Write::Session(write)).await? {
            Written::Session(found) => Ok(found),
            _ => Err(mismatch()),
        }
    }
}

fn mismatch() -> Failure {
    Failure {
        reason: "the group commit answered a write of another kind".to_owned(),
        fault: Some(StoreFault::Failed),
    }
}

/// The answer of a write whose commit ended without answering it (the writer's runtime
/// ended, or its commit task failed): it may have landed, so its caller settles it as a
/// lost answer.
fn stopped() -> Failure {
    Failure {
        reason: "the group-commit writer ended without answering this write (its runtime \
                 ended or its commit failed); whether it landed is not known"
            .to_owned(),
        fault: Some(StoreFault::Unanswered),
    }
}

impl Writer {
    /// Starts a writer on connections of its own.
    fn start(options: &PgConnectOptions) -> Self {
        let options = bounded(options.clone());
        let connections = Arc::new(Connections::new(options, FLIGHTS, ACQUIRE));
        let (jobs, queue) = mpsc::channel(QUEUE);
        tokio::spawn(dispatch(queue, connections));
        Self { jobs }
    }
}

/// Takes queued writes into batches, up to [`FLIGHTS`] commits at once, until every sender
/// is gone and the last batch is written.
async fn dispatch(mut queue: mpsc::Receiver<Job>, connections: Arc<Connections>) {
    let mut waiting: VecDeque<Job> = VecDeque::new();
    let mut busy: HashSet<Key> = HashSet::new();
    let mut in_flight: HashMap<tokio::task::Id, Vec<Key>> = HashMap::new();
    let mut flights: JoinSet<Outcome> = JoinSet::new();
    let mut suspects = Suspects::default();
    let mut unsettled: HashMap<Key, settle::Unsettled> = HashMap::new();
    let mut open = true;
    loop {
        while waiting.len() < QUEUE {
            match queue.try_recv() {
                Ok(job) => waiting.push_back(job),
                Err(_) => break,
            }
        }
        if may_start(flights.len(), in_flight.values().map(Vec::len).sum()) {
            let batch = take_batch(&mut waiting, &busy, |key| {
                suspects.contains(key) || unsettled.contains_key(key)
            });
            if !batch.is_empty() {
                let keys: Vec<Key> = batch.iter().map(|job| job.write.key()).collect();
                busy.extend(keys.iter().cloned());
                // A write to an unsettled key is a batch of its own.
                let earlier = unsettled.remove(&keys[0]);
                let handle =
                    flights.spawn(commit_and_answer(Arc::clone(&connections), batch, earlier));
                in_flight.insert(handle.id(), keys);
                continue;
            }
        }
        if !open && waiting.is_empty() && flights.is_empty() {
            return;
        }
        tokio::select! {
            job = queue.recv(), if open && waiting.len() < QUEUE => match job {
                Some(job) => waiting.push_back(job),
                None => open = false,
            },
            Some(done) = flights.join_next_with_id(), if !flights.is_empty() => {
                let (id, outcome) = match done {
                    Ok((id, outcome)) => (id, outcome),
                    // Its writes' callers are answered by their replies' drop (see
                    // `stopped`): none waits forever.
                    Err(err) => {
                        tracing::error!("a group commit's task failed: {err}");
                        (err.id(), Outcome::default())
                    }
                };
                for key in in_flight.remove(&id).unwrap_or_default() {
                    busy.remove(&key);
                }
                // Older than anything queued since: first, in their order.
                for job in outcome.again.into_iter().rev() {
                    waiting.push_front(job);
                }
                if let Some(key) = outcome.suspect {
                    suspects.add(key);
                }
                for write in outcome.unsettled {
                    unsettled.insert(write.write.key(), write);
                }
            }
        }
    }
}

/// `options` with [`LOCK_TIMEOUT`] and [`STATEMENT_TIMEOUT`], each unless they set their own,
/// and named [`APPLICATION_NAME`].
fn bounded(mut options: PgConnectOptions) -> PgConnectOptions {
    if options.get_application_name().is_none() {
        options = options.application_name(APPLICATION_NAME);
    }
    for (setting, value) in [
        ("lock_timeout", LOCK_TIMEOUT),
        ("statement_timeout", STATEMENT_TIMEOUT),
    ] {
        if !options
            .get_options()
            .is_some_and(|set| set.contains(setting))
        {
            options = options.options([(setting, value)]);
        }
    }
    options
}

/// Keys whose write PostgreSQL gave up alone, until when their writes commit alone.
#[derive(Default)]
struct Suspects(HashMap<Key, std::time::Instant>);

impl Suspects {
    fn add(&mut self, key: Key) {
        let now = std::time::Instant::now();
        self.0.retain(|_, until| *until > now);
        self.0.insert(key, now + SUSPECT_FOR);
    }

    fn contains(&self, key: &Key) -> bool {
        self.0
            .get(key)
            .is_some_and(|until| *until > std::time::Instant::now())
    }
}

/// Whether PostgreSQL gave a statement up rather than refusing its data: it waited too long for
/// a lock, ran too long or was cancelled, or it met a deadlock or a serialization conflict.
/// The statement is rolled back; which of its writes waited, the error does not say.
fn gave_up(err: &dyn sqlx::error::DatabaseError) -> bool {
    err.code()
        .is_some_and(|code| matches!(&*code, "55P03" | "57014" | "40P01" | "40001"))
}

/// Whether another commit may start, with `flights` in flight holding `writes` writes: the
/// first always; a further one only while the load is light (fewer than [`PARALLEL_BELOW`]
/// writes in flight). Under load, writes gather for the next commit instead: a commit's cost
/// to both sides is mostly its own, not its rows', so a few large commits cost far less than
/// many small ones.
fn may_start(flights: usize, writes: usize) -> bool {
    flights == 0 || (flights < FLIGHTS && writes < PARALLEL_BELOW)
}

/// The next batch: the queued writes, in order, at most one per key and none whose key is in
/// flight; the others stay queued in their order. A write to commit alone (its batch was
/// given up, or its key is `alone`: a suspect, or unsettled) is a batch of its own.
fn take_batch(
    waiting: &mut VecDeque<Job>,
    busy: &HashSet<Key>,
    alone: impl Fn(&Key) -> bool,
) -> Vec<Job> {
    let mut batch = Vec::new();
    let mut keys = HashSet::new();
    let mut kept = VecDeque::new();
    let mut closed = false;
    while let Some(job) = waiting.pop_front() {
        let key = job.write.key();
        let alone = job.alone || alone(&key);
        let fits = !closed && batch.len() < MAX_BATCH && (!alone || batch.is_empty());
        if fits && !busy.contains(&key) && !keys.contains(&key) {
            keys.insert(key);
            batch.push(job);
            closed = alone;
        } else {
            // A later write to a key already taken waits behind it.
            keys.insert(key);
            kept.push_back(job);
        }
    }
    *waiting = kept;
    batch
}

/// Commits `batch` and answers each caller. When the database refuses the batch (an error of
/// a statement, not of the connection), each write is retried alone; when it gave the batch
/// up (see [`gave_up`]), its writes go back to the dispatcher to commit each alone, and a
/// write given up alone makes its key a suspect. A commit whose answer is lost (not within
/// [`answered`], or the connection failed) is settled (see [`settle`]); `earlier`, the
/// unsettled write of a batch of one's key, is settled first.
async fn commit_and_answer(
    connections: Arc<Connections>,
    mut batch: Vec<Job>,
    earlier: Option<settle::Unsettled>,
) -> Outcome {
    let mut outcome = Outcome::default();
    if let Some(earlier) = earlier {
        let Some(job) = batch.pop() else {
            outcome.unsettled.push(earlier);
            return outcome;
        };
        match settle::settle_first(&connections, earlier, job, &mut outcome).await {
            Some(job) => batch.push(job),
            None => return outcome,
        }
    }
    let mut conn = match connections.take().await {
        Ok(conn) => conn,
        Err(err) => {
            let failure = Failure::of(&err);
            for job in batch {
                let _ = job.reply.send(Err(failure.clone()));
            }
            return outcome;
        }
    };
    let backend = conn.backend().clone();
    let (writes, replies): (Vec<Write>, Vec<_>) =
        batch.into_iter().map(|job| (job.write, job.reply)).unzip();
    let committed = answered(&backend, commit(&mut conn, &writes)).await;
    let given_up = matches!(&committed, Err(sqlx::Error::Database(db)) if gave_up(&**db));
    match committed {
        Ok(written) => {
            connections.put(conn);
            for (reply, written) in replies.into_iter().zip(written) {
                let _ = reply.send(Ok(written));
            }
        }
        Err(err) if settle::answer_lost(&err) => {
            drop(conn);
            let jobs = jobs(writes, replies, false);
            return settle::answer_lost_commit(&connections, &backend, jobs, &err.to_string())
                .await;
        }
        Err(err) if given_up && writes.len() > 1 => {
            connections.put(conn);
            tracing::warn!(
                "a group commit of {} writes was given up ({err}); committing each alone",
                writes.len()
            );
            outcome.again = jobs(writes, replies, true);
        }
        Err(sqlx::Error::Database(err)) if writes.len() > 1 => {
            tracing::debug!(
                "a group commit of {} writes was refused ({err}); writing them one by one",
                writes.len()
            );
            let mut left = writes.into_iter().zip(replies);
            while let Some((write, reply)) = left.next() {
                let answer =
                    answered(&backend, commit(&mut conn, std::slice::from_ref(&write))).await;
                match answer {
                    Err(err) if settle::answer_lost(&err) => {
                        drop(conn);
                        let (writes, replies) = std::iter::once((write, reply)).chain(left).unzip();
                        let jobs = jobs(writes, replies, false);
                        return settle::answer_lost_commit(
                            &connections,
                            &backend,
                            jobs,
                            &err.to_string(),
                        )
                        .await;
                    }
                    answer => {
                        let answer = answer
                            .map_err(|err| Failure::of(&err))
                            .and_then(|mut written| written.pop().ok_or_else(stopped));
                        let _ = reply.send(answer);
                    }
                }
            }
            connections.put(conn);
        }
        Err(err) => {
            connections.put(conn);
            let failure = Failure::of(&err);
            for reply in replies {
                let _ = reply.send(Err(failure.clone()));
            }
            // A write given up alone: its key's next writes commit alone.
            outcome.suspect = writes.first().filter(|_| given_up).map(Write::key);
        }
    }
    outcome
}

/// `commit`'s result, or an I/O error ([`Unanswered`](crate::store_bound::Unanswered)) when
/// no answer came within twice `backend`'s `statement_timeout`
/// ([`answer_within`](crate::store_bound::answer_within)).
async fn answered<T>(
    backend: &crate::pg_connections::Backend,
    commit: impl Future<Output = Result<T, sqlx::Error>>,
) -> Result<T, sqlx::Error> {
    let within = crate::store_bound::answer_within(backend.statement_timeout);
    tokio::time::timeout(within, commit)
        .await
        .unwrap_or_else(|_| {
            Err(sqlx::Error::Io(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                crate::store_bound::Unanswered(within),
            )))
        })
}

/// `writes` and their `replies` as jobs again.
fn jobs(
    writes: Vec<Write>,
    replies: Vec<oneshot::Sender<Result<Written, Failure>>>,
    alone: bool,
) -> Vec<Job> {
    writes
        .into_iter()
        .zip(replies)
        .map(|(write, reply)| Job {
            write,
            reply,
            alone,
        })
        .collect()
}

/// The parts, in the order their parameters are bound.
const PARTS: [&Part; 3] = [&runs::BEGIN, &runs::APPEND, &sessions::WRITE];

/// The statement of a commit holding the kinds in `present` (by [`PARTS`]'s order): one
/// statement whatever the mix, so a commit is one round trip and its own transaction.
fn statement(present: [bool; 3]) -> &'static str {
    static STATEMENTS: std::sync::LazyLock<Vec<String>> = std::sync::LazyLock::new(|| {
        (0..8)
            .map(|mask: usize| {
                let parts = PARTS
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| mask & (1 << i) != 0)
                    .map(|(_, part)| *part);
                let mut ctes = Vec::new();
                let mut answers = Vec::new();
                let mut offset = 0;
                for part in parts {
                    ctes.push(shift(part.ctes, offset));
                    answers.push(part.answer);
                    offset += part.params();
                }
                format!(
                    "WITH {}\n{}",
                    ctes.join(",\n"),
                    answers.join("\nUNION ALL ")
                )
            })
            .collect()
    });
    let mask = (0..3)
        .filter(|&i| present[i])
        .fold(0, |mask, i| mask | (1 << i));
    &STATEMENTS[mask]
}

/// Writes `writes` in one commit, as one statement; each write's answer, in order.
async fn commit(conn: &mut PgConnection, writes: &[Write]) -> Result<Vec<Written>, sqlx::Error> {
    let mut begins = Vec::new();
    let mut appends = Vec::new();
    let mut sessions = Vec::new();
    for write in writes {
        match write {
            Write::Begin(begin) => begins.push(begin),
            Write::Run(run) => appends.push(run),
            Write::Session(session) => sessions.push(session),
        }
    }
    let present = [
        !begins.is_empty(),
        !appends.is_empty(),
        !sessions.is_empty(),
    ];
    if present == [false; 3] {
        return Ok(Vec::new());
    }
    let mut query = sqlx::query_as(statement(present));
    if present[0] {
        query = runs::bind_begins(query, &begins);
    }
    if present[1] {
        query = runs::bind_appends(query, &appends);
    }
    if present[2] {
        query = sessions::bind_writes(query, &sessions);
    }
    let mut begun = HashSet::new();
    let mut held = HashMap::new();
    let mut found = HashSet::new();
    for (kind, id, session, first) in query.fetch_all(&mut *conn).await? {
        match (kind.as_str(), session, first) {
            ("begin", Some(session), _) => {
                begun.insert((id, session));
            }
            ("run", _, Some(first)) => {
                held.insert(id, first);
            }
            ("session", _, _) => {
                found.insert(id);
            }
            _ => {
                return Err(sqlx::Error::Protocol(format!(
                    "a commit answered an unknown row of kind `{kind}`"
                )));
            }
        }
    }
    Ok(writes
        .iter()
        .map(|write| match write {
            Write::Begin(begin) => {
                Written::Begin(begun.contains(&(begin.run_id.clone(), begin.session_id.clone())))
            }
            Write::Run(run) => Written::Run(held.get(run.run_id.as_str()).copied()),
            Write::Session(session) => Written::Session(found.contains(session.id.as_str())),
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::part::placeholders;
    use super::*;

    fn job(write: Write) -> Job {
        let (reply, _) = oneshot::channel();
        Job {
            write,
            reply,
            alone: false,
        }
    }

    fn run(id: &str) -> Write {
        Write::Run(RunAppend::new(
            id,
            "o",
            &[],
            crate::runs::RunStatus::Running,
        ))
    }

    fn session(id: &str) -> Write {
        Write::Session(SessionWrite::new(
            id.to_owned(),
            Vec::new(),
            SessionRow::Keep,
        ))
    }

    fn keys(jobs: &[Job]) -> Vec<Key> {
        jobs.iter().map(|job| job.write.key()).collect()
    }

    #[test]
    fn a_commits_statement_numbers_each_kinds_parameters_after_the_last() {
        assert_eq!(shift("a $1, $10::b $2", 4), "a $5, $14::b $6");
        assert_eq!(
            PARTS.map(Part::params),
            [4, 6, 11],
            "begin, append, session"
        );
        for present in [[true, true, true], [true, false, true], [false, true, true]] {
            let sql = statement(present);
            let mut used: Vec<usize> = placeholders(sql).collect();
            used.sort_unstable();
            used.dedup();
            let params: usize = (0..3)
                .filter(|&i| present[i])
                .map(|i| PARTS[i].params())
                .sum();
            assert_eq!(used, (1..=params).collect::<Vec<_>>(), "{sql}");
        }
    }

    #[test]
    fn a_commits_lock_wait_and_time_are_bounded_unless_the_url_bounds_them() {
        let plain: PgConnectOptions = "postgres://u@localhost/db".parse().unwrap();
        let named = bounded(plain.clone());
        assert_eq!(named.get_application_name(), Some(APPLICATION_NAME));
        let own = plain.clone().application_name("billing");
        assert_eq!(bounded(own).get_application_name(), Some("billing"));
        assert_eq!(
            bounded(plain).get_options(),
            Some(
                format!("-c lock_timeout={LOCK_TIMEOUT} -c statement_timeout={STATEMENT_TIMEOUT}")
                    .as_str()
            )
        );
        let own: PgConnectOptions =
            "postgres://u@localhost/db?options=-c%20lock_timeout%3D200ms%20-c%20synchronous_commit%3Doff"
                .parse()
                .unwrap();
        assert_eq!(
            bounded(own).get_options(),
            Some(
                format!(
                    "-c lock_timeout=200ms -c synchronous_commit=off -c statement_timeout={STATEMENT_TIMEOUT}"
                )
                .as_str()
            )
        );
        let both: PgConnectOptions =
            "postgres://u@localhost/db?options=-c%20statement_timeout%3D1s%20-c%20lock_timeout%3D2s"
                .parse()
                .unwrap();
        assert_eq!(
            bounded(both).get_options(),
            Some("-c statement_timeout=1s -c lock_timeout=2s")
        );
    }

    #[test]
    fn commits_run_side_by_side_only_under_a_light_load() {
        assert!(may_start(0, 0));
        assert!(
            may_start(1, 1),
            "a second commit while one write is in flight"
        );
        assert!(may_start(FLIGHTS - 1, PARALLEL_BELOW - 1));
        assert!(!may_start(FLIGHTS, 0), "never more than FLIGHTS");
        assert!(
            !may_start(1, PARALLEL_BELOW),
            "under load, writes gather for the next commit"
        );
    }

    #[test]
    fn a_batch_takes_one_write_per_key_in_order_and_skips_keys_in_flight() {
        let mut waiting: VecDeque<Job> = [run("a"), session("a"), run("a"), run("b"), run("c")]
            .into_iter()
            .map(job)
            .collect();
        let busy: HashSet<Key> = [Key::Run("c".into())].into();
        let batch = take_batch(&mut waiting, &busy, |_| false);
        assert_eq!(
            keys(&batch),
            [
                Key::Run("a".into()),
                Key::Session("a".into()),
                Key::Run("b".into())
            ]
        );
        let left: Vec<Key> = waiting.iter().map(|job| job.write.key()).collect();
        assert_eq!(left, [Key::Run("a".into()), Key::Run("c".into())]);
    }

    #[test]
    fn a_write_to_commit_alone_is_a_batch_of_its_own() {
        let mut again = job(run("a"));
        again.alone = true;
        let mut waiting: VecDeque<Job> = [job(run("x")), again, job(run("b")), job(run("s"))]
            .into_iter()
            .collect();
        let mut suspects = Suspects::default();
        suspects.add(Key::Run("s".into()));
        let taken = |waiting: &mut VecDeque<Job>| {
            keys(&take_batch(waiting, &HashSet::new(), |key| {
                suspects.contains(key)
            }))
        };
        // The others go together; it waits for a batch of its own.
        assert_eq!(
            taken(&mut waiting),
            [Key::Run("x".into()), Key::Run("b".into())]
        );
        assert_eq!(taken(&mut waiting), [Key::Run("a".into())]);
        // A suspect's write goes alone too.
        assert_eq!(taken(&mut waiting), [Key::Run("s".into())]);
        assert!(waiting.is_empty());
        let mut later: VecDeque<Job> = [run("s"), run("t"), run("u")]
            .into_iter()
            .map(job)
            .collect();
        assert_eq!(taken(&mut later), [Key::Run("s".into())]);
        assert_eq!(
            taken(&mut later),
            [Key::Run("t".into()), Key::Run("u".into())]
        );
    }

    #[test]
    fn a_write_behind_a_waiting_one_of_its_key_waits_too() {
        // b's first write is in flight; its second must not overtake anything of b.
        let mut waiting: VecDeque<Job> = [run("b"), run("b")].into_iter().map(job).collect();
        let busy: HashSet<Key> = [Key::Run("b".into())].into();
        assert!(take_batch(&mut waiting, &busy, |_| false).is_empty());
        assert_eq!(waiting.len(), 2);
        let batch = take_batch(&mut waiting, &HashSet::new(), |_| false);
        assert_eq!(batch.len(), 1);
        assert_eq!(waiting.len(), 1);
    }

    /// One write kept waiting by a lock fails alone: the batch PostgreSQL gave up is committed
    /// again write by write, so the others of its batch are stored once each (before, they all
    /// failed with it).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_write_kept_waiting_by_a_lock_fails_alone_and_the_others_of_its_batch_commit() {
        use crate::session::{PostgresSessionStore, SessionMeta, SessionStore};
        use sqlx::Connection;
        let db = mux_testkit::postgres::TestDatabase::new().await;
        let sessions = PostgresSessionStore::connect(&db.url).await.unwrap();
        let ids: Vec<String> = (0..12).map(|i| format!("s{i}")).collect();
        for id in &ids {
            let mut meta = SessionMeta::new();
            meta.id.clone_from(id);
            sessions.create(&meta).await.unwrap();
        }
        let mut holder = PgConnection::connect(&db.url).await.unwrap();
        sqlx::query("BEGIN").execute(&mut holder).await.unwrap();
        sqlx::query("SELECT id FROM mux_sessions WHERE id = 's3' FOR UPDATE")
            .execute(&mut holder)
            .await
            .unwrap();

        let options: PgConnectOptions = db.url.parse().unwrap();
        let options = bounded(options.options([("lock_timeout", "300ms")]));
        let connections = Arc::new(Connections::new(options, FLIGHTS, ACQUIRE));
        let (jobs, queue) = mpsc::channel(QUEUE);
        let write = |id: &str| {
            Write::Session(SessionWrite::new(
                id.to_owned(),
                vec![RECORD.to_owned()],
                SessionRow::Keep,
            ))
        };
        let mut answers = Vec::new();
        for id in &ids {
            let (reply, answer) = oneshot::channel();
            jobs.send(Job {
                write: write(id),
                reply,
                alone: false,
            })
            .await
            .unwrap();
            answers.push(answer);
        }
        // Every write is queued before the dispatcher starts: its first batch holds them all.
        let dispatcher = tokio::spawn(dispatch(queue, Arc::clone(&connections)));
        for (i, answer) in answers.into_iter().enumerate() {
            let answer = tokio::time::timeout(Duration::from_secs(20), answer)
                .await
                .expect("every write is answered")
                .unwrap();
            if i == 3 {
                let failure = answer.unwrap_err();
                assert!(failure.reason.contains("lock timeout"), "{failure}");
            } else {
                assert_eq!(answer.unwrap(), Written::Session(true), "s{i}");
            }
        }
        // What a commit hands the dispatcher, while the lock holds: a batch given up goes
        // back to commit each write alone; a write given up alone makes its key a suspect.
        let given_up = |ids: &[&str]| {
            ids.iter()
                .map(|id| {
                    let (reply, _) = oneshot::channel();
                    Job {
                        write: write(id),
                        reply,
                        alone: false,
                    }
                })
                .collect::<Vec<_>>()
        };
        let outcome =
            commit_and_answer(Arc::clone(&connections), given_up(&["s3", "s4"]), None).await;
        assert_eq!(
            keys(&outcome.again),
            [Key::Session("s3".into()), Key::Session("s4".into())]
        );
        assert!(outcome.again.iter().all(|job| job.alone) && outcome.suspect.is_none());
        let outcome = commit_and_answer(Arc::clone(&connections), given_up(&["s3"]), None).await;
        assert!(outcome.again.is_empty());
        assert_eq!(outcome.suspect, Some(Key::Session("s3".into())));
        sqlx::query("ROLLBACK").execute(&mut holder).await.unwrap();
        let (reply, answer) = oneshot::channel();
        jobs.send(Job {
            write: write("s3"),
            reply,
            alone: false,
        })
        .await
        .unwrap();
        assert_eq!(answer.await.unwrap().unwrap(), Written::Session(true));
        drop(jobs);
        dispatcher.await.unwrap();
        for id in &ids {
            let stored = sessions.load(id).await.unwrap().messages.len();
            assert_eq!(stored, 1, "{id} holds its one record, once");
        }
    }

    /// Runs `r0`..`r{n}` on sessions of their own, held by `a`, except `r1`, whose lease ran
    /// out and which `b` took over.
    async fn runs_with_one_lost(store: &crate::runs::PostgresRunStore, n: usize) -> Vec<String> {
        use crate::runs::RunStore;
        let ids: Vec<String> = (0..n).map(|i| format!("r{i}")).collect();
        for (i, id) in ids.iter().enumerate() {
            let lease = if i == 1 {
                Duration::from_millis(50)
            } else {
                Duration::from_secs(60)
            };
            store.begin(&format!("s{i}"), id, "a", lease).await.unwrap();
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
        store
            .claim("r1", "b", Duration::from_secs(60))
            .await
            .unwrap();
        ids
    }

    /// A session record's JSON text.
    const RECORD: &str =
        r#"{"record":"message","message":{"role":"user","content":[{"type":"text","text":"hi"}]}}"#;

    fn event(n: usize) -> Vec<serde_json::Value> {
        vec![serde_json::json!({ "n": n })]
    }

    fn json(events: &[serde_json::Value]) -> Vec<crate::runs::EventJson> {
        events.iter().map(Into::into).collect()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_run_whose_lease_was_lost_is_refused_while_the_others_in_its_batch_commit() {
        use crate::runs::RunStore;
        use crate::session::{PostgresSessionStore, SessionMeta, SessionStore};
        let db = mux_testkit::postgres::TestDatabase::new().await;
        let store = crate::runs::PostgresRunStore::connect(&db.url)
            .await
            .unwrap();
        let sessions = PostgresSessionStore::connect(&db.url).await.unwrap();
        let ids = runs_with_one_lost(&store, 6).await;
        let meta = SessionMeta::new();
        sessions.create(&meta).await.unwrap();

        // One batch: every run's append by `a`, a session's records, and a missing session's.
        let mut writes: Vec<Write> = ids
            .iter()
            .enumerate()
            .map(|(i, id)| {
                Write::Run(RunAppend::new(
                    id,
                    "a",
                    &json(&event(i)),
                    crate::runs::RunStatus::Running,
                ))
            })
            .collect();
        writes.push(Write::Session(SessionWrite::new(
            meta.id.clone(),
            vec![RECORD.to_owned(), RECORD.to_owned()],
            SessionRow::Keep,
        )));
        writes.push(Write::Session(SessionWrite::new(
            "no-such-session".to_owned(),
            vec![RECORD.to_owned()],
            SessionRow::Keep,
        )));
        let mut conn = store.pool().acquire().await.unwrap();
        let written = commit(&mut conn, &writes).await.unwrap();

        for (i, id) in ids.iter().enumerate() {
            if i == 1 {
                assert_eq!(written[i], Written::Run(None), "{id}");
                assert!(store.events_after(id, 0, 10).await.unwrap().is_empty());
                assert_eq!(store.get(id).await.unwrap().owner.as_deref(), Some("b"));
            } else {
                assert_eq!(written[i], Written::Run(Some(0)), "{id}");
                let stored = store.events_after(id, 0, 10).await.unwrap();
                assert_eq!(stored.len(), 1, "{id}");
                assert_eq!(stored[0].seq, 1);
                assert_eq!(stored[0].event, event(i)[0]);
            }
        }
        assert_eq!(written[ids.len()], Written::Session(true));
        assert_eq!(written[ids.len() + 1], Written::Session(false));
        assert_eq!(sessions.load(&meta.id).await.unwrap().messages.len(), 2);

        // Through the store, the lost run's owner gets its typed error.
        let lost = store
            .append_events("r1", "a", &event(9), None)
            .await
            .unwrap_err();
        assert!(
            matches!(lost, crate::runs::RunStoreError::LeaseLost { .. }),
            "{lost:?}"
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn every_mix_of_kinds_commits_as_one_statement_that_answers_each_write() {
        use crate::runs::{RunStatus, RunStore};
        use crate::session::{PostgresSessionStore, SessionMeta, SessionStore};
        let db = mux_testkit::postgres::TestDatabase::new().await;
        let store = crate::runs::PostgresRunStore::connect(&db.url)
            .await
            .unwrap();
        let sessions = PostgresSessionStore::connect(&db.url).await.unwrap();
        let mut conn = store.pool().acquire().await.unwrap();
        // Bit 0: a begin; bit 1: an append; bit 2: a session write.
        for mix in 1..8_usize {
            let mut writes = Vec::new();
            if mix & 1 != 0 {
                writes.push(Write::Begin(RunBegin::new(
                    &format!("b{mix}"),
                    &format!("sb{mix}"),
                    "a",
                    60_000,
                )));
            }
            if mix & 2 != 0 {
                let run = format!("r{mix}");
                store
                    .begin(&format!("sr{mix}"), &run, "a", Duration::from_secs(60))
                    .await
                    .unwrap();
                writes.push(Write::Run(RunAppend::new(
                    &run,
                    "a",
                    &json(&event(mix)),
                    RunStatus::Running,
                )));
            }
            let meta = SessionMeta::new();
            if mix & 4 != 0 {
                sessions.create(&meta).await.unwrap();
                writes.push(Write::Session(SessionWrite::new(
                    meta.id.clone(),
                    vec![RECORD.to_owned()],
                    SessionRow::Keep,
                )));
            }
            let written = commit(&mut conn, &writes).await.unwrap();
            assert_eq!(written.len(), writes.len(), "mix {mix}");
            for answer in written {
                assert!(
                    matches!(
                        answer,
                        Written::Begin(true) | Written::Run(Some(0)) | Written::Session(true)
                    ),
                    "mix {mix}: {answer:?}"
                );
            }
            if mix & 2 != 0 {
                let stored = store.events_after(&format!("r{mix}"), 0, 10).await.unwrap();
                assert_eq!(stored.len(), 1, "mix {mix}");
            }
            if mix & 4 != 0 {
                assert_eq!(sessions.load(&meta.id).await.unwrap().messages.len(), 1);
            }
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_write_the_database_refuses_fails_alone_and_the_others_of_its_batch_commit() {
        use crate::runs::RunStore;
        let db = mux_testkit::postgres::TestDatabase::new().await;
        let store = crate::runs::PostgresRunStore::connect(&db.url)
            .await
            .unwrap();
        let ids = runs_with_one_lost(&store, 5).await;
        // r2's next number is taken already (a damaged table): its insert breaks the statement.
        sqlx::query(
            "INSERT INTO mux_run_event_batches (run_id, first_seq, last_seq, events) \
             VALUES ('r2', 1, 1, '[{}]')",
        )
        .execute(store.pool())
        .await
        .unwrap();
        let mut answers = Vec::new();
        let jobs: Vec<Job> = ids
            .iter()
            .enumerate()
            .map(|(i, id)| {
                let (reply, answer) = oneshot::channel();
                answers.push(answer);
                let write = Write::Run(RunAppend::new(
                    id,
                    "a",
                    &json(&event(i)),
                    crate::runs::RunStatus::Running,
                ));
                Job {
                    write,
                    reply,
                    alone: false,
                }
            })
            .collect();
        let options = (*store.pool().connect_options()).clone();
        commit_and_answer(
            Arc::new(Connections::new(options, FLIGHTS, ACQUIRE)),
            jobs,
            None,
        )
        .await;
        for (i, answer) in answers.into_iter().enumerate() {
            let answer = answer.await.unwrap();
            match i {
                1 => assert_eq!(answer.unwrap(), Written::Run(None)),
                2 => assert!(answer.unwrap_err().reason.contains("duplicate key"), "r2"),
                _ => {
                    assert_eq!(answer.unwrap(), Written::Run(Some(0)), "r{i}");
                    assert_eq!(store.events_after(&ids[i], 0, 10).await.unwrap().len(), 1);
                }
            }
        }
        assert_eq!(store.get("r2").await.unwrap().last_seq, 0);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_batch_of_begins_inserts_each_free_run_and_refuses_a_taken_id_or_a_busy_session() {
        use crate::runs::{RunStatus, RunStore};
        let db = mux_testkit::postgres::TestDatabase::new().await;
        let store = crate::runs::PostgresRunStore::connect(&db.url)
            .await
            .unwrap();
        store
            .begin("s-busy", "r-busy", "a", Duration::from_secs(60))
            .await
            .unwrap();
        let begin =
            |run: &str, session: &str| Write::Begin(RunBegin::new(run, session, "a", 60_000));
        let writes = [
            begin("r1", "s1"),
            begin("r2", "s2"),
            // The same id as the first, on another session: taken within the batch.
            begin("r1", "s3"),
            // A session with a run in progress.
            begin("r4", "s-busy"),
            // An id taken before.
            begin("r-busy", "s5"),
        ];
        let mut conn = store.pool().acquire().await.unwrap();
        let written = commit(&mut conn, &writes).await.unwrap();
        assert_eq!(
            written,
            [true, true, false, false, false]
                .map(Written::Begin)
                .to_vec()
        );
        let r1 = store.get("r1").await.unwrap();
        assert_eq!(
            (r1.session_id.as_str(), r1.status),
            ("s1", RunStatus::Running)
        );
        assert_eq!(r1.owner.as_deref(), Some("a"));
        assert!(store.active_run("s3").await.unwrap().is_none());
        assert_eq!(store.get("r-busy").await.unwrap().session_id, "s-busy");

        // Through the store, a refused begin says why.
        let lease = Duration::from_secs(60);
        assert!(matches!(
            store.begin("s-busy", "r6", "a", lease).await,
            Err(crate::runs::RunStoreError::Busy { run_id, .. }) if run_id == "r-busy"
        ));
        assert!(matches!(
            store.begin("s7", "r1", "a", lease).await,
            Err(crate::runs::RunStoreError::Exists(id)) if id == "r1"
        ));
    }
}
