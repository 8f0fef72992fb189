// A real AG-UI client (@ag-ui/client's HttpAgent, which verifies event order) against a
// mux-web server. Usage: node agui_client.mjs <scenario> <base-url>
// Exits 0 when the scenario holds; prints why and exits 1 otherwise.
import { execSync } from "node:child_process";
import { randomUUID } from "node:crypto";
import { HttpAgent, verifyEvents } from "@ag-ui/client";
import { EventSchema } from "@ag-ui/core/schemas";
import { from, lastValueFrom, toArray } from "rxjs";
import { checker, recorder as recordEvents } from "./check.mjs";
import { readSse } from "./sse.mjs";

const [scenario, base] = process.argv.slice(2);
if (!scenario || !base) {
  console.error("usage: node agui_client.mjs <scenario> <base-url>");
  process.exit(2);
}

const check = checker(scenario);
const recorder = () => recordEvents(check);

function agent(threadId) {
  return new HttpAgent({ url: `${base}/agui`, threadId });
}

function say(a, content) {
  a.addMessage({ id: randomUUID(), role: "user", content });
}

function finished(events) {
  return events.filter((e) => e.type === "RUN_FINISHED").at(-1);
}

function lastAssistantText(a) {
  const m = a.messages.filter((m) => m.role === "assistant" && m.content).at(-1);
  return m?.content ?? "";
}

async function approvalRun(prompt, payload) {
  const threadId = randomUUID();
  const a = agent(threadId);
  say(a, prompt);
  const first = recorder();
  await a.runAgent({}, first.subscriber);
  const end = finished(first.events);
  check(end?.outcome?.type === "interrupt", "the run did not end in an interrupt", first.events);
  const [interrupt] = end.outcome.interrupts;
  check(interrupt.reason === "tool_call" && interrupt.toolCallId, "the interrupt is not a tool call", interrupt);
  check(interrupt.responseSchema?.properties?.approved, "the interrupt has no responseSchema", interrupt);
  const second = recorder();
  await a.runAgent(
    { resume: [{ interruptId: interrupt.id, status: "resolved", payload }] },
    second.subscriber,
  );
  return { a, threadId, interrupt, first: first.events, second: second.events };
}

