/**
 * A real browser for the dashboard tests and `npm run screenshots`: Debian's chromium driven by
 * playwright-core (no browser download), headless, with a fresh profile in a temporary folder.
 * It trusts exactly one certificate, the service's generated one (by its public-key hash), and
 * records what the tests check on every page: requests to other origins, console errors,
 * uncaught exceptions and Content-Security-Policy violations.
 *
 *   const b = await openBrowser({ origin: server.url, certPem: server.ca });
 *   const page = await b.newPage();
 *   await page.goto(`${server.url}/internal/`);
 *   expect(b.problems()).toEqual([]);
 *   await b.close();
 */
import { createHash, X509Certificate } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type BrowserContext, chromium, type Page } from "playwright-core";

/** Debian's package puts the browser here; scripts/ci-setup.sh installs it. */
export const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";

/** Flags for a quiet, reproducible headless run that talks to nothing but the page's server. */
export const CHROMIUM_ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

export interface BrowserOptions {
  /** The service's origin (`https://127.0.0.1:port`): any request elsewhere is a problem. */
  origin: string;
  /** PEM of the service's certificate, trusted by its public-key hash (empty: plain HTTP). */
  certPem: string;
  viewport?: { width: number; height: number };
  colorScheme?: "light" | "dark";
  /** Device pixel ratio (screenshots use 1). */
  scale?: number;
  /** The browser's time zone (default UTC, so runs compare). */
  timezoneId?: string;
}

export interface TestBrowser {
  context: BrowserContext;
  newPage(): Promise<Page>;
  /** Everything wrong seen so far, one line each: foreign requests, console errors, page errors, CSP violations. */
  problems(): string[];
  /** Dialogs (alert/confirm) the pages opened, as "type: message". Confirm dialogs are accepted. */
  dialogs: string[];
  close(): Promise<void>;
}

/** True when the chromium executable is present (tests say so instead of failing obscurely). */
export function hasChromium(): boolean {
  return existsSync(CHROMIUM);
}

/** base64 SHA-256 of the certificate's SubjectPublicKeyInfo, the form --ignore-certificate-errors-spki-list takes. */
function spkiHash(pem: string): string {
  const spki = new X509Certificate(pem).publicKey.export({ type: "spki", format: "der" });
  return createHash("sha256").update(spki).digest("base64");
}

/** Launches chromium with a fresh profile (see the module comment). */
export async function openBrowser(options: BrowserOptions): Promise<TestBrowser> {
  const profile = await mkdtemp(join(tmpdir(), "imgpress-chromium-"));
  const problems: string[] = [];
  const dialogs: string[] = [];
  const origin = new URL(options.origin).origin;
  const args = [
    ...CHROMIUM_ARGS,
    ...(options.certPem ? [`--ignore-certificate-errors-spki-list=${spkiHash(options.certPem)}`] : []),
  ];
  let context: BrowserContext;
  try {
    context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      args,
      viewport: options.viewport ?? { width: 1280, height: 900 },
      colorScheme: options.colorScheme ?? "light",
      deviceScaleFactor: options.scale ?? 1,
      // Times on the pages are localised by the page script: pin the zone so runs compare.
      timezoneId: options.timezoneId ?? "UTC",
      locale: "en-US",
    });
  } catch (err) {
    await rm(profile, { recursive: true, force: true });
    throw err;
  }
  // Every CSP violation event is reported to the test through a binding the driver installs
  // (outside the page's CSP), whatever page or navigation it happened on.
  await context.exposeBinding("__imgpressCsp", ({ page }, text: string) => {
    problems.push(`CSP violation on ${page.url()}: ${text}`);
  });
  await context.addInitScript(() => {
    document.addEventListener("securitypolicyviolation", (e) => {
      (window as unknown as { __imgpressCsp: (t: string) => void }).__imgpressCsp(
        `${e.violatedDirective} blocked ${e.blockedURI}`,
      );
    });
  });
  context.on("request", (request) => {
    const url = request.url();
    if (!url.startsWith(`${origin}/`) && url !== origin) problems.push(`request to another origin: ${url}`);
  });
  const watch = (page: Page) => {
    page.on("console", (message) => {
      if (message.type() === "error") problems.push(`console error on ${page.url()}: ${message.text()}`);
    });
    page.on("pageerror", (error) => problems.push(`uncaught error on ${page.url()}: ${error.message}`));
    page.on("dialog", (dialog) => {
      dialogs.push(`${dialog.type()}: ${dialog.message()}`);
      void (dialog.type() === "confirm" ? dialog.accept() : dialog.dismiss());
    });
  };
  context.on("page", watch);
  for (const page of context.pages()) watch(page);
  return {
    context,
    async newPage() {
      return context.newPage();
    },
    problems: () => [...problems],
    dialogs,
    async close() {
      await context.close();
      await rm(profile, { recursive: true, force: true });
    },
  };
}
