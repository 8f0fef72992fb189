//! A prompt the session store cannot write (it refuses writes) is not acknowledged: `POST
//! /agui` is answered 503 `run_store_unavailable` before any stream, and once the store takes
//! writes again the next run on the thread is answered.
//!
//! Timeouts here are hang detectors, not timing assertions.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use mux_llm::testing::ScriptedClient;
use mux_orchestrator::session::{
    HistoryRecord, MemorySessionStore, Session, SessionError, SessionMeta, SessionStore,
};
use mux_web::AguiRouter;
use serde_json::{Value, json};

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

fn input(run: &str) -> Value {
    json!({"threadId": "p1", "runId": run,
        "messages": [{"id": format!("{run}-u"), "role": "user", "content": format!("say {run}")}]})
}

/// Posts a run; its status and body.
async fn post(http: &reqwest::Client, url: &str, run: &str) -> (u16, String) {
    let answer = async {
        let response = http
            .post(format!("{url}/agui"))
            .json(&input(run))
            .send()
            .await
            .unwrap();
        let status = response.status().as_u16();
        (status, response.text().await.unwrap())
    };
    tokio::time::timeout(Duration::from_secs(60), answer)
        .await
        .unwrap_or_else(|_| panic!("run {run} was not answered: the request hangs"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prompt_the_session_store_refuses_is_answered_503_before_any_stream() {
    let model = ScriptedClient::new().respond_with(|_| Ok(mux_llm::Response::from_text("Hi.")));
    let agent = mux_orchestrator::Agent::builder(model, "scripted")
        .build()
        .unwrap();
    let store = Arc::new(Refusing {
        inner: MemorySessionStore::new(),
        refuse: AtomicBool::new(false),
    });
    let router = AguiRouter::new(agent)
        .session_store(Arc::clone(&store) as Arc<dyn SessionStore>)
        .build();
    let listener = mux_web::bind(0).await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let server = tokio::spawn(mux_web::serve(listener, router));
    let http = reqwest::Client::new();

    let (status, body) = post(&http, &url, "r1").await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("RUN_FINISHED"), "{body}");

    store.refuse.store(true, Ordering::SeqCst);
    let (status, body) = post(&http, &url, "r2").await;
    assert_eq!(
        status, 503,
        "the prompt was acknowledged though not stored: {body}"
    );
    let body: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(body["error"], "run_store_unavailable", "{body}");

    // The store takes writes again: the next run is answered, and the refused prompt is not
    // in the thread.
    store.refuse.store(false, Ordering::SeqCst);
    let mut tries = 0;
    loop {
        let (status, body) = post(&http, &url, &format!("r3-{tries}")).await;
        if status == 200 && body.contains("RUN_FINISHED") {
            break;
        }
        tries += 1;
        assert!(
            tries < 50,
            "the store is back but runs fail: {status} {body}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let session = store.inner.load("p1").await.unwrap();
    let said = serde_json::to_string(&session.messages).unwrap();
    assert!(said.contains("say r1") && said.contains("say r3"), "{said}");
    assert!(
        !said.contains("say r2"),
        "the refused prompt was stored: {said}"
    );
    server.abort();
}
