//! The sessions of one connection: each an orchestrator conversation with its own session
//! permission scope, cancel handle and MCP servers.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use agent_client_protocol::v1::schema::{ClientCapabilities, McpServer, SessionUpdate};
use mux_mcp::ServerSpec;
use mux_orchestrator::session::{PageCursor, SessionError, SessionMeta};
use mux_orchestrator::{LoopError, McpServers, Orchestrator};
use mux_permission::{Mode, Permissions, Remember, Rule, RuleKind, Scope};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::AcpError;
use agent_client_protocol::Client;
use agent_client_protocol::v1::ConnectionTo;
use mux_tool::builtin::DelegatedFiles;

use crate::agent::{AcpAgent, SessionSetup};
use crate::editor_files::EditorFiles;

/// Where the session's working directory is kept in the store's metadata.
const CWD_KEY: &str = "acp_cwd";

/// Sessions per `session/list` page.
const LIST_PAGE: usize = 100;

/// A `session/list` cursor (`updated_at_ms:id`).
fn parse_cursor(cursor: &str) -> Result<PageCursor, AcpError> {
    let bad = || AcpError::BadCursor(cursor.to_owned());
    let (updated, id) = cursor.split_once(':').ok_or_else(bad)?;
    Ok(PageCursor {
        updated_at_ms: updated.parse().map_err(|_| bad())?,
        id: id.to_owned(),
    })
}

/// The sessions of one connection.
pub(crate) struct Sessions {
    agent: AcpAgent,
    client: Mutex<ClientCapabilities>,
    open: Mutex<HashMap<String, Arc<Session>>>,
}

/// One ACP session.
pub(crate) struct Session {
    id: String,
    pub(crate) orchestrator: Orchestrator,
    permissions: Permissions,
    pub(crate) cwd: PathBuf,
    pub(crate) context_window: u64,
    /// Where `allow_always` answers go.
    pub(crate) always: Remember,
    mcp_failures: Vec<(String, String)>,
    run: Mutex<Option<CancellationToken>>,
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Sessions {
    pub(crate) fn new(agent: AcpAgent) -> Self {
        Self {
            agent,
            client: Mutex::new(ClientCapabilities::new()),
            open: Mutex::new(HashMap::new()),
        }
    }

    pub(crate) fn agent(&self) -> &AcpAgent {
        &self.agent
    }

    pub(crate) fn set_client_capabilities(&self, capabilities: ClientCapabilities) {
        *lock(&self.client) = capabilities;
    }

    /// Opens a session in `cwd`: a new one, or `load` from the store.
    pub(crate) async fn open(
        &self,
        cwd: PathBuf,
        mcp_servers: &[McpServer],
        load: Option<&str>,
        cx: &ConnectionTo<Client>,
    ) -> Result<Arc<Session>, AcpError> {
        let store = self.agent.store.clone();
        if load.is_some() && store.is_none() {
            return Err(AcpError::NoSessionStore);
        }
        let setup = SessionSetup { cwd: cwd.clone() };
        let mut builder = self
            .agent
            .factory
            .session(&setup)
            .map_err(AcpError::Setup)?;
        // The conversation's session scope, where modes and "always" answers go. Without a
        // policy, the default every face shares (`Permissions::unset`): read-only tools run,
        // the rest asks the editor.
        let permissions = builder.policy_for_face();
        // The face's own resources, in the conversation's layer.
        let resources = builder.current_resources().clone();
        if let Some(store) = store.clone() {
            builder = builder.stored_in(store);
        }
        let (specs, mut mcp_failures) = server_specs(mcp_servers, &cwd);
        if !specs.is_empty() && builder.current_mcp().is_some() {
            // One MCP link per conversation: the agent's own servers stay.
            mcp_failures.extend(specs.iter().map(|spec| {
                (
                    spec.name.clone(),
                    "this agent has MCP servers of its own; the editor's are not added".to_owned(),
                )
            }));
        } else if !specs.is_empty() {
            match McpServers::start(specs, self.agent.mcp.clone()).await {
                Ok(servers) => {
                    mcp_failures.extend(servers.report().failed.iter().cloned());
                    builder = builder.face_mcp_servers(servers);
                }
                Err(err) => mcp_failures.push(("mcpServers".to_owned(), err.to_string())),
            }
        }
        let orchestrator = match load {
            Some(id) => builder.resume(id).await.map_err(|err| match err {
                LoopError::Session(SessionError::NotFound(id)) => AcpError::UnknownSession(id),
                err => err.into(),
            })?,
            None => builder.build(),
        };
        if store.is_some() {
            // Saved now, so `session/list` shows it before its first prompt.
            orchestrator
                .set_session_extra(CWD_KEY, Value::String(cwd.display().to_string()))
                .await?;
        }
        let fs = lock(&self.client).fs.clone();
        if fs.read_text_file || fs.write_text_file {
            resources.insert(DelegatedFiles::new(EditorFiles {
                cx: cx.clone(),
                session: orchestrator.session().id,
                read: fs.read_text_file,
                write: fs.write_text_file,
            }));
        }
        for (server, reason) in &mcp_failures {
            tracing::warn!(target: "mux_acp", server, reason, "MCP server unavailable");
        }
        let session = Arc::new(Session {
            id: orchestrator.session().id,
            orchestrator,
            permissions,
            cwd,
            context_window: self.agent.context_window,
            always: self.agent.always.clone(),
            mcp_failures,
            run: Mutex::new(None),
        });
        let replaced = lock(&self.open).insert(session.id.clone(), Arc::clone(&session));
        if let Some(old) = replaced {
            old.cancel();
            tokio::spawn(async move { old.orchestrator.shutdown().await });
        }
        Ok(session)
    }

    pub(crate) fn get(&self, id: &str) -> Result<Arc<Session>, AcpError> {
        lock(&self.open)
            .get(id)
            .cloned()
            .ok_or_else(|| AcpError::UnknownSession(id.to_owned()))
    }

    /// A page of the stored ACP sessions with their working directories, newest first,
    /// after `cursor` (`updated_at_ms:id`, as a previous page's next cursor gave it), and the
    /// cursor of the next page.
    pub(crate) async fn list(
        &self,
        cursor: Option<&str>,
    ) -> Result<(Vec<(SessionMeta, PathBuf)>, Option<String>), AcpError> {
        let store = self.agent.store.as_ref().ok_or(AcpError::NoSessionStore)?;
        let after = cursor.map(parse_cursor).transpose()?;
        let page = store.list_page(after.as_ref(), LIST_PAGE).await?;
        let next = page
            .next
            .map(|next| format!("{}:{}", next.updated_at_ms, next.id));
        let sessions = page
            .sessions
            .into_iter()
            .filter_map(|meta| {
                let cwd = meta.extra.get(CWD_KEY)?.as_str().map(PathBuf::from)?;
                Some((meta, cwd))
            })
            .collect();
        Ok((sessions, next))
    }

    /// Cancels the session's run, if one is running.
    pub(crate) fn cancel(&self, id: &str) {
        if let Some(session) = lock(&self.open).get(id) {
            session.cancel();
        }
    }

    /// Cancels every run and stops every session (tools, processes, MCP servers).
    pub(crate) async fn shutdown_all(&self) {
        let sessions: Vec<_> = lock(&self.open).drain().map(|(_, s)| s).collect();
        for session in &sessions {
            session.cancel();
        }
        futures::future::join_all(sessions.iter().map(|s| s.orchestrator.shutdown())).await;
    }
}

impl Session {
    pub(crate) fn id(&self) -> &str {
        &self.id
    }

