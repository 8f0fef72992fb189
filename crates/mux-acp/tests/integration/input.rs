//! `AcpAgent::serve_io` on a real socket pair: bytes that are not UTF-8, text that is not JSON
//! and a line over the limit each get a short error, and the agent goes on.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::time::Duration;

use mux_llm::testing::ScriptedClient;
use serde_json::{Value, json};

use crate::harness::{LIMIT, agent};

/// The client's end: writes lines, reads answers (with a read timeout).
struct Client {
    writer: UnixStream,
    reader: BufReader<UnixStream>,
}

impl Client {
    fn send(&mut self, bytes: &[u8]) {
        self.writer.write_all(bytes).unwrap();
        self.writer.write_all(b"\n").unwrap();
    }

    fn answer(&mut self) -> (Value, usize) {
        let mut line = Vec::new();
        self.reader.read_until(b'\n', &mut line).unwrap();
        (serde_json::from_slice(&line).unwrap(), line.len())
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn serve_io_answers_bad_lines_briefly_and_goes_on_until_the_client_closes() {
    let (ours, theirs) = UnixStream::pair().unwrap();
    ours.set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let read = blocking::Unblock::new(theirs.try_clone().unwrap());
    let write = blocking::Unblock::new(theirs);
    let served = tokio::spawn(
        agent(ScriptedClient::new())
            .max_line_bytes(4096)
            .serve_io(read, write),
    );
    let mut client = Client {
        writer: ours.try_clone().unwrap(),
        reader: BufReader::new(ours),
    };
    let answers = tokio::task::spawn_blocking(move || {
        let mut answers = Vec::new();
        let mut overlong = br#"{"jsonrpc":"2.0","id":5,"method":"initialize","params":""#.to_vec();
        overlong.extend(std::iter::repeat_n(b'x', 100_000));
        overlong.extend_from_slice(br#""}"#);
        for line in [
            b"{\"text\": \"\xff\xfe\"}".to_vec(),
            b"{ not json".to_vec(),
            b"   ".to_vec(),
            overlong,
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                "params": {"protocolVersion": 1}})
            .to_string()
            .into_bytes(),
        ] {
            client.send(&line);
            if line.trim_ascii().is_empty() {
                continue;
            }
            answers.push(client.answer());
        }
        client.writer.shutdown(std::net::Shutdown::Write).unwrap();
        answers
    })
    .await
    .unwrap();
    let codes: Vec<_> = answers
        .iter()
        .map(|(a, _)| a["error"]["code"].clone())
        .collect();
    assert_eq!(
        codes,
        [json!(-32700), json!(-32700), json!(-32600), Value::Null]
    );
    assert!(
        answers[..3]
            .iter()
            .all(|(a, len)| a["id"].is_null() && *len < 512)
    );
    assert_eq!(
        answers[3].0["result"]["protocolVersion"], 1,
        "{:?}",
        answers[3]
    );
    let served = tokio::time::timeout(LIMIT, served).await;
    assert!(
        matches!(served, Ok(Ok(Ok(())))),
        "serving ended cleanly when the client closed: {served:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_client_that_stops_reading_ends_the_agent_as_closing_its_input_does() {
    let (ours, theirs) = UnixStream::pair().unwrap();
    let read = blocking::Unblock::new(theirs.try_clone().unwrap());
    let write = blocking::Unblock::new(theirs);
    let served = tokio::spawn(agent(ScriptedClient::new()).serve_io(read, write));
    // The client stops reading but keeps its end of the input open.
    ours.shutdown(std::net::Shutdown::Read).unwrap();
    let mut writer = ours.try_clone().unwrap();
    let request = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": 1}});
    writeln!(writer, "{request}").unwrap();
    let served = tokio::time::timeout(LIMIT, served).await;
    assert!(
        matches!(served, Ok(Ok(Ok(())))),
        "serving ended cleanly when its answer found no reader: {served:?}"
    );
    drop(ours);
}
