//! The PostgreSQL URLs docs/sessions.md shows a reader connect: each is read from the page,
//! its example host replaced by a throw-away server's (the socket directory for `/tmp/pg-sock`
//! and `/run/postgresql`, in the query or percent-encoded as the host; 127.0.0.1 and the
//! server's port for `db.internal:5432`), and opened
//! with `Store::open`, which writes and reads a session through it.

use std::str::FromStr;

use mux_store::Store;
use mux_store::session::SessionMeta;
use mux_testkit::postgres::{Durability, Server};
use sqlx::postgres::PgConnectOptions;
use sqlx::{ConnectOptions, Connection};

use crate::runtime;

/// The pages whose prose shows PostgreSQL URLs to copy.
const PAGES: [&str; 2] = ["docs/sessions.md", "docs/sessions-reference.md"];

/// Example socket directories the docs name.
const EXAMPLE_SOCKETS: [&str; 2] = ["/tmp/pg-sock", "/run/postgresql"];

/// The example TCP host and port the docs name.
const EXAMPLE_TCP: &str = "db.internal:5432";

/// Every code span of `text` that is a whole PostgreSQL URL (not `postgres://…`), outside
/// fenced blocks.
fn urls_in(text: &str) -> Vec<String> {
    let mut urls = Vec::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        // Odd pieces of a line split at backticks are its code spans.
        for span in line.split('`').skip(1).step_by(2) {
            let is_url = span.starts_with("postgres://") || span.starts_with("postgresql://");
            if is_url && !span.contains('…') && !span.contains(' ') {
                urls.push(span.to_owned());
            }
        }
    }
    urls
}

/// The URLs the pages show, each with the page it is on.
fn documented_urls() -> Vec<(&'static str, String)> {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
    let mut urls = Vec::new();
    for page in PAGES {
        let text = std::fs::read_to_string(format!("{root}/{page}"))
            .unwrap_or_else(|err| panic!("reading {page}: {err}"));
        urls.extend(urls_in(&text).into_iter().map(|url| (page, url)));
    }
    urls
}

/// Runs `sql` as the superuser on `server`.
async fn admin(server: &Server, statements: &[String]) {
    let mut conn = PgConnectOptions::from_str(&server.url("postgres"))
        .unwrap()
        .connect()
        .await
        .unwrap();
    for sql in statements {
        sqlx::query(sql).execute(&mut conn).await.unwrap();
    }
    conn.close().await.unwrap();
}

/// The roles the documented URLs name (`app`, `mux`, and the user sqlx connects as when a
/// URL names none), each able to log in and to use what another made (superusers: the test is
/// about reaching the server, not about grants), and a database `mux`.
async fn prepare(server: &Server) {
    let me = PgConnectOptions::new().get_username().to_owned();
    let mut statements = Vec::new();
    for role in ["app", "mux", me.as_str()] {
        statements.push(format!(
            "DO $$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '{role}') \
             THEN CREATE ROLE \"{role}\" LOGIN SUPERUSER PASSWORD 'secret'; END IF; END $$"
        ));
    }
    statements.push("CREATE DATABASE mux".to_owned());
    admin(server, &statements).await;
}

/// `url` pointed at `socket` (unix) and `tcp` (its `127.0.0.1:PORT`), or `None` when it
/// names a host the test does not know how to stand in for.
fn on_test_servers(url: &str, socket: &Server, tcp: &Server) -> Option<String> {
    let dir = socket.socket_dir().display().to_string();
    for example in EXAMPLE_SOCKETS {
        // In the query (`?host=/dir`), or as the host, percent-encoded (`@%2Fdir/`).
        if url.contains(&format!("host={example}")) {
            return Some(url.replace(&format!("host={example}"), &format!("host={dir}")));
        }
        let encoded = |path: &str| path.replace('/', "%2F");
        if url.contains(&format!("@{}/", encoded(example))) {
            return Some(url.replace(&encoded(example), &encoded(&dir)));
        }
    }
    url.contains(EXAMPLE_TCP)
        .then(|| url.replace(EXAMPLE_TCP, &format!("127.0.0.1:{}", tcp.port())))
}

#[test]
fn the_postgres_urls_the_docs_show_connect() {
    let urls = documented_urls();
    let socket_forms = urls
        .iter()
        .filter(|(_, u)| u.contains("host=/") || u.contains("@%2F"))
        .count();
    let tcp_forms = urls.len() - socket_forms;
    assert!(
        socket_forms >= 2 && tcp_forms >= 1,
        "the docs should show the unix-socket forms and a TCP form in code spans: {urls:?}"
    );
    let socket = Server::start(Durability::Throwaway).unwrap();
    let tcp = Server::start_with_tcp(Durability::Throwaway).unwrap();
    assert!(tcp.has_tcp());
    runtime().block_on(async {
        prepare(&socket).await;
        prepare(&tcp).await;
        for (page, url) in &urls {
            let Some(local) = on_test_servers(url, &socket, &tcp) else {
                panic!(
                    "{page} shows {url}, whose host this test cannot stand in for \
                     (use {EXAMPLE_SOCKETS:?} or {EXAMPLE_TCP})"
                );
            };
            let store = Store::open(&local)
                .await
                .unwrap_or_else(|err| panic!("{page} shows {url}; as {local}: {err}"));
            let meta = SessionMeta::new();
            store.sessions().create(&meta).await.unwrap();
            assert_eq!(
                store.sessions().load(&meta.id).await.unwrap().meta.id,
                meta.id
            );
        }
    });
}

#[test]
fn urls_are_found_only_in_prose_code_spans() {
    let text = "Use `postgres://a@localhost/m?host=/tmp/pg-sock` or `postgres://…`.\n\
                ```rust\nlet u = `postgres://in/a/block`;\n```\n`postgresql://b@h:1/m` \
                and `postgres` alone.\n";
    assert_eq!(
        urls_in(text),
        [
            "postgres://a@localhost/m?host=/tmp/pg-sock",
            "postgresql://b@h:1/m"
        ]
    );
}
