//! `with_page(PageOptions)`: the page branded (title, placeholder, escaped) and every route of
//! the router under a path prefix, over real HTTP: the page at `/p` and `/p/`, its script and
//! styles, a run streamed from `/p/agui`; nothing left at the root.

use mux_llm::testing::ScriptedClient;
use mux_orchestrator::Agent;
use mux_web::page::PageOptions;
use mux_web::{AguiRouter, WebConfig};

use crate::common::{events_of, input, types};

const TOKEN: &str = "prefix-token";

async fn serve(page: PageOptions) -> (String, tokio::task::JoinHandle<std::io::Result<()>>) {
    let agent = Agent::builder(ScriptedClient::new().reply_text("hello"), "scripted")
        .build()
        .unwrap();
    let router = AguiRouter::new(agent)
        .config(WebConfig::default().bearer_token(TOKEN))
        .with_page(page)
        .try_build()
        .unwrap();
    let listener = mux_web::bind(0).await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    (url, tokio::spawn(mux_web::serve(listener, router)))
}

#[tokio::test]
async fn the_page_and_the_agui_routes_live_under_the_prefix_with_the_brand_escaped() {
    let page = PageOptions::new()
        .title("Acme <support> & co")
        .placeholder("Ask \"us\" anything")
        .prefix("/support/chat/")
        .unwrap();
    let (url, server) = serve(page).await;
    let http = reqwest::Client::new();

    for path in ["/support/chat", "/support/chat/"] {
        let answer = http.get(format!("{url}{path}")).send().await.unwrap();
        assert_eq!(answer.status(), 200, "{path}");
        assert_eq!(
            answer.headers()["content-security-policy"],
            mux_web::page::CONTENT_SECURITY_POLICY
        );
        let html = answer.text().await.unwrap();
        for needle in [
            "<title>Acme &lt;support&gt; &amp; co</title>",
            "<h1>Acme &lt;support&gt; &amp; co</h1>",
            "placeholder=\"Ask &quot;us&quot; anything\"",
            "<meta name=\"mux-base\" content=\"/support/chat\">",
            "href=\"/support/chat/app.css\"",
            "src=\"/support/chat/app.js\"",
        ] {
            assert!(html.contains(needle), "{path} lacks {needle}:\n{html}");
        }
    }
    for path in ["/support/chat/app.js", "/support/chat/app.css"] {
        let answer = http.get(format!("{url}{path}")).send().await.unwrap();
        assert_eq!(answer.status(), 200, "{path}");
    }

    // A run under the prefix, with the token; without it, refused.
    let run = http
        .post(format!("{url}/support/chat/agui"))
        .bearer_auth(TOKEN)
        .json(&input("t1", "r1", "hi"))
        .header("Accept", "text/event-stream");
    let events = events_of(run).await;
    assert_eq!(types(&events).last(), Some(&"RUN_FINISHED"), "{events:?}");
    let history = http
        .get(format!("{url}/support/chat/agui/threads/t1/messages"))
        .send()
        .await
        .unwrap();
    assert_eq!(history.status(), 401);
    let history = http
        .get(format!("{url}/support/chat/agui/threads/t1/messages"))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(history.status(), 200);

    // Nothing at the root, nor under a neighbour of the prefix.
    for path in [
        "/",
        "/app.js",
        "/agui/threads/t1/messages",
        "/support/chatx",
        "/support/chat/../app.js",
        "/support",
    ] {
        let answer = http
            .get(format!("{url}{path}"))
            .bearer_auth(TOKEN)
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status(), 404, "{path}");
    }
    server.abort();
}

#[tokio::test]
async fn the_default_page_is_the_plain_one_at_the_root() {
    let (url, server) = serve(PageOptions::default()).await;
    let html = reqwest::get(format!("{url}/"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(html.contains("<title>mux web agent</title>"), "{html}");
    assert!(
        html.contains("<meta name=\"mux-base\" content=\"\">"),
        "{html}"
    );
    assert!(html.contains("src=\"/app.js\""), "{html}");
    server.abort();
}
