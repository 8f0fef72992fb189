// The official A2A JavaScript SDK (@a2a-js/sdk 1.x) as a client of a mux A2A server.
//
// Usage: node a2a_client.mjs URL
//
// Runs every scenario against the example server (mux's quickstart agent, offline) and
// prints one JSON report on stdout for the Rust test to check: card discovery, send, stream,
// get, list, an input-required approval answered by the client, cancel, and subscribe after
// a dropped stream.
import { randomUUID } from "node:crypto";
import { SendMessageRequest, taskStateToJSON } from "@a2a-js/sdk";
import { ClientFactory, ClientFactoryOptions } from "@a2a-js/sdk/client";

const url = process.argv[2];

function request(text, taskId) {
  const message = { messageId: randomUUID(), role: "ROLE_USER", parts: [{ text }] };
  if (taskId) message.taskId = taskId;
  return SendMessageRequest.fromJSON({ message });
}

function textOf(parts) {
  return (parts ?? []).map((p) => (p.content?.$case === "text" ? p.content.value : "")).join("");
}

async function collect(stream, limit) {
  const out = { kinds: [], states: [], taskId: null, answer: null };
  for await (const event of stream) {
    const { $case, value } = event.payload;
    out.kinds.push($case);
    if ($case === "task") {
      out.states.push(taskStateToJSON(value.status.state));
      out.taskId ??= value.id;
      if (value.artifacts?.length) out.answer = textOf(value.artifacts[0].parts);
    } else if ($case === "statusUpdate") {
      out.states.push(taskStateToJSON(value.status.state));
      out.taskId ??= value.taskId;
    } else if ($case === "artifactUpdate") {
      out.taskId ??= value.taskId;
      out.answer = textOf(value.artifact.parts);
    }
    if (limit && out.kinds.length >= limit) break;
  }
  return out;
}

function client(config) {
  const options = ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
    clientConfig: config,
  });
  return new ClientFactory(options).createFromUrl(url);
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

const report = {};
const plain = await client({});
const polling = await client({ polling: true });
const card = await plain.getAgentCard();
report.card = {
  name: card.name,
  protocolVersion: card.supportedInterfaces[0].protocolVersion,
  binding: card.supportedInterfaces[0].protocolBinding,
  streaming: card.capabilities.streaming,
  push: card.capabilities.pushNotifications,
  skills: card.skills.map((s) => s.description),
};

// send (blocking): a read-only call runs unasked.
const sent = await plain.sendMessage(request('call read_file {"path": "README.md"}'));
report.send = {
  state: taskStateToJSON(sent.status.state),
  answer: textOf(sent.artifacts[0]?.parts),
  taskId: sent.id,
};

// stream.
report.stream = await collect(plain.sendMessageStream(request('call list_dir {"path": "."}')));

// get and list.
const got = await plain.getTask({ id: sent.id, historyLength: 1 });
report.get = { state: taskStateToJSON(got.status.state), history: got.history.length };
const listed = await plain.listTasks({});
report.list = { total: listed.totalSize, ids: listed.tasks.map((t) => t.id) };

// approval: the quickstart asks to run `git log`; the client approves.
const paused = await collect(plain.sendMessageStream(request("What is in this project?")));
const question = await plain.getTask({ id: paused.taskId });
const answered = await collect(plain.sendMessageStream(request("approve", paused.taskId)));
report.approval = {
  paused: paused.states.at(-1),
  question: textOf(question.status.message?.parts),
  answered: answered.states.at(-1),
  answer: answered.answer,
};

// cancel: a long command, approved, cancelled while it runs.
const asked = await plain.sendMessage(request('call bash {"command": "sleep 271.7"}'));
const running = await polling.sendMessage(request("yes", asked.id));
await sleep(500);
const cancelled = await plain.cancelTask({ id: asked.id });
report.cancel = {
  asked: taskStateToJSON(asked.status.state),
  running: taskStateToJSON(running.status.state),
  cancelled: taskStateToJSON(cancelled.status.state),
};

// subscribe: a stream dropped after its first item, picked up again.
const slow = await plain.sendMessage(request('call bash {"command": "sleep 1.5"}'));
const dropped = await collect(plain.sendMessageStream(request("approve", slow.id)), 1);
const resumed = await collect(plain.resubscribeTask({ id: slow.id }));
report.subscribe = {
  asked: taskStateToJSON(slow.status.state),
  dropped: dropped.kinds,
  resumed,
};

// errors the SDK reports: a task that does not exist.
try {
  await plain.getTask({ id: "no-such-task" });
  report.missing = "no error";
} catch (error) {
  report.missing = `${error.constructor.name}: ${error.message}`;
}

console.log(JSON.stringify(report));