    pub(crate) fn mode(&self) -> Mode {
        self.permissions.mode()
    }

    pub(crate) fn mcp_failures(&self) -> &[(String, String)] {
        &self.mcp_failures
    }

    /// Sets the session's permission mode (in its session scope).
    pub(crate) fn set_mode(&self, mode: Mode) -> Result<(), AcpError> {
        let scope = self
            .permissions
            .scope(Scope::Session)
            .ok_or(AcpError::NoSessionScope)?;
        scope.set_mode(Some(mode));
        Ok(())
    }

    /// "Reject always": a deny rule for the tool in the session scope.
    pub(crate) fn deny_tool(&self, tool: &str) {
        if let (Some(scope), Ok(rule)) = (self.permissions.scope(Scope::Session), Rule::parse(tool))
        {
            scope.add(RuleKind::Deny, rule);
        }
    }

    /// The session's messages as `session/update`s.
    pub(crate) fn replay(&self) -> Vec<SessionUpdate> {
        crate::replay::replay(
            &self.orchestrator.messages(),
            &self.cwd,
            self.orchestrator.tools(),
        )
    }

    pub(crate) fn begin_run(&self, cancel: CancellationToken) {
        *lock(&self.run) = Some(cancel);
    }

    pub(crate) fn end_run(&self) {
        *lock(&self.run) = None;
    }

    pub(crate) fn cancel(&self) {
        if let Some(token) = lock(&self.run).as_ref() {
            token.cancel();
        }
    }

    pub(crate) fn root(&self) -> &Path {
        &self.cwd
    }
}

/// The editor's MCP servers as mux specs (stdio servers start in the session's cwd); SSE
/// servers, which this agent does not advertise, are reported as failed.
fn server_specs(servers: &[McpServer], cwd: &Path) -> (Vec<ServerSpec>, Vec<(String, String)>) {
    let mut specs = Vec::new();
    let mut failed = Vec::new();
    for server in servers {
        match server {
            McpServer::Stdio(stdio) => {
                let mut spec = ServerSpec::stdio(
                    stdio.name.clone(),
                    stdio.command.display().to_string(),
                    stdio.args.clone(),
                )
                .with_cwd(cwd);
                for var in &stdio.env {
                    spec = spec.with_env(var.name.clone(), var.value.clone());
                }
                specs.push(spec);
            }
            McpServer::Http(http) => {
                let mut spec = ServerSpec::http(http.name.clone(), http.url.clone());
                for header in &http.headers {
                    spec = spec.with_header(header.name.clone(), header.value.clone());
                }
                specs.push(spec);
            }
            McpServer::Sse(sse) => failed.push((
                sse.name.clone(),
                "SSE transport is not supported; use stdio or http".to_owned(),
            )),
            _ => failed.push(("mcpServers".to_owned(), "unknown MCP transport".to_owned())),
        }
    }
    (specs, failed)
}
