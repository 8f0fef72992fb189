// A scripted ACP client on @agentclientprotocol/sdk 2.x (the stable ACP v1 entrypoint and its
// app API: `client().onRequest(...).onNotification(...).connect(stream)`): launches the agent
// given as `node client.mjs SCENARIO AGENT [ARGS...]` on stdio and checks one behaviour.
// Prints `ok SCENARIO` and exits 0, or prints what went wrong and exits 1.
//
// Scenarios:
//   cancel     cancel mid-turn: the turn ends `cancelled` and the `sleep` bash ran is gone
//   load       session/load replays the conversation, in order, before it answers
//   plan       set_mode plan (current_mode_update), after which a write is refused
//   mcp        an MCP server passed in session/new (server-everything) whose tool is called
//   fs         fs delegation: read_file sees the client's unsaved buffer, write_file writes it
//   refusals   a line of bad bytes, cwd `/`, a missing cwd and an unknown session in load are
//              refused with JSON-RPC errors this SDK reads, and the same agent goes on
//
// Every scenario also checks, when it closes a connection, that the SDK read everything the
// agent sent as it was sent (each `session/update` and request on the wire reached its handler
// with the same params: the SDK's reader drops, defaults or strips what its stable v1 schema
// rejects or does not know) and that the client refused none of the agent's requests.

import { spawn, execFileSync } from "node:child_process";
import { Readable, Writable } from "node:stream";
import { mkdtempSync, writeFileSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import * as acp from "@agentclientprotocol/sdk";

const [scenario, agentCommand, ...agentArgs] = process.argv.slice(2);
const here = dirname(fileURLToPath(import.meta.url));

function fail(message) {
  console.error(`FAIL ${scenario}: ${message}`);
  process.exit(1);
}
function check(condition, message) {
  if (!condition) fail(message);
}
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** A pass-through that records, in order, every message that crosses it. */
function tap(log) {
  return new TransformStream({
    transform(message, controller) {
      log.push(message);
      controller.enqueue(message);
    },
  });
}

/** Starts the agent and connects; `answer` picks the option for permission requests. */
function connect({ cwd, answer = "allow_once", files = new Map() }) {
  const child = spawn(agentCommand, agentArgs, {
    cwd,
    stdio: ["pipe", "pipe", "inherit"],
    env: { ...process.env },
  });
  const updates = [];
  const asked = [];
  const written = new Map();
  // What the SDK handed the handlers: each session/update's params in order, each request's
  // params by its JSON-RPC id.
  const notified = [];
  const handled = new Map();
  // The JSON-RPC messages as they crossed the pipes: `received` from the agent, `sent` to it.
  const received = [];
  const sent = [];
  // session/update first, so its handler runs before any other handler of this app.
  const app = acp
    .client({ name: "mux-acp-test-client" })
    .onNotification(acp.methods.client.session.update, ({ params }) => {
      notified.push(params);
      updates.push(params.update);
    })
    .onRequest(acp.methods.client.session.requestPermission, ({ params, requestId }) => {
      handled.set(requestId, params);
      asked.push(params);
      return { outcome: { outcome: "selected", optionId: answer } };
    })
    .onRequest(acp.methods.client.fs.readTextFile, ({ params, requestId }) => {
      handled.set(requestId, params);
      if (!files.has(params.path)) throw acp.RequestError.resourceNotFound(params.path);
      return { content: files.get(params.path) };
    })
    .onRequest(acp.methods.client.fs.writeTextFile, ({ params, requestId }) => {
      handled.set(requestId, params);
      written.set(params.path, params.content);
      return {};
    });
  const wire = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
  const outgoing = tap(sent);
  void outgoing.readable.pipeTo(wire.writable).catch(() => {});
  const connection = app.connect({
    readable: wire.readable.pipeThrough(tap(received)),
    writable: outgoing.writable,
  });
  const { agent, closed } = connection;
  return { child, agent, closed, updates, asked, written, notified, handled, received, sent };
}

async function open(peer, cwd, { fs = false, mcpServers = [] } = {}) {
  const init = await peer.agent.request(acp.methods.agent.initialize, {
    protocolVersion: acp.PROTOCOL_VERSION,
    clientCapabilities: { fs: { readTextFile: fs, writeTextFile: fs }, terminal: false },
  });
  check(init.protocolVersion === 1, `protocol version ${init.protocolVersion}`);
  const session = await peer.agent.request(acp.methods.agent.session.new, { cwd, mcpServers });
  return { init, session };
}

const prompt = (peer, sessionId, text) =>
  peer.agent.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text }] });

