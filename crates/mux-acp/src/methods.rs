//! The ACP methods: one handler per request, each a few lines over [`Sessions`].

use std::path::{Path, PathBuf};
use std::sync::Arc;

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    AgentCapabilities, AuthMethod, AuthMethodAgent, AuthenticateRequest, AuthenticateResponse,
    CancelNotification, CurrentModeUpdate, Implementation, InitializeRequest, InitializeResponse,
    ListSessionsRequest, ListSessionsResponse, LoadSessionRequest, LoadSessionResponse,
    McpCapabilities, NewSessionRequest, NewSessionResponse, PromptCapabilities, PromptRequest,
    PromptResponse, SessionCapabilities, SessionInfo, SessionListCapabilities, SessionModeId,
    SessionNotification, SessionUpdate, SetSessionModeRequest, SetSessionModeResponse,
};
use agent_client_protocol::{Agent, Client, on_receive_notification, on_receive_request};

use crate::sessions::Sessions;
use crate::{AcpError, modes, run};

fn respond<T: agent_client_protocol::JsonRpcResponse>(
    responder: agent_client_protocol::v1::Responder<T>,
    result: Result<T, AcpError>,
) -> Result<(), agent_client_protocol::Error> {
    match result {
        Ok(response) => responder.respond(response),
        Err(err) => {
            tracing::debug!(target: "mux_acp", error = %err, "request failed");
            responder.respond_with_error(err.to_rpc())
        }
    }
}

pub(crate) fn builder(
    sessions: &Arc<Sessions>,
    name: String,
) -> agent_client_protocol::v1::Builder<Agent, impl agent_client_protocol::HandleDispatchFrom<Client>>
{
    let (s_init, s_auth, s_new, s_load, s_list, s_mode, s_prompt, s_cancel) = (
        Arc::clone(sessions),
        Arc::clone(sessions),
        Arc::clone(sessions),
        Arc::clone(sessions),
        Arc::clone(sessions),
        Arc::clone(sessions),
        Arc::clone(sessions),
        Arc::clone(sessions),
    );
    Agent
        .v1()
        .name(name)
        .on_receive_request(
            async move |request: InitializeRequest, responder, _cx| {
                respond(responder, Ok(initialize(&s_init, request)))
            },
            on_receive_request!(),
        )
        .on_receive_request(
            async move |request: AuthenticateRequest, responder, _cx| {
                respond(responder, authenticate(&s_auth, &request))
            },
            on_receive_request!(),
        )
        .on_receive_request(
            async move |request: NewSessionRequest, responder, cx: ConnectionTo<Client>| {
                let sessions = Arc::clone(&s_new);
                // Starting MCP servers takes a while: off the dispatch loop.
                tokio::spawn(async move {
                    let (result, after) = match new_session(&sessions, request, &cx).await {
                        Ok((response, after)) => (Ok(response), after),
                        Err(err) => (Err(err), Vec::new()),
                    };
                    let _ = respond(responder, result);
                    // What the client can only place once it knows the session id.
                    for notification in after {
                        let _ = cx.send_notification(notification);
                    }
                });
                Ok(())
            },
            on_receive_request!(),
        )
        .on_receive_request(
            async move |request: LoadSessionRequest, responder, cx: ConnectionTo<Client>| {
                let sessions = Arc::clone(&s_load);
                tokio::spawn(async move {
                    let result = load_session(&sessions, request, &cx).await;
                    let _ = respond(responder, result);
                });
                Ok(())
            },
            on_receive_request!(),
        )
        .on_receive_request(
            async move |request: ListSessionsRequest, responder, _cx| {
                let sessions = Arc::clone(&s_list);
                tokio::spawn(async move {
                    let _ = respond(responder, list_sessions(&sessions, request).await);
                });
                Ok(())
            },
            on_receive_request!(),
        )
        .on_receive_request(
            async move |request: SetSessionModeRequest, responder, cx: ConnectionTo<Client>| {
                respond(responder, set_mode(&s_mode, &request, &cx))
            },
            on_receive_request!(),
        )
        .on_receive_request(
            async move |request: PromptRequest, responder, cx: ConnectionTo<Client>| {
                let sessions = Arc::clone(&s_prompt);
                tokio::spawn(async move {
                    let result = prompt(&sessions, request, cx).await;
                    let _ = respond(responder, result);
                });
                Ok(())
            },
            on_receive_request!(),
        )
        .on_receive_notification(
            async move |notification: CancelNotification, _cx| {
                s_cancel.cancel(&notification.session_id.0);
                Ok(())
            },
            on_receive_notification!(),
        )
}

fn initialize(sessions: &Sessions, request: InitializeRequest) -> InitializeResponse {
    let agent = sessions.agent();
    sessions.set_client_capabilities(request.client_capabilities);
    let mut session_capabilities = SessionCapabilities::new();
    if agent.store.is_some() {
        session_capabilities = session_capabilities.list(SessionListCapabilities::new());
    }
    let capabilities = AgentCapabilities::new()
        .load_session(agent.store.is_some())
        .prompt_capabilities(
            PromptCapabilities::new()
                .image(true)
                .audio(false)
                .embedded_context(true),
        )
        .mcp_capabilities(McpCapabilities::new().http(true).sse(false))
        .session_capabilities(session_capabilities);
    let auth_methods = agent
        .env_keys
        .iter()
        .map(|key| {
            AuthMethod::Agent(
                AuthMethodAgent::new(key.id.clone(), key.name.clone())
                    .description(format!("Set {} in the agent's environment", key.variable)),
            )
        })
        .collect();
    // This agent speaks protocol v1 whatever version the client asked for; a client that
    // cannot speak v1 closes the connection, as the spec has it.
    InitializeResponse::new(ProtocolVersion::V1)
        .agent_capabilities(capabilities)
        .auth_methods(auth_methods)
        .agent_info(Implementation::new(
            agent.name.clone(),
            agent.version.clone(),
        ))
}

