//! [`FileTokenStore`]: OAuth credentials as one JSON file per server in a directory, so they
//! survive restarts.

use std::fs;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use mux_tool::BoxFuture;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::token_store::{StoredCredentials, TokenStore, TokenStoreError};

/// The format version written into every token file.
const FORMAT_VERSION: u32 = 1;
/// The largest token file read; credentials are a few kilobytes.
const MAX_FILE_BYTES: u64 = 1024 * 1024;

/// Tells concurrent writers' temporary files apart within this process.
static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// What a token file holds.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct TokenFile {
    version: u32,
    server_url: String,
    credentials: StoredCredentials,
}

/// OAuth credentials in a directory, one JSON file per server, named by the SHA-256 of the
/// server URL (`<hex>.json`), so the URL is not in the name. Files are replaced atomically
/// (a temporary file renamed over the old one). On unix the files are created with mode
/// `0600` and a missing directory with `0700`; an existing directory is left as it is.
///
/// The directory is created on the first save. A token file that cannot be read or parsed
/// is a [`TokenStoreError`] naming the file, never its content.
///
/// ```
/// use std::sync::Arc;
/// let store = Arc::new(mux_mcp::FileTokenStore::new("/home/me/.config/myapp/mcp-tokens"));
/// let oauth = mux_mcp::OAuthSpec::new("http://127.0.0.1:8976/callback").with_token_store(store);
/// # let _ = oauth;
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileTokenStore {
    dir: PathBuf,
}

impl FileTokenStore {
    /// A store in `dir`. Nothing is touched until the first load or save.
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into() }
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The file holding the credentials of `server_url` (the URL exactly as configured).
    pub fn path_for(&self, server_url: &str) -> PathBuf {
        let digest = Sha256::digest(server_url.as_bytes());
        let name: String = digest.iter().map(|byte| format!("{byte:02x}")).collect();
        self.dir.join(format!("{name}.json"))
    }
}

/// Why a JSON text could not be read, without quoting it (serde's messages may quote values).
fn json_problem(err: &serde_json::Error) -> String {
    let what = match err.classify() {
        serde_json::error::Category::Io => "unreadable",
        serde_json::error::Category::Syntax => "not valid JSON",
        serde_json::error::Category::Data => "not the expected credentials structure",
        serde_json::error::Category::Eof => "truncated JSON",
    };
    format!("{what} at line {} column {}", err.line(), err.column())
}

fn load_file(path: &Path, server_url: &str) -> Result<Option<StoredCredentials>, TokenStoreError> {
    let read_error = |err: io::Error| TokenStoreError::Read {
        path: path.to_path_buf(),
        reason: err.to_string(),
    };
    let corrupt = |reason: String| TokenStoreError::Corrupt {
        path: path.to_path_buf(),
        reason,
    };
    let file = match fs::File::open(path) {
        Ok(file) => file,
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(err) => return Err(read_error(err)),
    };
    let mut bytes = Vec::new();
    file.take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(read_error)?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(corrupt(format!("larger than {MAX_FILE_BYTES} bytes")));
    }
    let stored: TokenFile =
        serde_json::from_slice(&bytes).map_err(|err| corrupt(json_problem(&err)))?;
    if stored.version != FORMAT_VERSION {
        return Err(corrupt(format!(
            "format version {} is not the supported {FORMAT_VERSION}",
            stored.version
        )));
    }
    if stored.server_url != server_url {
        return Err(corrupt("it was written for another server URL".to_string()));
    }
    Ok(Some(stored.credentials))
}

/// Creates `dir` (and missing parents) with mode `0700` on unix.
fn create_dir(dir: &Path) -> io::Result<()> {
    let mut builder = fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir)
}

/// Writes `bytes` to a new temporary file (mode `0600` on unix) next to `path`, then renames
/// it over `path`.
fn write_atomically(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    create_dir(dir)?;
    let name = path
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
    let temp = dir.join(format!(
        ".{name}.{}.{}.tmp",
        std::process::id(),
        TEMP_COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    let mut options = fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let written = options.open(&temp).and_then(|mut file| {
        file.write_all(bytes)?;
        file.sync_all()?;
        drop(file);
        fs::rename(&temp, path)
    });
    if written.is_err() {
        let _ = fs::remove_file(&temp);
    }
    written
}

fn save_file(
    path: &Path,
    server_url: &str,
    credentials: StoredCredentials,
) -> Result<(), TokenStoreError> {
    let write_error = |reason: String| TokenStoreError::Write {
        path: path.to_path_buf(),
        reason,
    };
    let file = TokenFile {
        version: FORMAT_VERSION,
        server_url: server_url.to_string(),
        credentials,
    };
    let bytes = serde_json::to_vec_pretty(&file).map_err(|err| write_error(json_problem(&err)))?;
    write_atomically(path, &bytes).map_err(|err| write_error(err.to_string()))
}

fn clear_file(path: &Path) -> Result<(), TokenStoreError> {
    match fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(err) => Err(TokenStoreError::Write {
            path: path.to_path_buf(),
            reason: err.to_string(),
        }),
    }
}

/// Runs blocking file work off the async threads.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, TokenStoreError> + Send + 'static,
) -> Result<T, TokenStoreError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|err| TokenStoreError::Backend {
            reason: format!("the token file task did not finish: {err}"),
        })?
}