/** The response `peer` received to the request it sent as `method`, and the messages before it. */
function answerTo(peer, method) {
  const request = peer.sent.find((m) => m.method === method && "id" in m);
  check(request, `no ${method} request was sent`);
  const at = peer.received.findIndex((m) => !("method" in m) && m.id === request.id);
  check(at >= 0, `no response to ${method} on the wire`);
  return { response: peer.received[at], before: peer.received.slice(0, at) };
}

/** `value` as JSON with its object keys sorted and absent (undefined) members left out. */
function canonical(value) {
  const sorted = (v) =>
    Array.isArray(v)
      ? v.map(sorted)
      : v !== null && typeof v === "object"
        ? Object.fromEntries(
            Object.keys(v)
              .sort()
              .filter((k) => v[k] !== undefined)
              .map((k) => [k, sorted(v[k])]),
          )
        : v;
  return JSON.stringify(sorted(value));
}

/**
 * Checks that the SDK read everything the agent sent on this connection as it was sent: its
 * stable v1 schema drops a session/update it rejects, defaults a field it rejects, skips a list
 * item it rejects and strips a field it does not know, and answers a request it rejects itself.
 */
function checkReadAsSent(peer) {
  const onWire = peer.received.filter((m) => m.method === acp.methods.client.session.update);
  check(
    onWire.length === peer.notified.length,
    `the SDK passed on ${peer.notified.length} of the ${onWire.length} session/update ` +
      `notifications the agent sent: ${JSON.stringify(onWire.map((m) => m.params.update?.sessionUpdate))}`,
  );
  onWire.forEach((m, i) => {
    const sent = canonical(m.params);
    const read = canonical(peer.notified[i]);
    check(sent === read, `the SDK read session/update ${i} as\n  ${read}\nnot as sent\n  ${sent}`);
  });
  const requests = peer.received.filter((m) => "method" in m && "id" in m);
  const answers = new Map(peer.sent.filter((m) => !("method" in m)).map((m) => [m.id, m]));
  for (const request of requests) {
    check(
      peer.handled.has(request.id),
      `the agent's ${request.method} reached no handler; the SDK answered ${JSON.stringify(answers.get(request.id))}`,
    );
    const sent = canonical(request.params);
    const read = canonical(peer.handled.get(request.id));
    check(sent === read, `the SDK read ${request.method} as\n  ${read}\nnot as sent\n  ${sent}`);
  }
  for (const request of requests) {
    const answer = answers.get(request.id);
    // resourceNotFound is the one refusal this client's own handlers make (fs).
    check(
      answer && (!answer.error || answer.error.code === -32002),
      `the client answered the agent's ${request.method} with ${JSON.stringify(answer)}`,
    );
  }
}

/** Closes the agent's stdin; it must exit and the connection end (all read) within 2 s. */
async function close(peer) {
  peer.child.stdin.end();
  const exited = new Promise((resolve) => peer.child.once("exit", resolve));
  const timeout = sleep(2000).then(() => "timeout");
  if ((await Promise.race([Promise.all([exited, peer.closed]), timeout])) === "timeout") {
    peer.child.kill("SIGKILL");
    fail("the agent did not exit and end its output within 2 s of stdin closing");
  }
  checkReadAsSent(peer);
}

function processesMatching(pattern) {
  try {
    return execFileSync("pgrep", ["-f", pattern], { encoding: "utf8" }).trim();
  } catch {
    return "";
  }
}

