//! The client end of an ACP connection, as an editor drives it: JSON-RPC lines over a Unix
//! socket pair to the served agent. The ACP tests of this crate share it, included by path.

use std::time::Duration;

use mux::acp::AcpAgent;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader};

/// The client end of an ACP connection.
pub(crate) struct AcpClient {
    lines: tokio::io::Lines<BufReader<tokio::net::unix::OwnedReadHalf>>,
    writer: tokio::net::unix::OwnedWriteHalf,
    next_id: u64,
    /// How long a message may take (a hang detector).
    wait: Duration,
}

impl AcpClient {
    /// Serves `agent` on one end of a socket pair; returns the other end, which waits up to
    /// `wait` for each message.
    pub(crate) fn serve(agent: AcpAgent, wait: Duration) -> Self {
        let (ours, theirs) = std::os::unix::net::UnixStream::pair().unwrap();
        let reader = blocking::Unblock::new(theirs.try_clone().unwrap());
        let writer = blocking::Unblock::new(theirs);
        tokio::spawn(agent.serve_io(reader, writer));
        ours.set_nonblocking(true).unwrap();
        let (read, writer) = tokio::net::UnixStream::from_std(ours).unwrap().into_split();
        Self {
            lines: BufReader::new(read).lines(),
            writer,
            next_id: 0,
            wait,
        }
    }

    /// Sends one message.
    pub(crate) async fn send(&mut self, message: Value) {
        let mut line = message.to_string();
        line.push('\n');
        self.writer.write_all(line.as_bytes()).await.unwrap();
    }

    /// The next message from the agent.
    pub(crate) async fn next(&mut self) -> Result<Value, String> {
        let line = tokio::time::timeout(self.wait, self.lines.next_line())
            .await
            .map_err(|_| "the agent did not answer in time".to_owned())?
            .map_err(|e| e.to_string())?
            .ok_or("the agent hung up")?;
        serde_json::from_str(&line).map_err(|e| e.to_string())
    }

    /// Sends a request; its id.
    pub(crate) async fn request(&mut self, method: &str, params: Value) -> u64 {
        self.next_id += 1;
        let id = self.next_id;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        id
    }

    /// Reads until the response to `id`, approving every permission request (`allow_once`);
    /// the response and the notifications before it.
    pub(crate) async fn response(&mut self, id: u64) -> Result<(Value, Vec<Value>), String> {
        let mut notes = Vec::new();
        loop {
            let message = self.next().await?;
            if message["method"] == "session/request_permission" {
                let reply = json!({"jsonrpc": "2.0", "id": message["id"],
                    "result": {"outcome": {"outcome": "selected", "optionId": "allow_once"}}});
                self.send(reply).await;
            } else if message.get("method").is_some() {
                notes.push(message);
            } else if message["id"] == json!(id) {
                return Ok((message, notes));
            }
        }
    }

    /// Sends a request and reads until its response ([`AcpClient::response`]).
    pub(crate) async fn call(
        &mut self,
        method: &str,
        params: Value,
    ) -> Result<(Value, Vec<Value>), String> {
        let id = self.request(method, params).await;
        self.response(id).await
    }
}
