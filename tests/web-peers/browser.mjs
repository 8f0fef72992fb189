// The web_agent example's page (mux-web's, feature `page`) in headless Chromium (Debian's
// `chromium`), driven by playwright-core: the styles apply under the page's
// Content-Security-Policy with no violation, send a prompt, approve the `git log` call, see the
// tool results and the answer, reload and see the history. Usage: node browser.mjs <page-url> <screenshot-dir>
// With EXPECT_TITLE and EXPECT_PLACEHOLDER set (a branded page, `PageOptions`), the tab's title,
// the heading and the prompt box's placeholder must be those texts.
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { chromium } from "playwright-core";

const [url, shots] = process.argv.slice(2);
const executablePath = process.env.CHROMIUM ?? "/usr/bin/chromium";

function check(condition, message) {
  if (!condition) throw new Error(message);
}

mkdirSync(shots, { recursive: true });
const browser = await chromium.launch({ executablePath, args: ["--no-sandbox", "--disable-gpu"] });
let page;
try {
  page = await browser.newPage({ viewport: { width: 900, height: 900 } });
  const errors = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  // A Content-Security-Policy violation is logged as a console error ("Refused to ...").
  page.on("console", (m) => {
    if (m.type() === "error" && /Content Security Policy|Refused to/i.test(m.text())) errors.push(m.text());
  });
  const response = await page.goto(url);
  check((response.headers()["content-security-policy"] ?? "").includes("script-src 'self'"), "the page has no CSP");
  const background = await page.evaluate(() => getComputedStyle(document.body).backgroundColor);
  if (process.env.EXPECT_TITLE) {
    const title = await page.title();
    check(title === process.env.EXPECT_TITLE, `the tab's title is ${JSON.stringify(title)}`);
    const heading = await page.locator("h1").textContent();
    check(heading === process.env.EXPECT_TITLE, `the heading is ${JSON.stringify(heading)}`);
    check((await page.locator("script:not([src])").count()) === 0, "the title made an inline script");
  }
  if (process.env.EXPECT_PLACEHOLDER) {
    const placeholder = await page.getAttribute("#prompt", "placeholder");
    check(placeholder === process.env.EXPECT_PLACEHOLDER, `the placeholder is ${JSON.stringify(placeholder)}`);
  }
  check(background === "rgb(246, 246, 244)", `the stylesheet did not apply: body background ${background}`);
  await page.fill("#prompt", "What is this project?");
  await page.click("#send");

  await page.waitForSelector("button.approve", { timeout: 30000 });
  const tools = await page.locator(".tool-name").allTextContents();
  check(tools.some((t) => t.includes("list_dir")), `no list_dir call shown: ${tools}`);
  check(tools.some((t) => t.includes("bash") && t.includes("git log")), `no git log call shown: ${tools}`);
  const question = await page.locator(".interrupt-message").textContent();
  check(question.includes("git log"), `the approval does not name the command: ${question}`);
  await page.screenshot({ path: join(shots, "web-page-approval.png") });

  await page.click("button.approve");
  await page.waitForFunction(
    () => [...document.querySelectorAll(".assistant")].some((e) => e.textContent.includes("(offline)")),
    null,
    { timeout: 30000 },
  );
  const results = await page.locator(".tool-result").count();
  check(results >= 3, `expected three tool results (list_dir, read_file, bash), saw ${results}`);
  const answer = (await page.locator(".assistant").last().textContent()) ?? "";
  check(!answer.includes("not allowed"), `the answer says the call was denied: ${answer}`);
  await page.screenshot({ path: join(shots, "web-page-answer.png") });

  await page.reload();
  await page.waitForFunction(
    () => [...document.querySelectorAll(".assistant")].some((e) => e.textContent.includes("(offline)")),
    null,
    { timeout: 15000 },
  );
  const user = await page.locator(".user").allTextContents();
  check(user.includes("What is this project?"), `the history lacks the prompt: ${user}`);
  check((await page.locator(".tool-result").count()) >= 3, "the history lacks the tool results");
  check((await page.locator("button.approve").count()) === 0, "an answered approval is shown again");
  await page.screenshot({ path: join(shots, "web-page-after-reload.png") });
  check(errors.length === 0, `page errors: ${errors.join("; ")}`);
  console.log("ok: browser");
} catch (error) {
  if (page) await page.screenshot({ path: join(shots, "web-page-failure.png") }).catch(() => {});
  console.error(`FAILED (browser): ${error.message}`);
  process.exitCode = 1;
} finally {
  await browser.close();
}