const scenarios = {
  async cancel() {
    const cwd = mkdtempSync(join(tmpdir(), "acp-cancel-"));
    const peer = connect({ cwd });
    const { session } = await open(peer, cwd);
    const marker = "sleep 47.25";
    const turn = prompt(peer, session.sessionId, `call bash {"command": "${marker}"}`);
    for (let i = 0; i < 200 && !processesMatching(marker); i++) await sleep(50);
    check(processesMatching(marker) !== "", "the sleep never started");
    await peer.agent.notify(acp.methods.agent.session.cancel, { sessionId: session.sessionId });
    const result = await turn;
    check(result.stopReason === "cancelled", `stop reason ${result.stopReason}`);
    for (let i = 0; i < 40 && processesMatching(marker); i++) await sleep(50);
    check(processesMatching(marker) === "", "the sleep outlived the cancelled turn (orphan)");
    const statuses = peer.updates
      .filter((u) => u.sessionUpdate === "tool_call_update")
      .map((u) => u.status)
      .filter(Boolean);
    check(statuses.includes("in_progress"), `statuses ${statuses}`);
    await close(peer);
  },

  async load() {
    const cwd = mkdtempSync(join(tmpdir(), "acp-load-"));
    writeFileSync(join(cwd, "README.md"), "# Replayed project\n");
    const first = connect({ cwd, answer: "reject_once" });
    const { init, session } = await open(first, cwd);
    check(init.agentCapabilities.loadSession === true, "loadSession is not advertised");
    const done = await prompt(first, session.sessionId, "What is this project?");
    check(done.stopReason === "end_turn", `stop reason ${done.stopReason}`);
    await close(first);

    const second = connect({ cwd });
    await second.agent.request(acp.methods.agent.initialize, {
      protocolVersion: acp.PROTOCOL_VERSION,
      clientCapabilities: {},
    });
    const listed = await second.agent.request(acp.methods.agent.session.list, { cwd });
    check(listed.sessions.some((s) => s.sessionId === session.sessionId), "session/list misses the session");
    let answered = false;
    const before = [];
    const loading = second.agent
      .request(acp.methods.agent.session.load, { sessionId: session.sessionId, cwd, mcpServers: [] })
      .then((r) => {
        answered = true;
        before.push(...second.updates);
        return r;
      });
    const loaded = await loading;
    check(answered && loaded !== undefined, "no load response");
    // On the wire, too: the answer is a result object, and every update of the session came
    // before it (the SDK hands the result back as {} when the agent sends null).
    const { response, before: earlier } = answerTo(second, acp.methods.agent.session.load);
    check(
      response.result !== null && typeof response.result === "object",
      `session/load answered ${JSON.stringify(response)}`,
    );
    const replayed = earlier.filter((m) => m.method === acp.methods.client.session.update);
    check(
      replayed.every((m) => m.params.sessionId === session.sessionId),
      `the replay names other sessions: ${JSON.stringify(replayed.map((m) => m.params.sessionId))}`,
    );
    check(
      JSON.stringify(replayed.map((m) => m.params.update.sessionUpdate)) ===
        JSON.stringify(before.map((u) => u.sessionUpdate)),
      "the SDK handed over the replay in another order than it came on the wire",
    );
    // The example's slash commands follow the replay.
    check(before.at(-1)?.sessionUpdate === "available_commands_update", "no commands after the replay");
    before.pop();
    const kinds = before.map((u) => u.sessionUpdate);
    const expected = ["user_message_chunk", "tool_call", "tool_call", "tool_call", "agent_message_chunk"];
    check(JSON.stringify(kinds) === JSON.stringify(expected), `replayed ${JSON.stringify(kinds)}`);
    const calls = before.filter((u) => u.sessionUpdate === "tool_call");
    check(calls.map((c) => c.rawInput && Object.keys(c.rawInput)[0]).join() === "path,path,command", "calls out of order");
    check(calls[2].status === "failed", "the refused git log is not failed in the replay");
    check(before[4].content.text.includes("Replayed project"), before[4].content.text);
    await close(second);
    // Now that all is read: nothing of the session came after the answer.
    check(
      second.received.filter((m) => m.method === acp.methods.client.session.update).length === replayed.length,
      "an update of the loaded session came after the session/load answer",
    );
  },

  async plan() {
    const cwd = mkdtempSync(join(tmpdir(), "acp-plan-"));
    const peer = connect({ cwd });
    const { session } = await open(peer, cwd);
    check(session.modes.availableModes.map((m) => m.id).join() === "default,acceptEdits,plan,bypassPermissions", "modes");
    await peer.agent.request(acp.methods.agent.session.setMode, { sessionId: session.sessionId, modeId: "plan" });
    await sleep(50);
    const mode = peer.updates.find((u) => u.sessionUpdate === "current_mode_update");
    check(mode && mode.currentModeId === "plan", "no current_mode_update to plan");
    const done = await prompt(peer, session.sessionId, 'call write_file {"path": "x.txt", "content": "no"}');
    check(done.stopReason === "end_turn", `stop reason ${done.stopReason}`);
    check(!existsSync(join(cwd, "x.txt")), "the write happened in plan mode");
    check(peer.asked.length === 0, "plan mode asked instead of refusing");
    const last = peer.updates.filter((u) => u.sessionUpdate === "tool_call_update").pop();
    check(last.status === "failed", `write status ${last.status}`);
    await close(peer);
  },

  async mcp() {
    const cwd = mkdtempSync(join(tmpdir(), "acp-mcp-"));
    const peer = connect({ cwd });
    const server = join(here, "node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    const bad = { name: "broken", command: "/nonexistent/mcp-server", args: [], env: [] };
    const good = { name: "everything", command: process.execPath, args: [server, "stdio"], env: [] };
    const { session } = await open(peer, cwd, { mcpServers: [good, bad] });
    const done = await prompt(peer, session.sessionId, 'call mcp__everything__echo {"message": "hello over acp"}');
    check(done.stopReason === "end_turn", `stop reason ${done.stopReason}`);
    const text = peer.updates
      .filter((u) => u.sessionUpdate === "agent_message_chunk")
      .map((u) => u.content.text)
      .join("");
    check(text.includes("broken") && text.includes("unavailable"), `the failed server was not reported: ${text}`);
    check(text.includes("hello over acp"), `the echo did not come back: ${text}`);
    await close(peer);
  },

  async fs() {
    const cwd = mkdtempSync(join(tmpdir(), "acp-fs-"));
    writeFileSync(join(cwd, "notes.txt"), "saved on disk\n");
    const files = new Map([[join(cwd, "notes.txt"), "unsaved buffer text\n"]]);
    const peer = connect({ cwd, files });
    const { session } = await open(peer, cwd, { fs: true });
    const read = await prompt(peer, session.sessionId, 'call read_file {"path": "notes.txt"}');
    check(read.stopReason === "end_turn", `stop reason ${read.stopReason}`);
    const said = peer.updates
      .filter((u) => u.sessionUpdate === "agent_message_chunk")
      .map((u) => u.content.text)
      .join("");
    check(said.includes("unsaved buffer text"), `read_file did not see the buffer: ${said}`);
    await prompt(peer, session.sessionId, 'call write_file {"path": "out.txt", "content": "via editor"}');
    check(peer.written.get(join(cwd, "out.txt")) === "via editor", "write_file did not go through the editor");
    check(!existsSync(join(cwd, "out.txt")), "write_file also wrote the disk");
    await close(peer);
  },

  async refusals() {
    const cwd = mkdtempSync(join(tmpdir(), "acp-refusals-"));
    const peer = connect({ cwd });
    const { session } = await open(peer, cwd);
    // Bytes that are not UTF-8, between two of the SDK's own messages.
    peer.child.stdin.write(Buffer.from([0x7b, 0x22, 0xff, 0xc0, 0xaf, 0x22, 0x7d, 0x0a]));
    const refused = async (what, call) => {
      try {
        await call();
      } catch (err) {
        check(err.code === -32602, `${what}: code ${err.code} (${JSON.stringify(err)})`);
        return JSON.stringify(err.data ?? err.message);
      }
      fail(`${what} was accepted`);
    };
    const root = await refused("cwd /", () => peer.agent.request(acp.methods.agent.session.new, { cwd: "/", mcpServers: [] }));
    check(root.includes("whole filesystem"), `cwd / refusal says ${root}`);
    const missing = join(cwd, "absent");
    const gone = await refused("a missing cwd", () => peer.agent.request(acp.methods.agent.session.new, { cwd: missing, mcpServers: [] }));
    check(gone.includes("cannot be resolved"), `missing cwd refusal says ${gone}`);
    const unknown = await refused("an unknown session", () =>
      peer.agent.request(acp.methods.agent.session.load, { sessionId: "no-such-session", cwd, mcpServers: [] }),
    );
    check(unknown.includes("unknown session"), `unknown session refusal says ${unknown}`);
    // The bad bytes were answered too: a parse error, with the null id of a request unread.
    const parseErrors = peer.received.filter((m) => m.id === null && m.error);
    check(
      parseErrors.length === 1 && parseErrors[0].error.code === -32700,
      `the bad bytes were answered with ${JSON.stringify(parseErrors)}`,
    );
    const done = await prompt(peer, session.sessionId, 'call list_dir {"path": "."}');
    check(done.stopReason === "end_turn", `stop reason ${done.stopReason}`);
    await close(peer);
  },
};

const run = scenarios[scenario];
if (!run) fail(`unknown scenario (one of ${Object.keys(scenarios).join(", ")})`);
const limit = setTimeout(() => fail("timed out after 60 s"), 60_000);
try {
  await run();
  clearTimeout(limit);
  console.log(`ok ${scenario}`);
  process.exit(0);
} catch (err) {
  fail(err && err.stack ? err.stack : JSON.stringify(err));
}
