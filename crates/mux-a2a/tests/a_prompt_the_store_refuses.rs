//! A prompt the session store cannot write (it refuses writes) is not acknowledged: a message
//! on a known context is answered JSON-RPC -32000 `UNAVAILABLE` with a retry hint, and once
//! the store takes writes again the next message is answered.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use mux_a2a::{A2aConfig, A2aServer};
use mux_llm::testing::ScriptedClient;
use mux_orchestrator::session::{
    HistoryRecord, MemorySessionStore, Session, SessionError, SessionMeta, SessionStore,
};
use serde_json::json;

mod support;

use support::{agent, rpc, user};

/// The trait's boxed future.
type BoxFuture<'a, T> = std::pin::Pin<Box<dyn std::future::Future<Output = T> + Send + 'a>>;

/// A session store that refuses every write while `refuse` is set (a disk that filled): reads
/// go on.
struct Refusing {
    inner: MemorySessionStore,
    refuse: AtomicBool,
}

impl Refusing {
    fn check(&self, id: &str) -> Result<(), SessionError> {
        if self.refuse.load(Ordering::SeqCst) {
            return Err(SessionError::Io {
                id: Some(id.to_owned()),
                operation: "writing",
                source: std::io::Error::from(std::io::ErrorKind::StorageFull),
            });
        }
        Ok(())
    }
}

impl SessionStore for Refusing {
    fn create<'a>(&'a self, meta: &'a SessionMeta) -> BoxFuture<'a, Result<(), SessionError>> {
        Box::pin(async move {
            self.check(&meta.id)?;
            self.inner.create(meta).await
        })
    }

    fn save_meta<'a>(&'a self, meta: &'a SessionMeta) -> BoxFuture<'a, Result<(), SessionError>> {
        Box::pin(async move {
            self.check(&meta.id)?;
            self.inner.save_meta(meta).await
        })
    }

    fn append<'a>(
        &'a self,
        id: &'a str,
        records: &'a [HistoryRecord],
    ) -> BoxFuture<'a, Result<(), SessionError>> {
        Box::pin(async move {
            self.check(id)?;
            self.inner.append(id, records).await
        })
    }

    fn save_and_append<'a>(
        &'a self,
        meta: &'a SessionMeta,
        records: &'a [HistoryRecord],
    ) -> BoxFuture<'a, Result<(), SessionError>> {
        Box::pin(async move {
            self.check(&meta.id)?;
            self.inner.save_and_append(meta, records).await
        })
    }

    fn create_and_append<'a>(
        &'a self,
        meta: &'a SessionMeta,
        records: &'a [HistoryRecord],
    ) -> BoxFuture<'a, Result<(), SessionError>> {
        Box::pin(async move {
            self.check(&meta.id)?;
            self.inner.create_and_append(meta, records).await
        })
    }

    fn load<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Session, SessionError>> {
        self.inner.load(id)
    }

    fn list(&self) -> BoxFuture<'_, Result<Vec<SessionMeta>, SessionError>> {
        self.inner.list()
    }

    fn delete<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<(), SessionError>> {
        Box::pin(async move {
            self.check(id)?;
            self.inner.delete(id).await
        })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prompt_the_session_store_refuses_is_answered_unavailable() {
    let dir = tempfile::tempdir().unwrap();
    let model = ScriptedClient::new().respond_with(|_| Ok(mux_llm::Response::from_text("Hi.")));
    let store = Arc::new(Refusing {
        inner: MemorySessionStore::new(),
        refuse: AtomicBool::new(false),
    });
    let server = A2aServer::new(agent(model, dir.path()))
        .config(A2aConfig::default())
        .session_store(Arc::clone(&store) as Arc<dyn SessionStore>)
        .serve(([127, 0, 0, 1], 0).into())
        .await
        .unwrap();
    let sent = rpc(&server, "SendMessage", user("hi", None)).await;
    let task = &sent["result"]["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{sent}");
    let context = task["contextId"].as_str().unwrap().to_owned();
    let on_context = |text: &str| {
        let mut params = user(text, None);
        params["message"]["contextId"] = json!(context);
        params
    };

    store.refuse.store(true, Ordering::SeqCst);
    for method in ["SendMessage", "SendStreamingMessage"] {
        let answer = tokio::time::timeout(
            Duration::from_secs(60),
            rpc(&server, method, on_context(&format!("refused {method}"))),
        )
        .await
        .unwrap_or_else(|_| panic!("{method} was not answered"));
        assert_eq!(
            answer["error"]["code"], -32000,
            "{method}: the prompt was acknowledged though not stored: {answer}"
        );
        let details = answer["error"]["data"].as_array().unwrap();
        assert_eq!(details[0]["reason"], "UNAVAILABLE", "{answer}");
        assert!(
            details
                .iter()
                .any(|d| d["@type"] == "type.googleapis.com/google.rpc.RetryInfo"),
            "{answer}"
        );
    }

    store.refuse.store(false, Ordering::SeqCst);
    let mut tries = 0;
    loop {
        let answer = rpc(
            &server,
            "SendMessage",
            on_context(&format!("again {tries}")),
        )
        .await;
        if answer["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED" {
            break;
        }
        tries += 1;
        assert!(tries < 50, "the store is back but messages fail: {answer}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let session = store.inner.load(&context).await.unwrap();
    let said = serde_json::to_string(&session.messages).unwrap();
    assert!(
        !said.contains("refused"),
        "a refused prompt was stored: {said}"
    );
    server.shutdown().await;
}
