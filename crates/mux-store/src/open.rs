//! [`Store`]: the session store and the run store of one database, opened from one URL.

use std::path::Path;
use std::sync::Arc;

use crate::open_error::OpenError;
use crate::runs::{FileRunStore, MemoryRunStore, RunStore};
use crate::session::{FileSessionStore, MemorySessionStore, SessionStore};
use crate::url::{StoreUrl, redact};

/// The directory under a `file://DIR` store that holds its runs (a name no session id can
/// take: ids have no dot).
pub const FILE_RUNS_DIR: &str = ".runs";

/// The session store and the run store of one place, opened together, so sessions that
/// outlive the process cannot be configured without runs that do (a paused approval is a
/// run: without a durable run store it would be lost on restart).
///
/// ```
/// use mux_store::Store;
/// use mux_store::session::SessionMeta;
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build()?.block_on(async {
/// let dir = tempfile::tempdir()?;
/// let store = Store::open(&format!("file://{}", dir.path().display())).await?;
/// let meta = SessionMeta::new();
/// store.sessions().create(&meta).await?;
/// assert!(store.runs().active_run(&meta.id).await?.is_none());
/// assert!(Store::open("mysql://db").await.unwrap_err().to_string().contains("mysql://db"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # })?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct Store {
    url: String,
    sessions: Arc<dyn SessionStore>,
    runs: Arc<dyn RunStore>,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store").field("url", &self.url).finish()
    }
}

impl Store {
    /// Opens the sessions and the runs `url` names:
    ///
    /// | URL | sessions | runs |
    /// |---|---|---|
    /// | `memory:` | [`MemorySessionStore`] | [`MemoryRunStore`] |
    /// | `file://DIR` | [`FileSessionStore`] in `DIR` (synced) | [`FileRunStore`] in `DIR/.runs` |
    /// | `sqlite://PATH` | `SqliteSessionStore` | `SqliteRunStore`, in the same file |
    /// | `postgres://…` | `PostgresSessionStore` | `PostgresRunStore`, in the same database |
    ///
    /// Directories are created as needed. A `file://` store serves one process at a time (a
    /// second is refused: [`OpenError::Runs`] with a `Locked` fault).
    pub async fn open(url: &str) -> Result<Self, OpenError> {
        Self::open_url(&StoreUrl::parse(url)?, url).await
    }

    /// [`open`](Self::open) of a URL read already; `url` is its text, for messages.
    pub async fn open_url(parsed: &StoreUrl, url: &str) -> Result<Self, OpenError> {
        let shown = redact(url);
        let (sessions, runs): (Arc<dyn SessionStore>, Arc<dyn RunStore>) = match parsed {
            StoreUrl::Memory => (
                Arc::new(MemorySessionStore::new()),
                Arc::new(MemoryRunStore::new()),
            ),
            StoreUrl::Files(dir) => {
                create_dir(dir, &shown)?;
                let runs = FileRunStore::open(dir.join(FILE_RUNS_DIR))
                    .await
                    .map_err(runs_failed(&shown))?;
                (
                    Arc::new(FileSessionStore::new(dir).with_sync(true)),
                    Arc::new(runs),
                )
            }
            StoreUrl::Sqlite(path) => sqlite(path, &shown).await?,
            StoreUrl::Postgres(url) => postgres(url, &shown).await?,
        };
        Ok(Self {
            url: shown,
            sessions,
            runs,
        })
    }

    /// Sessions and runs in this process's memory (what `memory:` opens).
    pub fn memory() -> Self {
        Self {
            url: "memory:".to_owned(),
            sessions: Arc::new(MemorySessionStore::new()),
            runs: Arc::new(MemoryRunStore::new()),
        }
    }

    /// A store of two stores made elsewhere (a wrapped store, a pool of one's own); `url`
    /// names them in messages.
    pub fn from_parts(
        url: impl Into<String>,
        sessions: Arc<dyn SessionStore>,
        runs: Arc<dyn RunStore>,
    ) -> Self {
        Self {
            url: redact(&url.into()),
            sessions,
            runs,
        }
    }

    /// The URL it was opened from, its password masked.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The session store.
    pub fn sessions(&self) -> Arc<dyn SessionStore> {
        Arc::clone(&self.sessions)
    }

    /// The run store.
    pub fn runs(&self) -> Arc<dyn RunStore> {
        Arc::clone(&self.runs)
    }

    /// Both, as a pair.
    pub fn into_parts(self) -> (Arc<dyn SessionStore>, Arc<dyn RunStore>) {
        (self.sessions, self.runs)
    }
}