impl TokenStore for FileTokenStore {
    fn load<'a>(
        &'a self,
        server_url: &'a str,
    ) -> BoxFuture<'a, Result<Option<StoredCredentials>, TokenStoreError>> {
        let path = self.path_for(server_url);
        let url = server_url.to_string();
        Box::pin(blocking(move || load_file(&path, &url)))
    }

    fn save<'a>(
        &'a self,
        server_url: &'a str,
        credentials: StoredCredentials,
    ) -> BoxFuture<'a, Result<(), TokenStoreError>> {
        let path = self.path_for(server_url);
        let url = server_url.to_string();
        Box::pin(blocking(move || save_file(&path, &url, credentials)))
    }

    fn clear<'a>(&'a self, server_url: &'a str) -> BoxFuture<'a, Result<(), TokenStoreError>> {
        let path = self.path_for(server_url);
        Box::pin(blocking(move || clear_file(&path)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const URL: &str = "https://mcp.example.com/mcp?key=abc";
    const SECRET: &str = "access-token-text-9f8e";

    fn credentials() -> StoredCredentials {
        let tokens = serde_json::from_value(serde_json::json!({
            "access_token": SECRET,
            "token_type": "Bearer",
            "expires_in": 3600,
            "refresh_token": "refresh-token-text-1a2b",
        }))
        .unwrap();
        StoredCredentials::new(
            "client-123".into(),
            Some(tokens),
            vec!["files:read".into()],
            Some(1_700_000_000),
        )
    }

    #[tokio::test]
    async fn credentials_round_trip_and_clear() {
        let dir = tempfile::tempdir().unwrap();
        let store = FileTokenStore::new(dir.path().join("nested/tokens"));
        assert!(store.load(URL).await.unwrap().is_none());
        store.save(URL, credentials()).await.unwrap();
        let loaded = store.load(URL).await.unwrap().unwrap();
        assert_eq!(loaded.client_id, "client-123");
        assert_eq!(loaded.granted_scopes, ["files:read"]);
        assert_eq!(loaded.token_received_at, Some(1_700_000_000));
        let tokens = serde_json::to_value(loaded.token_response.unwrap()).unwrap();
        assert_eq!(tokens["access_token"], SECRET);
        assert_eq!(tokens["refresh_token"], "refresh-token-text-1a2b");
        assert!(
            store
                .load("https://other.example.com/mcp")
                .await
                .unwrap()
                .is_none()
        );

        // Saving again replaces the file and leaves no temporary file behind.
        store.save(URL, credentials()).await.unwrap();
        let names: Vec<_> = fs::read_dir(store.dir()).unwrap().collect();
        assert_eq!(names.len(), 1);

        store.clear(URL).await.unwrap();
        assert!(!store.path_for(URL).exists());
        assert!(store.load(URL).await.unwrap().is_none());
        store.clear(URL).await.unwrap();
    }

    #[test]
    fn file_names_hash_the_url() {
        let store = FileTokenStore::new("/tokens");
        let path = store.path_for(URL);
        let name = path.file_name().unwrap().to_str().unwrap();
        assert_eq!(name.len(), 64 + ".json".len(), "{name}");
        assert!(!name.contains("example"), "{name}");
        assert_eq!(path, store.path_for(URL));
        assert_ne!(path, store.path_for("https://mcp.example.com/mcp"));
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn files_are_private() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let store = FileTokenStore::new(dir.path().join("tokens"));
        store.save(URL, credentials()).await.unwrap();
        let mode = |path: &Path| fs::metadata(path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&store.path_for(URL)), 0o600);
        assert_eq!(mode(store.dir()), 0o700);
    }

    #[tokio::test]
    async fn bad_files_are_typed_errors_without_their_content() {
        let dir = tempfile::tempdir().unwrap();
        let store = FileTokenStore::new(dir.path());
        let path = store.path_for(URL);
        let wrong_type = format!(
            r#"{{"version": 1, "serverUrl": "{URL}", "credentials": {{"client_id": "c", "token_received_at": "{SECRET}"}}}}"#
        );
        let other_server = format!(
            r#"{{"version": 1, "serverUrl": "https://else/mcp", "credentials": {{"client_id": "{SECRET}"}}}}"#
        );
        for content in [
            format!("{{\"access_token\": \"{SECRET}"),
            wrong_type,
            other_server,
            format!("{SECRET} not json"),
        ] {
            fs::write(&path, &content).unwrap();
            let err = store.load(URL).await.unwrap_err();
            let TokenStoreError::Corrupt { path: named, .. } = &err else {
                panic!("{content}: {err:?}");
            };
            assert_eq!(named, &path);
            let shown = format!("{err} {err:?}");
            assert!(!shown.contains(SECRET), "{shown}");
            assert!(shown.contains(&path.display().to_string()), "{shown}");
        }
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn an_unwritable_directory_is_a_write_error() {
        let dir = tempfile::tempdir().unwrap();
        let blocker = dir.path().join("file");
        fs::write(&blocker, "x").unwrap();
        let store = FileTokenStore::new(blocker.join("tokens"));
        let err = store.save(URL, credentials()).await.unwrap_err();
        assert!(matches!(err, TokenStoreError::Write { .. }), "{err:?}");
        assert!(!format!("{err}").contains(SECRET));
    }
}
