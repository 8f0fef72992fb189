//! A commit whose answer never came: the connection hung (a network that drops packets
//! without a reset, a server process stopped), broke, or the server crashed. The commit may
//! have landed or not, and may still land while its server process lives.
//!
//! - **Bounded wait.** A commit waits for its answer at most twice the connection's
//!   `statement_timeout` (`crate::store_bound`), since PostgreSQL gives a statement up after
//!   one.
//! - **Fence.** The connection is dropped and its server process stopped
//!   (`pg_terminate_backend`, from another connection); once `pg_stat_activity` no longer shows
//!   it (matched by pid and start, as pids are reused), nothing of it can commit any more.
//! - **Read back.** Then each write's outcome is read: a session's write by the token its row
//!   keeps (`last_write`), a run's begin by its row. One that landed gets its answer; one that
//!   did not is queued again, so its caller sees neither an error nor a copy. A run's append
//!   gets an error: its writer reads the run, now settled, and knows (`RunWriter`).
//! - **Unsettled.** A server process that does not stop within [`FENCE_FOR`] (stopped
//!   itself), or a database that cannot be reached, leaves its writes unsettled: their callers get the error, and the
//!   next write to each key settles the earlier one first, or fails the same way. A session's
//!   write found to have landed is then not written again: the next write, its caller's retry,
//!   skips the records it begins with.

use std::time::Duration;

use super::job::{Failure, Job, Key, Write, Written};
use super::sessions::SessionRow;
use crate::pg_connections::{Backend, Connections};

/// How long a commit's server process has to stop once its answer was given up.
pub(super) const FENCE_FOR: Duration = Duration::from_secs(5);
/// How often `pg_stat_activity` is read while a server process stops.
const LOOK_EVERY: Duration = Duration::from_millis(50);

/// What a commit hands back to the dispatcher: the writes of a batch PostgreSQL gave up, to
/// commit again each alone (or of a commit whose answer was lost, which did not land), the
/// key of a write that was given up alone, and the writes whose outcome is not known yet.
#[derive(Default)]
pub(super) struct Outcome {
    pub(super) again: Vec<Job>,
    pub(super) suspect: Option<Key>,
    pub(super) unsettled: Vec<Unsettled>,
}

/// Whether `err`, met by a commit after its statement was sent, leaves its outcome unknown:
/// the connection failed or closed, rather than the server refusing the statement (a
/// connection-ending error, 08xxx or 57P0x, may come after the commit).
pub(super) fn answer_lost(err: &sqlx::Error) -> bool {
    match err {
        sqlx::Error::Database(db) => db
            .code()
            .is_some_and(|code| code.starts_with("08") || code.starts_with("57P0")),
        _ => true,
    }
}

/// A write whose commit went unanswered and whose server process was not seen to stop: its
/// key's next write settles it first.
pub(super) struct Unsettled {
    pub(super) backend: Backend,
    pub(super) write: Write,
}

/// What became of a write whose commit went unanswered, read once its process stopped.
#[derive(Debug, PartialEq, Eq)]
enum Landed {
    /// It landed, with this answer.
    Yes(Written),
    /// It did not.
    No,
    /// Not read here: a run's append, which its writer reads back.
    ForTheWriter,
}

/// Stops `backend` and waits until `pg_stat_activity` no longer shows it: after that, no
/// commit of its lands. Err (why) when the database cannot be reached (at once: the caller's
/// own patience with an outage decides, and the next write settles it), or the process did not
/// stop within `within`.
async fn fence(
    connections: &Connections,
    backend: &Backend,
    within: Duration,
) -> Result<(), String> {
    let gone = tokio::time::timeout(within, async {
        loop {
            match still_there(connections, backend).await {
                Ok(false) => return Ok(()),
                Ok(true) => tokio::time::sleep(LOOK_EVERY).await,
                Err(err) => return Err(format!("reaching the database: {err}")),
            }
        }
    })
    .await;
    gone.unwrap_or_else(|_| {
        Err(format!(
            "server process {} did not stop within {within:?}",
            backend.pid
        ))
    })
}

