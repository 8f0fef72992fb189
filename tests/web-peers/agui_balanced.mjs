// @ag-ui/client's HttpAgent through a load balancer in front of several mux-web processes
// that share one PostgreSQL: a run that pauses on an approval, its answer (which lands on
// another process), and a run whose stream is dropped and reattached with Last-Event-ID.
// Usage: node agui_balanced.mjs <balancer-url> <token>. Exits 0 when all of it holds.
import { randomUUID } from "node:crypto";
import { HttpAgent, verifyEvents } from "@ag-ui/client";
import { EventSchema } from "@ag-ui/core/schemas";
import { from, lastValueFrom, toArray } from "rxjs";
import { checker, recorder as recordEvents } from "./check.mjs";
import { readSse } from "./sse.mjs";

const [base, token] = process.argv.slice(2);
if (!base || !token) {
  console.error("usage: node agui_balanced.mjs <balancer-url> <token>");
  process.exit(2);
}
const headers = { authorization: `Bearer ${token}` };

const check = checker();
const recorder = () => recordEvents(check);

const finished = (events) => events.filter((e) => e.type === "RUN_FINISHED").at(-1);

try {
  // 1. A run that pauses on an approval, answered by the next request (another process).
  const threadId = randomUUID();
  const agent = new HttpAgent({ url: `${base}/agui`, threadId, headers });
  agent.addMessage({ id: randomUUID(), role: "user", content: "look around" });
  const first = recorder();
  await agent.runAgent({}, first.subscriber);
  const paused = finished(first.events);
  check(paused?.outcome?.type === "interrupt", "the first run did not pause", first.events.map((e) => e.type));
  const [interrupt] = paused.outcome.interrupts;
  const second = recorder();
  await agent.runAgent(
    { resume: [{ interruptId: interrupt.id, status: "resolved", payload: { approved: true } }] },
    second.subscriber,
  );
  check(finished(second.events)?.outcome?.type === "success", "the answered run did not succeed", second.events.map((e) => e.type));
  check(second.events.some((e) => e.type === "TOOL_CALL_RESULT"), "the approved call has no result", second.events);
  const answer = agent.messages.filter((m) => m.role === "assistant" && m.content).at(-1);
  check(answer?.content?.length > 0, "no final answer", agent.messages);

  // 2. A streamed run, dropped after three events and reattached through the balancer.
  const runId = randomUUID();
  const input = {
    threadId: randomUUID(), runId, tools: [], context: [], state: {}, forwardedProps: {},
    messages: [{ id: randomUUID(), role: "user", content: 'call read_file {"path": "README.md"}' }],
  };
  const seen = [];
  const response = await fetch(`${base}/agui`, {
    method: "POST",
    headers: { ...headers, "content-type": "application/json", accept: "text/event-stream" },
    body: JSON.stringify(input),
  });
  check(response.ok, `POST /agui answered ${response.status}`);
  await readSse(response, (id, event) => {
    seen.push({ id, event });
    return seen.length < 3;
  });
  const lastId = seen.at(-1).id;
  const replay = await fetch(`${base}/agui/runs/${runId}/events`, {
    headers: { ...headers, "last-event-id": String(lastId) },
  });
  check(replay.ok, `reattach answered ${replay.status}`);
  await readSse(replay, (id, event) => {
    seen.push({ id, event });
  });
  const ids = seen.map((s) => s.id);
  check(ids.every((id, i) => i === 0 || id === ids[i - 1] + 1), "event ids have gaps or repeats", ids);
  const events = seen.map((s) => s.event);
  for (const event of events) check(EventSchema.safeParse(event).success, "an event does not match the schema", event);
  check(events.at(-1).type === "RUN_FINISHED" && events.at(-1).outcome.type === "success", "the reattached run did not finish", events.at(-1));
  const verified = await lastValueFrom(from(events).pipe(verifyEvents(false), toArray()));
  check(verified.length === events.length, "the client's verifier dropped events");
  console.log("ok: through the balancer");
} catch (error) {
  console.error("FAILED:", error);
  process.exit(1);
}