fn authenticate(
    sessions: &Sessions,
    request: &AuthenticateRequest,
) -> Result<AuthenticateResponse, AcpError> {
    let id = request.method_id.0.as_ref();
    let key = sessions
        .agent()
        .env_keys
        .iter()
        .find(|key| key.id == id)
        .ok_or_else(|| AcpError::UnknownAuthMethod(id.to_owned()))?;
    match std::env::var_os(&key.variable) {
        Some(value) if !value.is_empty() => Ok(AuthenticateResponse::new()),
        _ => Err(AcpError::MissingKey(key.variable.clone())),
    }
}

/// The session root for the client's `cwd`, or why it is refused.
fn session_root(sessions: &Sessions, cwd: &Path) -> Result<PathBuf, AcpError> {
    crate::roots::session_root(cwd, sessions.agent().allow_broad_roots).map_err(|refusal| {
        AcpError::Cwd {
            cwd: cwd.display().to_string(),
            refusal,
        }
    })
}

async fn new_session(
    sessions: &Sessions,
    request: NewSessionRequest,
    cx: &ConnectionTo<Client>,
) -> Result<(NewSessionResponse, Vec<SessionNotification>), AcpError> {
    let cwd = session_root(sessions, &request.cwd)?;
    let session = sessions.open(cwd, &request.mcp_servers, None, cx).await?;
    let id = session.id().to_owned();
    // A server that failed is said once, as the first thing the session shows; it goes on
    // without that server's tools.
    let mut after: Vec<_> = session
        .mcp_failures()
        .iter()
        .map(|(server, reason)| {
            run::message(
                &id,
                format!("MCP server `{server}` is unavailable: {reason}\n"),
            )
        })
        .collect();
    after.extend(commands_update(sessions, &id));
    let response = NewSessionResponse::new(id).modes(modes::state(session.mode()));
    Ok((response, after))
}

/// The slash commands, if the agent has any.
fn commands_update(sessions: &Sessions, id: &str) -> Option<SessionNotification> {
    let commands = &sessions.agent().commands;
    (!commands.is_empty())
        .then(|| SessionNotification::new(id.to_owned(), crate::commands::update(commands)))
}

async fn load_session(
    sessions: &Sessions,
    request: LoadSessionRequest,
    cx: &ConnectionTo<Client>,
) -> Result<LoadSessionResponse, AcpError> {
    let cwd = session_root(sessions, &request.cwd)?;
    let id = request.session_id.0.to_string();
    let session = sessions
        .open(cwd, &request.mcp_servers, Some(id.as_str()), cx)
        .await?;
    // The whole conversation first, as the spec requires, then the answer.
    for update in session.replay() {
        cx.send_notification(SessionNotification::new(id.clone(), update))?;
    }
    if let Some(update) = commands_update(sessions, &id) {
        cx.send_notification(update)?;
    }
    Ok(LoadSessionResponse::new().modes(modes::state(session.mode())))
}

async fn list_sessions(
    sessions: &Sessions,
    request: ListSessionsRequest,
) -> Result<ListSessionsResponse, AcpError> {
    let (listed, next) = sessions.list(request.cursor.as_deref()).await?;
    // Sessions keep their resolved root: the filter matches the client's spelling or its
    // resolution.
    let wanted = request
        .cwd
        .map(|cwd| (std::fs::canonicalize(&cwd).ok(), cwd));
    let infos = listed
        .into_iter()
        .filter(|(_, cwd)| {
            wanted.as_ref().is_none_or(|(resolved, given)| {
                given == cwd || resolved.as_ref().is_some_and(|r| r == cwd)
            })
        })
        .map(|(meta, cwd)| {
            SessionInfo::new(meta.id, cwd)
                .title(meta.title)
                .updated_at(crate::time::rfc3339(meta.updated_at_ms))
        })
        .collect();
    Ok(ListSessionsResponse::new(infos).next_cursor(next))
}

fn set_mode(
    sessions: &Sessions,
    request: &SetSessionModeRequest,
    cx: &ConnectionTo<Client>,
) -> Result<SetSessionModeResponse, AcpError> {
    let id = request.session_id.0.as_ref();
    let mode_id = request.mode_id.0.as_ref();
    let mode = modes::mode_of(mode_id).ok_or_else(|| AcpError::UnknownMode(mode_id.to_owned()))?;
    sessions.get(id)?.set_mode(mode)?;
    cx.send_notification(SessionNotification::new(
        id.to_owned(),
        SessionUpdate::CurrentModeUpdate(CurrentModeUpdate::new(SessionModeId::new(mode_id))),
    ))?;
    Ok(SetSessionModeResponse::new())
}

async fn prompt(
    sessions: &Sessions,
    request: PromptRequest,
    cx: ConnectionTo<Client>,
) -> Result<PromptResponse, AcpError> {
    let session = sessions.get(&request.session_id.0)?;
    let mut prompt = crate::prompt::read_prompt(&request.prompt)?;
    prompt.text = crate::commands::expand(&sessions.agent().commands, prompt.text);
    let stop = run::run_prompt(session, prompt, cx).await?;
    Ok(PromptResponse::new(stop))
}