/// Asks `backend` to stop, and whether it still runs.
async fn still_there(connections: &Connections, backend: &Backend) -> Result<bool, sqlx::Error> {
    let mut conn = connections.take().await?;
    let there = sqlx::query_scalar::<_, bool>(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
         WHERE pid = $1 AND backend_start::text = $2",
    )
    .bind(backend.pid)
    .bind(&backend.started)
    .fetch_optional(&mut *conn)
    .await?
    .is_some();
    connections.put(conn);
    Ok(there)
}

/// Stops `backend` ([`fence`]) and reads what became of `writes`, its commit's; Err (why)
/// when either could not be done.
async fn fence_and_read(
    connections: &Connections,
    backend: &Backend,
    writes: &[&Write],
) -> Result<Vec<Landed>, String> {
    fence(connections, backend, FENCE_FOR).await?;
    read(connections, writes)
        .await
        .map_err(|err| err.to_string())
}

/// Reads what became of `writes`, whose commit's process has stopped.
async fn read(connections: &Connections, writes: &[&Write]) -> Result<Vec<Landed>, sqlx::Error> {
    let mut sessions = Vec::new();
    let mut runs = Vec::new();
    for write in writes {
        match write {
            Write::Session(session) => sessions.push(session.id.as_str()),
            Write::Begin(begin) => runs.push(begin.run_id.as_str()),
            Write::Run(_) => {}
        }
    }
    let mut tokens: Vec<(String, Option<String>)> = Vec::new();
    let mut begun: Vec<(String, String)> = Vec::new();
    if !sessions.is_empty() || !runs.is_empty() {
        let mut conn = connections.take().await?;
        if !sessions.is_empty() {
            tokens = sqlx::query_as("SELECT id, last_write FROM mux_sessions WHERE id = ANY($1)")
                .bind(&sessions)
                .fetch_all(&mut *conn)
                .await?;
        }
        if !runs.is_empty() {
            begun =
                sqlx::query_as("SELECT run_id, session_id FROM mux_runs WHERE run_id = ANY($1)")
                    .bind(&runs)
                    .fetch_all(&mut *conn)
                    .await?;
        }
        connections.put(conn);
    }
    Ok(writes
        .iter()
        .map(|write| match write {
            Write::Session(session) => {
                let landed = tokens.iter().any(|(id, token)| {
                    *id == session.id && token.as_deref() == Some(&*session.token)
                });
                if landed {
                    Landed::Yes(Written::Session(true))
                } else {
                    Landed::No
                }
            }
            // A run id is new to each begin: a row with it and its session is this begin's.
            Write::Begin(begin) => {
                if begun
                    .iter()
                    .any(|(run, session)| *run == begin.run_id && *session == begin.session_id)
                {
                    Landed::Yes(Written::Begin(true))
                } else {
                    Landed::No
                }
            }
            Write::Run(_) => Landed::ForTheWriter,
        })
        .collect())
}

/// Answers the writes of a commit whose answer was lost (`why`) on `backend`: those that
/// landed get their answer, those that did not go back to the dispatcher to commit again,
/// and a run's append gets an error its writer settles. When the process does not stop (or
/// the database cannot be read), each caller gets the error and each write is unsettled.
pub(super) async fn answer_lost_commit(
    connections: &Connections,
    backend: &Backend,
    jobs: Vec<Job>,
    why: &str,
) -> Outcome {
    tracing::warn!(
        "a group commit of {} writes was not answered ({why}); stopping its server process {} to read what landed",
        jobs.len(),
        backend.pid
    );
    let writes: Vec<&Write> = jobs.iter().map(|job| &job.write).collect();
    let landed = fence_and_read(connections, backend, &writes).await;
    let mut outcome = Outcome::default();
    match landed {
        Ok(landed) => {
            for (job, landed) in jobs.into_iter().zip(landed) {
                match landed {
                    Landed::Yes(written) => {
                        let _ = job.reply.send(Ok(written));
                    }
                    Landed::No => outcome.again.push(Job {
                        alone: false,
                        ..job
                    }),
                    Landed::ForTheWriter => {
                        let _ = job.reply.send(Err(Failure::unanswered(format!(
                                "the commit's answer was lost ({why}); it may have landed, and its server process has stopped, so the run tells"
                            ))));
                    }
                }
            }
        }
        Err(unknown) => {
            tracing::warn!("what a group commit wrote is not known yet: {unknown}");
            for job in jobs {
                let _ = job.reply.send(Err(Failure::unanswered(format!(
                        "the commit's answer was lost ({why}) and whether it landed is not known yet ({unknown}); the next write settles it"
                    ))));
                outcome.unsettled.push(Unsettled {
                    backend: backend.clone(),
                    write: job.write,
                });
            }
        }
    }
    outcome
}

