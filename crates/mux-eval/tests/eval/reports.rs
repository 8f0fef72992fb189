//! Reports: JSON round trips, a comparison that finds a seeded regression, and the HTML page
//! opened in the real browser (Chromium, headless): failures first, and a `<script>` in a
//! model's reply shown as text, never run.

use std::sync::Arc;
use std::time::Duration;

use mux_eval::{Case, Change, Comparison, Dataset, Report, Runner};
use mux_llm::Response;
use mux_llm::testing::ScriptedClient;

use crate::support::{agent, agent_on};

const HOSTILE: &str = "<script>document.title='pwned'</script><img src=x onerror=\"document.title='pwned'\">\u{1b}[2J";

fn dataset() -> Dataset {
    let mut dataset = Dataset::new("reports");
    for (name, prompt, expected) in [
        ("alpha", "say a", "a"),
        ("beta", "say b", "b"),
        ("gamma", "say c", "c"),
        ("delta", "say d", "d"),
    ] {
        dataset = dataset.case(Case::new(name, prompt).expect_output(expected));
    }
    dataset
}

/// A model that answers `say X` with X, except for the prompts in `wrong`, answered "?".
fn model(wrong: &'static [&'static str]) -> Arc<ScriptedClient> {
    Arc::new(ScriptedClient::new().respond_with(move |request| {
        let prompt = request.messages[0]
            .content
            .iter()
            .find_map(|b| b.as_text())
            .unwrap_or("");
        let answer = prompt.strip_prefix("say ").unwrap_or(prompt);
        Ok(Response::from_text(if wrong.contains(&prompt) {
            "?"
        } else {
            answer
        }))
    }))
}

#[tokio::test]
async fn a_comparison_finds_the_seeded_regression_case_by_case() {
    let dir = tempfile::tempdir().unwrap();
    let baseline = Runner::new(agent_on(model(&["say d"])))
        .run(&dataset())
        .await
        .unwrap();
    baseline
        .save_json(dir.path().join("baseline.json"))
        .unwrap();
    let loaded = Report::load_json(dir.path().join("baseline.json")).unwrap();
    assert_eq!(loaded.to_json(), baseline.to_json());

    // The seeded regression: the candidate gets "beta" wrong, and fixes "delta".
    let mut candidate_set = dataset();
    candidate_set.cases.remove(2);
    candidate_set = candidate_set.case(Case::new("epsilon", "say e").expect_output("e"));
    let candidate = Runner::new(agent_on(model(&["say b"])))
        .run(&candidate_set)
        .await
        .unwrap();
    let comparison = Comparison::of(&loaded, &candidate, 0.01);
    let names = |change| {
        comparison
            .with(change)
            .map(|c| c.name.clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(names(Change::Regression), ["beta"]);
    assert_eq!(names(Change::Improvement), ["delta"]);
    assert_eq!(names(Change::Unchanged), ["alpha"]);
    assert_eq!(names(Change::Added), ["epsilon"]);
    assert_eq!(names(Change::Removed), ["gamma"]);
    assert!(comparison.has_regressions());
    let regression = comparison.with(Change::Regression).next().unwrap();
    assert!(
        regression
            .why
            .as_deref()
            .is_some_and(|w| w.contains("\"?\"")),
        "{regression:?}"
    );
    let text = comparison.render();
    assert!(text.contains("regressions (1):\n  beta"), "{text}");
    // The same report against itself changes nothing.
    assert!(!Comparison::of(&candidate, &candidate, 0.0).has_regressions());
}

fn hostile_report() -> impl std::future::Future<Output = Report> {
    let dataset = Dataset::new("html <b>title</b>")
        .case(Case::new("calm", "say fine").expect_output("fine"))
        .case(
            Case::new("hostile <i>name</i>", format!("say {HOSTILE}"))
                .tag("x\"><script>alert(1)</script>")
                .expect_output("something else"),
        )
        .case(Case::new(
            "tool",
            r#"call lookup {"key": "<script>k</script>"}"#,
        ));
    async move { Runner::new(agent()).run(&dataset).await.unwrap() }
}

#[tokio::test]
async fn the_html_page_escapes_everything_and_lists_failures_first() {
    let report = hostile_report().await;
    let html = mux_eval::html::render(&report);
    let lower = html.to_lowercase();
    assert!(!lower.contains("<script"), "a raw script tag");
    assert!(!lower.contains("<img"), "a raw img tag");
    assert!(!lower.contains("<i>") && !lower.contains("<b>"));
    assert!(html.contains("&lt;script&gt;document.title=&#39;pwned&#39;&lt;/script&gt;"));
    assert!(html.contains("Content-Security-Policy"));
    let hostile = html.find("hostile &lt;i&gt;name&lt;/i&gt;").unwrap();
    assert!(hostile < html.find(">calm<").unwrap(), "failures first");
    // The transcript shows the tool call and its result.
    assert!(
        html.contains("call lookup") && html.contains("value of &lt;script&gt;k&lt;/script&gt;")
    );
}

#[tokio::test]
async fn the_html_page_renders_in_chromium_with_the_script_inert() {
    let report = hostile_report().await;
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("report.html");
    mux_eval::html::save(&report, &page).unwrap();
    let browser = ["chromium", "chromium-browser", "google-chrome"]
        .into_iter()
        .find(|b| {
            std::process::Command::new(b)
                .arg("--version")
                .output()
                .is_ok_and(|o| o.status.success())
        })
        .expect("Chromium is needed for this test (apt-get install chromium)");
    let profile = dir.path().join("profile");
    let child = tokio::process::Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(["--virtual-time-budget=2000", "--dump-dom"])
        .arg(format!("file://{}", page.display()))
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(Duration::from_secs(120), child)
        .await
        .expect("Chromium answers within two minutes")
        .unwrap();
    let dom = String::from_utf8_lossy(&out.stdout);
    assert!(
        dom.contains("id=\"totals\""),
        "no page rendered: {dom}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Scripts never ran: the title is the report's, and the DOM holds no script or img element.
    assert!(
        dom.contains("<title>eval html &lt;b&gt;title&lt;/b&gt;</title>"),
        "{dom}"
    );
    assert!(!dom.contains("pwned</title>"));
    assert!(!dom.to_lowercase().contains("<script") && !dom.to_lowercase().contains("<img"));
    // Failures first: the statuses in document order.
    let statuses: Vec<&str> = dom
        .match_indices("data-status=\"")
        .map(|(at, m)| &dom[at + m.len()..at + m.len() + 4])
        .collect();
    assert_eq!(statuses, ["fail", "pass", "pass"], "{dom}");
}
