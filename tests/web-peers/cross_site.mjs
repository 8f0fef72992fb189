// A page on another origin (a second loopback port, served here) that attacks the server the
// way the issue found it could be: a no-cors `text/plain` fetch and form POSTs (text/plain and
// urlencoded) to /agui, each carrying a RunAgentInput. Headless Chromium runs the page; this
// script prints what the browser saw as JSON: {"<attempt>": <HTTP status>}.
// Usage: node cross_site.mjs <server-base-url>
import { createServer } from "node:http";
import { chromium } from "playwright-core";

const [target] = process.argv.slice(2);
const executablePath = process.env.CHROMIUM ?? "/usr/bin/chromium";

const input = (thread) =>
  JSON.stringify({ threadId: thread, runId: `${thread}-run`, messages: [{ id: `${thread}-m`, role: "user", content: "run echo" }] });
// The classic text/plain form trick: name + "=" + value is one JSON document.
const formJson = input("evil-form-text");
const formName = formJson.slice(0, -1) + ',"x":"';
const attackerPage = `<!doctype html><html><body>
<iframe name="sink1"></iframe><iframe name="sink2"></iframe>
<form id="text" method="POST" action="${target}/agui?attempt=form-text" enctype="text/plain" target="sink1">
  <input type="hidden" name='${formName}' value='"}'>
</form>
<form id="url" method="POST" action="${target}/agui?attempt=form-urlencoded" target="sink2">
  <input type="hidden" name="threadId" value="evil-form-url">
</form>
<script>
(async () => {
  try {
    await fetch(${JSON.stringify(target)} + "/agui?attempt=fetch-no-cors", {
      method: "POST", mode: "no-cors", headers: { "Content-Type": "text/plain" },
      body: ${JSON.stringify(input("evil-fetch"))},
    });
  } catch (e) {}
  const loaded = (name) => new Promise((r) => document.querySelector('iframe[name="' + name + '"]').addEventListener("load", r, { once: true }));
  const one = loaded("sink1"); document.getElementById("text").submit(); await one;
  const two = loaded("sink2"); document.getElementById("url").submit(); await two;
  document.title = "done";
})();
</script></body></html>`;

const server = createServer((req, res) => {
  res.writeHead(200, { "content-type": "text/html" });
  res.end(attackerPage);
});
await new Promise((r) => server.listen(0, "127.0.0.1", r));
const attacker = `http://127.0.0.1:${server.address().port}/`;

const browser = await chromium.launch({ executablePath, args: ["--no-sandbox", "--disable-gpu"] });
const seen = {};
try {
  const page = await browser.newPage();
  page.on("response", (response) => {
    const url = new URL(response.url());
    const attempt = url.searchParams.get("attempt");
    if (attempt) seen[attempt] = response.status();
  });
  await page.goto(attacker);
  await page.waitForFunction(() => document.title === "done", null, { timeout: 20000 });
  await page.waitForTimeout(300);
  console.log(JSON.stringify({ attacker, seen }));
} catch (error) {
  console.error(`FAILED (cross_site): ${error.message}`);
  process.exitCode = 1;
} finally {
  await browser.close();
  server.close();
}