const scenarios = {
  async plain() {
    const threadId = randomUUID();
    const a = agent(threadId);
    say(a, "hello");
    const r = recorder();
    await a.runAgent({}, r.subscriber);
    check(r.events[0].type === "RUN_STARTED" && r.events[0].protocolVersion === "1.0", "no RUN_STARTED 1.0", r.events);
    const types = r.events.map((e) => e.type);
    for (const t of ["STEP_STARTED", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END", "STEP_FINISHED", "RUN_FINISHED"]) {
      check(types.includes(t), `no ${t}`, types);
    }
    const end = finished(r.events);
    check(end.outcome?.type === "success", "the outcome is not success", end);
    check(Array.isArray(end.usage) && end.usage.length === 1, "RUN_FINISHED has no usage", end);
    check(lastAssistantText(a) === "Hello from mux.", "wrong answer", a.messages);

    // A reloaded page: a new agent on the same thread gets the history first.
    const reloaded = agent(threadId);
    say(reloaded, "hello again");
    const again = recorder();
    await reloaded.runAgent({}, again.subscriber);
    check(again.events[1]?.type === "MESSAGES_SNAPSHOT", "the second run does not open with MESSAGES_SNAPSHOT", again.events.map((e) => e.type));
    const history = again.events[1].messages.map((m) => `${m.role}:${m.content ?? ""}`);
    check(history[0] === "user:hello" && history[1] === "assistant:Hello from mux." && history[2] === "user:hello again",
      "the snapshot is not the history", history);
    check(reloaded.messages.filter((m) => m.role === "assistant").length === 2, "the reloaded agent lacks messages", reloaded.messages);
  },

  async approve() {
    const { a, second } = await approvalRun("run echo", { approved: true });
    const result = second.find((e) => e.type === "TOOL_CALL_RESULT");
    check(result?.content.includes("approved-output"), "no tool result with the command output", second);
    check(finished(second).outcome.type === "success", "the resumed run did not succeed", finished(second));
    check(lastAssistantText(a).startsWith("Result: approved-output"), "wrong final answer", a.messages);
  },

  async deny() {
    const { a, second } = await approvalRun("run echo", { approved: false, reason: "not today" });
    check(!second.some((e) => e.type === "TOOL_CALL_RESULT" && e.content.includes("approved-output")), "the denied command ran", second);
    check(lastAssistantText(a).includes("the user denied this call: not today"), "the model did not see the reason", a.messages);
  },

  async frontend() {
    const threadId = randomUUID();
    const a = agent(threadId);
    const tools = [{ name: "pick_color", description: "Asks the user for a color", parameters: { type: "object", properties: {} } }];
    say(a, "pick a color");
    const first = recorder();
    await a.runAgent({ tools }, first.subscriber);
    const end = finished(first.events);
    check(end.outcome?.type === "success" && end.outcome.pendingToolCallIds?.length === 1, "no pending frontend call", end);
    const [callId] = end.outcome.pendingToolCallIds;
    const start = first.events.find((e) => e.type === "TOOL_CALL_START");
    check(start?.toolCallName === "pick_color" && start.toolCallId === callId, "no TOOL_CALL_START for the frontend tool", first.events);
    a.addMessage({ id: randomUUID(), role: "tool", toolCallId: callId, content: "blue" });
    const second = recorder();
    await a.runAgent({ tools }, second.subscriber);
    check(finished(second.events).outcome.type === "success", "the second run did not succeed", second.events);
    check(lastAssistantText(a) === "You picked blue", "the model did not get the result", a.messages);
  },

  async reattach() {
    const threadId = randomUUID();
    const runId = randomUUID();
    const input = { threadId, runId, messages: [{ id: randomUUID(), role: "user", content: "slow" }], tools: [], context: [] };
    const seen = [];
    const response = await fetch(`${base}/agui`, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "text/event-stream" },
      body: JSON.stringify(input),
    });
    check(response.ok, `POST /agui answered ${response.status}`);
    await readSse(response, (id, event) => {
      seen.push({ id, event });
      return seen.length < 4; // drop the connection after four events
    });
    await new Promise((r) => setTimeout(r, 400));
    const lastId = seen.at(-1).id;
    const replay = await fetch(`${base}/agui/runs/${runId}/events`, { headers: { "last-event-id": String(lastId) } });
    check(replay.ok, `reattach answered ${replay.status}`);
    await readSse(replay, (id, event) => {
      seen.push({ id, event });
    });
    const ids = seen.map((s) => s.id);
    check(ids.every((id, i) => id === i + 1), "event ids are not 1..n without gaps or duplicates", ids);
    const events = seen.map((s) => s.event);
    for (const event of events) check(EventSchema.safeParse(event).success, "an event does not match the schema", event);
    check(events.at(-1).type === "RUN_FINISHED" && events.at(-1).outcome.type === "success", "the run did not finish", events.at(-1));
    check(events.filter((e) => e.type === "TOOL_CALL_RESULT").length === 5, "not every tick arrived", events.map((e) => e.type));
    // The whole sequence passes the client's own order verifier.
    const verified = await lastValueFrom(from(events).pipe(verifyEvents(false), toArray()));
    check(verified.length === events.length, "the verifier dropped events");
  },

  async cancel() {
    const threadId = randomUUID();
    const a = agent(threadId);
    // A duration no other process uses, so pgrep finds only this run's child.
    const seconds = 3000 + Math.floor(Math.random() * 6000) + process.pid % 1000;
    const child = `^sleep ${seconds}$`;
    say(a, `sleep ${seconds}`);
    const first = recorder();
    await a.runAgent({}, first.subscriber);
    const [interrupt] = finished(first.events).outcome.interrupts;
    const runId = randomUUID();
    let cancelled;
    const second = recorder();
    second.subscriber.onCustomEvent = ({ event }) => {
      if (event.name === "mux.tool_executing" && !cancelled) {
        cancelled = (async () => {
          await new Promise((r) => setTimeout(r, 300));
          const running = execSync(`pgrep -f '${child}' || true`).toString().trim();
          check(running !== "", "the sleep child is not running before the cancel");
          const response = await fetch(`${base}/agui/runs/${runId}/cancel`, {
            method: "POST",
            headers: { "content-type": "application/json" },
          });
          const body = await response.json();
          check(response.ok && body.cancelled === true, "the cancel was refused", body);
        })();
      }
    };
    const started = Date.now();
    await a.runAgent(
      { runId, resume: [{ interruptId: interrupt.id, status: "resolved", payload: { approved: true } }] },
      second.subscriber,
    );
    await cancelled;
    check(finished(second.events)?.outcome?.type === "cancelled", "the run did not end cancelled", second.events.map((e) => e.type));
    check(Date.now() - started < 20000, "the run was not stopped promptly");
    await new Promise((r) => setTimeout(r, 300));
    const left = execSync(`pgrep -f '${child}' || true`).toString().trim();
    check(left === "", `the sleep child survived the cancel (pids ${left})`);
  },
};

const run = scenarios[scenario];
if (!run) {
  console.error(`unknown scenario ${scenario}; known: ${Object.keys(scenarios).join(", ")}`);
  process.exit(2);
}
try {
  await run();
  console.log(`ok: ${scenario}`);
} catch (error) {
  console.error(`FAILED (${scenario}):`, error);
  process.exit(1);
}
