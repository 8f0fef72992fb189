//! The acp_agent example, as a process on real pipes, against input a careless or hostile
//! client sends: bytes that are not UTF-8, a line of 100 MB, text that is not JSON, sessions
//! that do not exist, and session roots that are the whole filesystem or a home. Each gets a
//! JSON-RPC error, and then the same agent answers a normal prompt.

use std::path::Path;

use serde_json::{Value, json};

use crate::acp_agent::RawAgent;

/// A running example with one session open in its own project directory.
struct Opened {
    agent: RawAgent,
    session: String,
    next_id: u64,
    _project: tempfile::TempDir,
    _sessions: tempfile::TempDir,
}

impl Opened {
    fn start(env: &[(&str, String)]) -> Self {
        let project = tempfile::tempdir().unwrap();
        let sessions = tempfile::tempdir().unwrap();
        let mut agent = RawAgent::start_with(project.path(), sessions.path(), env);
        let init = agent.request(1, "initialize", json!({"protocolVersion": 1}));
        assert_eq!(init["result"]["protocolVersion"], 1, "{init}");
        let created = agent.request(
            2,
            "session/new",
            json!({"cwd": project.path(), "mcpServers": []}),
        );
        let session = created["result"]["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("{created}"))
            .to_owned();
        // The agent announces its slash commands after the session opens: read that first,
        // so a test's count of the bytes the agent writes holds only what the test caused.
        agent.update("available_commands_update");
        Self {
            agent,
            session,
            next_id: 2,
            _project: project,
            _sessions: sessions,
        }
    }

    fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        self.agent.request(self.next_id, method, params)
    }

    /// A prompt the offline model answers with one allowed tool call and a reply.
    fn answers_a_prompt(&mut self, after: &str) {
        let session = self.session.clone();
        let done = self.request(
            "session/prompt",
            json!({"sessionId": session,
                "prompt": [{"type": "text", "text": "call list_dir {\"path\": \".\"}"}]}),
        );
        assert_eq!(
            done["result"]["stopReason"], "end_turn",
            "after {after}: {done}"
        );
    }

    /// The error answering a line that had no usable id.
    fn error_without_id(&mut self) -> Value {
        let reply = self.agent.reply_to_id(&Value::Null);
        assert!(reply.get("result").is_none(), "{reply}");
        reply["error"].clone()
    }

    /// The agent's peak resident memory so far (`VmHWM`), in KiB.
    fn peak_kib(&self) -> u64 {
        let status =
            std::fs::read_to_string(format!("/proc/{}/status", self.agent.child.id())).unwrap();
        status
            .lines()
            .find_map(|line| line.strip_prefix("VmHWM:"))
            .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or_else(|| panic!("no VmHWM in {status}"))
    }

    fn bytes_out(&self) -> usize {
        self.agent
            .bytes_out
            .load(std::sync::atomic::Ordering::SeqCst)
    }
}

impl Drop for Opened {
    fn drop(&mut self) {
        drop(self.agent.stdin.take());
        crate::acp_agent::wait_for(
            &mut self.agent.child,
            std::time::Duration::from_secs(10),
            "the agent after its client left",
        );
    }
}

