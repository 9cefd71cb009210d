/**
 * The offline docs page in a real browser (Debian's chromium through playwright-core): it loads
 * and runs its API client with no request leaving the server, and shows no control that needs an
 * internet service. Skipped where no chromium is installed (CHROMIUM_PATH overrides the path).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { hasChromium, openBrowser, type TestBrowser } from "../support/browser.ts";
import { type RunningServer, startServer } from "../support/server.ts";

describe.skipIf(!hasChromium())("/v1/docs in chromium", () => {
  let server: RunningServer;
  let browser: TestBrowser;
  beforeAll(async () => {
    server = await startServer();
    browser = await openBrowser({ origin: server.url, certPem: server.ca });
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await server?.stop();
  });

  test("loads, sends a test request, and never asks anything of another host", async () => {
    const page = await browser.newPage();
    const requested: string[] = [];
    page.on("request", (r) => requested.push(r.url()));
    // The page's own CSP (it shares the dashboard's origin) must not break it: no refusal in the console.
    const errors: string[] = [];
    page.on(
      "console",
      (m) => void (m.type() === "error" && !m.text().startsWith("Failed to load resource") && errors.push(m.text())),
    );
    // The browser asks for /favicon.ico on its own; nothing else may be missing.
    page.on(
      "response",
      (r) =>
        void (
          r.status() >= 400 &&
          new URL(r.url()).pathname !== "/favicon.ico" &&
          errors.push(`${r.status()} ${r.url()}`)
        ),
    );
    page.on("pageerror", (e) => errors.push(e.message));
    const answer = await page.goto(`${server.url}/v1/docs#tag/operations/GET/health`, { waitUntil: "networkidle" });
    expect(answer?.headers()["content-security-policy"]).toMatch(
      /(^|; )script-src 'self'( 'sha256-[A-Za-z0-9+/=]+')?;/,
    );
    expect(answer?.headers()["x-frame-options"]).toBe("DENY");
    // The page renders the operations after the network is idle; on a loaded machine that takes a while.
    await page
      .getByRole("button", { name: /Test Request/ })
      .first()
      .waitFor({ timeout: 20_000 });
    const labels = (await page.locator("button:visible, a:visible").allInnerTexts())
      .map((t) => t.trim())
      .filter(Boolean);
    expect(labels.some((l) => l.startsWith("Test Request"))).toBe(true);
    for (const online of [/Ask AI/i, /MCP/, /Deploy/, /Developer Tools/, /Share/, /Configure/, /Powered by/i]) {
      expect(labels.filter((l) => online.test(l))).toEqual([]);
    }
    // The built-in client sends straight to this server (never through Scalar's hosted proxy).
    await page
      .getByRole("button", { name: /Test Request/ })
      .first()
      .click();
    await page.getByRole("button", { name: /^Send/ }).first().click();
    await page.getByText("200 OK").first().waitFor({ timeout: 10_000 });
    expect(requested.filter((url) => new URL(url).origin !== server.url)).toEqual([]);
    expect(requested).toContain(`${server.url}/health`);
    expect(errors).toEqual([]);
    await page.close();
  }, 60_000);
});