/// Settles `earlier`, the unsettled write of `job`'s key, before `job` commits: `job` back to
/// commit (a session's write without the records the earlier one landed), or `None` when it
/// was answered here (an error while the earlier write is still unsettled, which `outcome`
/// then keeps).
pub(super) async fn settle_first(
    connections: &Connections,
    earlier: Unsettled,
    mut job: Job,
    outcome: &mut Outcome,
) -> Option<Job> {
    if matches!(
        (&earlier.write, &job.write),
        (Write::Session(_), Write::Begin(_))
    ) {
        // A run begun on the session touches none of the earlier write's rows: the session's
        // next write (its caller's retry) settles it.
        outcome.unsettled.push(earlier);
        return Some(job);
    }
    let landed = fence_and_read(connections, &earlier.backend, &[&earlier.write]).await;
    let landed = match landed {
        Ok(mut landed) => landed.pop().unwrap_or(Landed::No),
        Err(unknown) => {
            let _ = job.reply.send(Err(Failure::unanswered(format!(
                    "an earlier commit of this write's run or session went unanswered, and whether it landed is not known yet ({unknown})"
                ))));
            outcome.unsettled.push(earlier);
            return None;
        }
    };
    match (earlier.write, &mut job.write, landed) {
        // The writer of a run read it before its earlier append was settled: it reads again.
        (Write::Run(_), Write::Run(_), _) => {
            let _ = job.reply.send(Err(Failure::unanswered("an earlier append of this run went unanswered and is settled now: the run tells whether it landed".to_owned())));
            None
        }
        (Write::Session(before), Write::Session(now), Landed::Yes(_))
            if now.records.starts_with(&before.records) =>
        {
            // The caller's retry: what landed is not written again.
            now.records.drain(..before.records.len());
            if let SessionRow::Create(meta) = std::mem::replace(&mut now.row, SessionRow::Keep) {
                now.row = SessionRow::Save(meta);
            }
            if now.records.is_empty() && matches!(now.row, SessionRow::Keep) {
                let _ = job.reply.send(Ok(Written::Session(true)));
                return None;
            }
            Some(job)
        }
        _ => Some(job),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::group_commit::{RunBegin, SessionWrite};
    use tokio::sync::oneshot;

    fn job(write: Write) -> (Job, oneshot::Receiver<Result<Written, Failure>>) {
        let (reply, answer) = oneshot::channel();
        let job = Job {
            write,
            reply,
            alone: false,
        };
        (job, answer)
    }

    #[tokio::test]
    async fn a_run_begun_on_a_session_does_not_settle_its_earlier_write_which_stays_for_the_retry()
    {
        // Never connected to: a begin needs nothing settled.
        let connections = Connections::new(
            "postgres://nobody@localhost/none?host=/nonexistent"
                .parse()
                .unwrap(),
            1,
            Duration::from_millis(10),
        );
        let earlier = Unsettled {
            backend: Backend {
                pid: 1,
                started: "then".into(),
                statement_timeout: Duration::ZERO,
            },
            write: Write::Session(SessionWrite::new(
                "s".into(),
                vec!["{}".into()],
                SessionRow::Keep,
            )),
        };
        let (begin, _answer) = job(Write::Begin(RunBegin::new("r", "s", "o", 1_000)));
        let mut outcome = Outcome::default();
        let job = settle_first(&connections, earlier, begin, &mut outcome).await;
        assert!(matches!(job.map(|job| job.write), Some(Write::Begin(_))));
        assert!(matches!(
            outcome.unsettled.as_slice(),
            [Unsettled {
                write: Write::Session(_),
                ..
            }]
        ));
    }
}