/// A `session/prompt` request line for `session` whose text is `text` (raw bytes).
fn prompt_line(id: u64, session: &str, text: &[u8]) -> Vec<u8> {
    let mut line = format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"session/prompt","params":{{"sessionId":"{session}","prompt":[{{"type":"text","text":""#
    )
    .into_bytes();
    line.extend_from_slice(text);
    line.extend_from_slice(b"\"}]}}");
    line
}

#[test]
fn invalid_utf8_in_every_shape_gets_a_parse_error_and_the_agent_answers_a_prompt() {
    let mut opened = Opened::start(&[]);
    let session = opened.session.clone();
    let shapes: [(&str, Vec<u8>); 5] = [
        (
            "a lone continuation byte",
            prompt_line(90, &session, b"\x80"),
        ),
        ("a multibyte sequence cut at the line end", {
            let mut line = prompt_line(91, &session, b"");
            line.truncate(line.len() - 5);
            line.extend_from_slice(b"\xe2\x82");
            line
        }),
        (
            "an overlong encoding",
            prompt_line(92, &session, b"\xc0\xaf"),
        ),
        (
            "an encoded UTF-16 surrogate",
            prompt_line(93, &session, b"\xed\xa0\x80"),
        ),
        ("a 0xFF byte", prompt_line(94, &session, b"\xff")),
    ];
    for (shape, mut line) in shapes {
        line.push(b'\n');
        opened.agent.send_bytes(&line);
        let error = opened.error_without_id();
        assert_eq!(error["code"], -32700, "{shape}: {error}");
        assert!(
            error["data"]["reason"]
                .as_str()
                .is_some_and(|r| r.contains("not UTF-8")),
            "{shape}: {error}"
        );
        opened.answers_a_prompt(shape);
    }
}

#[test]
fn a_100_mb_line_is_refused_as_it_streams_and_the_agent_answers_a_prompt() {
    const LIMIT: usize = 8 * 1024 * 1024;
    const LINE: usize = 100_000_000;
    let mut opened = Opened::start(&[("MUX_ACP_MAX_LINE_BYTES", LIMIT.to_string())]);
    opened.answers_a_prompt("start");
    let session = opened.session.clone();
    let before = opened.peak_kib();
    let out_before = opened.bytes_out();
    // A prompt whose text is 100 MB, written in 1 MiB chunks: the agent never sees it whole.
    let head = prompt_line(77, &session, b"");
    let (open, close) = head.split_at(head.len() - 5);
    opened.agent.send_bytes(open);
    let chunk = vec![b'x'; 1 << 20];
    let mut left = LINE - open.len() - close.len();
    while left > 0 {
        let n = left.min(chunk.len());
        opened.agent.send_bytes(&chunk[..n]);
        left -= n;
    }
    opened.agent.send_bytes(close);
    opened.agent.send_bytes(b"\n");
    let error = opened.error_without_id();
    assert_eq!(error["code"], -32600, "{error}");
    let reason = error["data"]["reason"].as_str().unwrap();
    assert!(
        reason.contains(&LINE.to_string()) && reason.contains(&LIMIT.to_string()),
        "{reason}"
    );
    // The limit's worth of buffer, and not the line: 8 MiB measured, 64 MiB for the default
    // limit of 64 MiB.
    let grown_mib = (opened.peak_kib().saturating_sub(before)) / 1024;
    assert!(
        grown_mib < 24,
        "the agent's peak memory grew by {grown_mib} MiB for a line of {} MiB",
        LINE >> 20
    );
    let written = opened.bytes_out() - out_before;
    assert!(written < 1024, "{written} bytes answered a refused line");
    opened.answers_a_prompt("the 100 MB line");
}

#[test]
fn a_parse_error_is_answered_in_a_few_hundred_bytes_not_an_echo() {
    let mut opened = Opened::start(&[]);
    let mut line = b"{ not json ".to_vec();
    line.extend(std::iter::repeat_n(b'y', 1_000_000));
    line.push(b'\n');
    let out_before = opened.bytes_out();
    opened.agent.send_bytes(&line);
    let error = opened.error_without_id();
    assert_eq!(error["code"], -32700, "{error}");
    let shown = error["data"]["linePrefix"].as_str().unwrap();
    assert!(
        shown.len() <= 128 && shown.starts_with("{ not json y"),
        "{shown}"
    );
    let written = opened.bytes_out() - out_before;
    assert!(written < 512, "{written} bytes answered a 1 MB line");
    opened.answers_a_prompt("a line that is not JSON");
}

#[test]
fn unknown_sessions_are_invalid_params_for_load_prompt_and_set_mode_and_cancel_is_ignored() {
    let mut opened = Opened::start(&[]);
    let cwd = opened._project.path().to_owned();
    for id in ["no-such-session", "../../etc/passwd", ""] {
        let loaded = opened.request(
            "session/load",
            json!({"sessionId": id, "cwd": cwd, "mcpServers": []}),
        );
        assert_eq!(loaded["error"]["code"], -32602, "load `{id}`: {loaded}");
        let prompted = opened.request(
            "session/prompt",
            json!({"sessionId": id, "prompt": [{"type": "text", "text": "hi"}]}),
        );
        assert_eq!(
            prompted["error"]["code"], -32602,
            "prompt `{id}`: {prompted}"
        );
        let mode = opened.request(
            "session/set_mode",
            json!({"sessionId": id, "modeId": "plan"}),
        );
        assert_eq!(mode["error"]["code"], -32602, "set_mode `{id}`: {mode}");
        // A notification: nothing to answer, and nothing happens.
        opened.agent.send(
            &json!({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": id}})
                .to_string(),
        );
        // Sent as a request, it is answered (not left waiting): cancel is no request method.
        let cancel = opened.request("session/cancel", json!({"sessionId": id}));
        assert_eq!(cancel["error"]["code"], -32601, "cancel `{id}`: {cancel}");
    }
    let loaded = opened.request(
        "session/load",
        json!({"sessionId": "no-such-session", "cwd": cwd, "mcpServers": []}),
    );
    assert!(
        loaded["error"]["data"]
            .as_str()
            .is_some_and(|d| d.contains("unknown session `no-such-session`")),
        "{loaded}"
    );
    opened.answers_a_prompt("unknown sessions");
}

/// Everything a refused `cwd` is tried with, for `session/new` and `session/load`.
fn assert_refused(opened: &mut Opened, cwd: &Path, says: &str) {
    let session = opened.session.clone();
    for (method, params) in [
        ("session/new", json!({"cwd": cwd, "mcpServers": []})),
        (
            "session/load",
            json!({"sessionId": session, "cwd": cwd, "mcpServers": []}),
        ),
    ] {
        let refused = opened.request(method, params);
        assert_eq!(
            refused["error"]["code"],
            -32602,
            "{method} {}: {refused}",
            cwd.display()
        );
        let data = refused["error"]["data"].as_str().unwrap_or_default();
        assert!(
            data.contains(says),
            "{method} {}: `{data}` does not say `{says}`",
            cwd.display()
        );
    }
    opened.answers_a_prompt(&cwd.display().to_string());
}

#[test]
fn a_cwd_that_is_not_a_project_directory_is_refused_with_its_reason() {
    let place = tempfile::tempdir().unwrap();
    let place_path = std::fs::canonicalize(place.path()).unwrap();
    let home = place_path.join("home/alice");
    std::fs::create_dir_all(home.join("project")).unwrap();
    let file = place_path.join("file.txt");
    std::fs::write(&file, "not a directory").unwrap();
    let to_root = place_path.join("link-to-root");
    std::os::unix::fs::symlink("/", &to_root).unwrap();
    let to_home = place_path.join("link-to-home");
    std::os::unix::fs::symlink(&home, &to_home).unwrap();
    let mut opened = Opened::start(&[("HOME", home.display().to_string())]);

    assert_refused(&mut opened, Path::new("/"), "whole filesystem");
    assert_refused(&mut opened, &to_root, "whole filesystem");
    assert_refused(&mut opened, Path::new("/tmp/../"), "whole filesystem");
    assert_refused(&mut opened, &home, "the home directory");
    assert_refused(&mut opened, &to_home, "the home directory");
    assert_refused(
        &mut opened,
        &place_path.join("home"),
        "holds the home directory",
    );
    assert_refused(
        &mut opened,
        Path::new("relative/dir"),
        "not an absolute path",
    );
    assert_refused(
        &mut opened,
        &place_path.join("absent"),
        "cannot be resolved",
    );
    assert_refused(&mut opened, &file, "not a directory");
    if Path::new("/root").is_dir() {
        assert_refused(&mut opened, Path::new("/root"), "the home directory");
    }
    // A project inside the home is fine.
    let inside = opened.request(
        "session/new",
        json!({"cwd": home.join("project"), "mcpServers": []}),
    );
    assert!(inside["result"]["sessionId"].is_string(), "{inside}");
}

#[test]
fn an_application_that_allows_broad_roots_opens_a_session_in_a_home() {
    let place = tempfile::tempdir().unwrap();
    let home = std::fs::canonicalize(place.path())
        .unwrap()
        .join("home/alice");
    std::fs::create_dir_all(&home).unwrap();
    let mut opened = Opened::start(&[
        ("HOME", home.display().to_string()),
        ("MUX_ACP_ALLOW_BROAD_ROOTS", "1".to_owned()),
    ]);
    let created = opened.request("session/new", json!({"cwd": home, "mcpServers": []}));
    let session = created["result"]["sessionId"]
        .as_str()
        .unwrap_or_else(|| panic!("{created}"))
        .to_owned();
    opened.session = session;
    opened.answers_a_prompt("a session in the home");
    // Broad roots are allowed; a path that is no directory still is not.
    assert_refused(
        &mut opened,
        Path::new("relative/dir"),
        "not an absolute path",
    );
}

#[test]
fn errors_that_quote_a_megabyte_of_input_answer_in_a_short_line() {
    let mut opened = Opened::start(&[]);
    let cwd = opened._project.path().to_owned();
    let big = "z".repeat(1_000_000);
    for (method, params, code) in [
        // The SDK's own invalid params quote the value, and the whole params object.
        (
            "session/new",
            json!({"cwd": cwd, "mcpServers": big}),
            -32602,
        ),
        (
            "session/new",
            json!({"cwd": cwd, "mcpServers": [{"name": big}]}),
            -32602,
        ),
        // The agent's errors name the cwd, the session, the mode.
        ("session/new", json!({"cwd": big, "mcpServers": []}), -32602),
        (
            "session/prompt",
            json!({"sessionId": big, "prompt": []}),
            -32602,
        ),
        (
            "session/set_mode",
            json!({"sessionId": "x", "modeId": big}),
            -32602,
        ),
        ("authenticate", json!({"methodId": big}), -32602),
        // "Method not found" names the method.
        (big.as_str(), json!({}), -32601),
    ] {
        let out_before = opened.bytes_out();
        let error = opened.request(method, params);
        let written = opened.bytes_out() - out_before;
        assert_eq!(error["error"]["code"], code, "{:.300}", error.to_string());
        assert!(written < 4096, "{written} bytes answered {:.40}", method);
    }
    opened.answers_a_prompt("errors quoting a megabyte");
}

#[test]
fn a_line_of_millions_of_values_is_refused_before_anything_is_built_from_it() {
    const VALUES: usize = 3_000_000;
    let mut opened = Opened::start(&[]);
    opened.answers_a_prompt("start");
    let before = opened.peak_kib();
    // 9 MB of `[],`: as `serde_json::Value`s, hundreds of MB.
    let mut line =
        br#"{"jsonrpc":"2.0","id":88,"method":"session/list","params":{"cwd":["#.to_vec();
    line.extend_from_slice(&b"[],".repeat(VALUES));
    line.extend_from_slice(b"[]]}}\n");
    opened.agent.send_bytes(&line);
    let error = opened.error_without_id();
    assert_eq!(error["code"], -32600, "{error}");
    assert!(
        error["data"]["reason"]
            .as_str()
            .is_some_and(|r| r.contains("JSON values")),
        "{error}"
    );
    // The line itself, held while it is checked, and nothing built from it.
    let grown_mib = (opened.peak_kib().saturating_sub(before)) / 1024;
    assert!(
        grown_mib < 32,
        "the agent's peak memory grew by {grown_mib} MiB for a line of {} MiB",
        line.len() >> 20
    );
    opened.answers_a_prompt("a line of millions of values");
}
