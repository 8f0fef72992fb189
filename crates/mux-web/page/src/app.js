// mux-web's chat page (feature `page`): an @ag-ui/client HttpAgent on the server's /agui.
// Streams text, shows tool calls and their results, asks Approve/Deny for interrupts, and
// keeps the thread (and so the history, loaded from the server) across reloads.
// The server's token comes in the URL (`/?token=…`, as the server prints it); the page keeps it
// for this tab, takes it out of the address bar, and sends it on every request.
import { HttpAgent } from "@ag-ui/client";

const $ = (id) => document.getElementById(id);
// Where the server mounted its routes (`PageOptions::prefix`; empty at the root).
const BASE = document.querySelector('meta[name="mux-base"]')?.content ?? "";
// Two pages on one origin under different prefixes keep their threads and tokens apart.
const THREAD_KEY = `mux-web-thread:${BASE}`;
const TOKEN_KEY = `mux-web-token:${BASE}`;

const fromUrl = new URLSearchParams(location.search).get("token");
if (fromUrl) {
  sessionStorage.setItem(TOKEN_KEY, fromUrl);
  history.replaceState(null, "", location.pathname);
}
const token = sessionStorage.getItem(TOKEN_KEY);
const headers = token ? { Authorization: `Bearer ${token}` } : {};

let threadId = localStorage.getItem(THREAD_KEY);
if (!threadId) {
  threadId = crypto.randomUUID();
  localStorage.setItem(THREAD_KEY, threadId);
}

const agent = new HttpAgent({ url: `${BASE}/agui`, threadId, headers });
let busy = false;

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

function render() {
  const log = $("log");
  log.replaceChildren();
  const results = new Map(
    agent.messages.filter((m) => m.role === "tool").map((m) => [m.toolCallId, m]),
  );
  for (const message of agent.messages) {
    if (message.role === "user") {
      const text = typeof message.content === "string" ? message.content : "";
      log.append(el("div", "msg user", text));
    } else if (message.role === "assistant") {
      if (message.content) log.append(el("div", "msg assistant", message.content));
      for (const call of message.toolCalls ?? []) {
        const box = el("div", "tool");
        box.append(el("div", "tool-name", `tool: ${call.function.name} ${call.function.arguments}`));
        const result = results.get(call.id);
        if (result) {
          const text = typeof result.content === "string" ? result.content : JSON.stringify(result.content);
          box.append(el("pre", "tool-result", text));
        }
        log.append(box);
      }
    }
  }
  const pending = agent.pendingInterrupts ?? [];
  const approvals = $("approvals");
  approvals.replaceChildren();
  for (const interrupt of pending) {
    const box = el("div", "interrupt");
    box.append(el("div", "interrupt-message", interrupt.message ?? interrupt.reason));
    const approve = el("button", "approve", "Approve");
    approve.onclick = () => answer(interrupt, true);
    const deny = el("button", "deny", "Deny");
    deny.onclick = () => answer(interrupt, false);
    box.append(approve, deny);
    approvals.append(box);
  }
  $("status").textContent = busy ? "working…" : pending.length ? "waiting for your approval" : "";
  $("send").disabled = busy || pending.length > 0;
  log.scrollTop = log.scrollHeight;
}

async function run(options) {
  busy = true;
  render();
  try {
    await agent.runAgent(options, {
      onMessagesChanged: render,
      onRunFailed: ({ error }) => {
        $("status").textContent = `error: ${error.message}`;
      },
    });
  } catch (error) {
    console.error(error);
    $("error").textContent = String(error.message ?? error);
  } finally {
    busy = false;
    render();
  }
}

function answer(interrupt, approved) {
  const payload = approved ? { approved: true } : { approved: false, reason: "denied in the page" };
  run({ resume: [{ interruptId: interrupt.id, status: "resolved", payload }] });
}

async function send(event) {
  event.preventDefault();
  const text = $("prompt").value.trim();
  if (!text || busy) return;
  $("prompt").value = "";
  agent.addMessage({ id: crypto.randomUUID(), role: "user", content: text });
  await run({});
}

async function loadHistory() {
  const response = await fetch(`${BASE}/agui/threads/${threadId}/messages`, { headers });
  if (response.status === 401) {
    $("error").textContent = "The server wants its token: open the URL it printed (…/?token=…).";
  } else if (response.ok) {
    const body = await response.json();
    agent.setMessages(body.messages);
    agent.pendingInterrupts = body.interrupts ?? [];
  }
  render();
}

$("form").addEventListener("submit", send);
$("new").addEventListener("click", () => {
  localStorage.removeItem(THREAD_KEY);
  location.reload();
});
loadHistory();