fn create_dir(dir: &Path, url: &str) -> Result<(), OpenError> {
    std::fs::create_dir_all(dir).map_err(|source| OpenError::Directory {
        url: url.to_owned(),
        dir: dir.to_owned(),
        source,
    })
}

type Pair = (Arc<dyn SessionStore>, Arc<dyn RunStore>);

/// The error of a session store that did not open at `url`.
#[cfg(any(feature = "sqlite", feature = "postgres"))]
fn sessions_failed(url: &str) -> impl FnOnce(crate::session::SessionError) -> OpenError + '_ {
    move |source| OpenError::Sessions {
        url: url.to_owned(),
        source,
    }
}

/// The error of a run store that did not open at `url`.
fn runs_failed(url: &str) -> impl FnOnce(crate::runs::RunStoreError) -> OpenError + '_ {
    move |source| OpenError::Runs {
        url: url.to_owned(),
        source,
    }
}

/// The error of a scheme whose `feature` is compiled out.
#[cfg(not(all(feature = "sqlite", feature = "postgres")))]
fn feature_off(url: &str, feature: &'static str) -> Result<Pair, OpenError> {
    Err(OpenError::FeatureOff {
        url: url.to_owned(),
        feature,
    })
}

#[cfg(feature = "sqlite")]
async fn sqlite(path: &Path, url: &str) -> Result<Pair, OpenError> {
    use crate::runs::SqliteRunStore;
    use crate::session::SqliteSessionStore;
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        create_dir(dir, url)?;
    }
    let sessions = SqliteSessionStore::open(path)
        .await
        .map_err(sessions_failed(url))?;
    let runs = SqliteRunStore::open(path).await.map_err(runs_failed(url))?;
    Ok((Arc::new(sessions), Arc::new(runs)))
}

#[cfg(not(feature = "sqlite"))]
async fn sqlite(_: &Path, url: &str) -> Result<Pair, OpenError> {
    feature_off(url, "sqlite")
}

#[cfg(feature = "postgres")]
async fn postgres(database: &str, url: &str) -> Result<Pair, OpenError> {
    use crate::runs::PostgresRunStore;
    use crate::session::PostgresSessionStore;
    let sessions = PostgresSessionStore::connect(database)
        .await
        .map_err(sessions_failed(url))?;
    let runs = PostgresRunStore::connect(database)
        .await
        .map_err(runs_failed(url))?;
    Ok((Arc::new(sessions), Arc::new(runs)))
}

#[cfg(not(feature = "postgres"))]
async fn postgres(_: &str, url: &str) -> Result<Pair, OpenError> {
    feature_off(url, "postgres")
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[tokio::test]
    async fn memory_and_files_open_and_a_second_file_store_is_refused() {
        let memory = Store::open("memory:").await.unwrap();
        assert_eq!(memory.url(), "memory:");
        let dir = tempfile::tempdir().unwrap();
        let url = format!("file://{}", dir.path().join("deep/er").display());
        let files = Store::open(&url).await.unwrap();
        assert!(dir.path().join("deep/er").join(FILE_RUNS_DIR).is_dir());
        let second = Store::open(&url).await.unwrap_err();
        assert!(matches!(second, OpenError::Runs { .. }), "{second:?}");
        assert!(second.to_string().contains(&url), "{second}");
        drop(files);
        Store::open(&url).await.unwrap();
    }

    #[tokio::test]
    async fn a_scheme_compiled_out_names_its_feature() {
        for (url, feature, compiled) in [
            ("sqlite://x.db", "sqlite", cfg!(feature = "sqlite")),
            (
                "postgres://u:pw@h/d",
                "postgres",
                cfg!(feature = "postgres"),
            ),
        ] {
            if compiled {
                continue;
            }
            let err = Store::open(url).await.unwrap_err();
            assert!(
                matches!(&err, OpenError::FeatureOff { feature: f, .. } if *f == feature),
                "{err:?}"
            );
            assert!(err.to_string().contains(feature), "{err}");
            assert!(!err.to_string().contains("pw@"), "{err}");
        }
    }

    #[tokio::test]
    async fn a_directory_that_cannot_be_made_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a-file");
        std::fs::write(&file, "").unwrap();
        let url = format!("file://{}", file.join("below").display());
        let err = Store::open(&url).await.unwrap_err();
        assert!(matches!(err, OpenError::Directory { .. }), "{err:?}");
        assert!(err.to_string().contains(&url), "{err}");
    }
}
