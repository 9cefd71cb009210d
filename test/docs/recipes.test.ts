/**
 * Docs are code: every recipe fence of README.md and docs/api.md (see test/support/recipes.ts) runs
 * exactly as printed against a real local server, in a folder holding its data folder
 * (`imgpress-data/`) and a `photo.jpg`. Only the base URL (`https://localhost:8443` → the test
 * server), the keys (`imp_…`; $API_KEY and $SECRET_KEY come from the environment, in JavaScript
 * too) and a printed one-time code (replaced by the code that reached the SMTP sink) are substituted.
 * Shell recipes run under bash with `set -euo pipefail` and curl failing on HTTP errors; the
 * JavaScript recipe runs under Node, Bun and Deno.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import sharp from "sharp";
import { photo } from "../support/images.ts";
import { denoExecutable, type Keys, ROOT, type Service, startService } from "../support/imgpress.ts";
import { type Fence, recipes, strayMarkers } from "../support/recipes.ts";
import { type SmtpSink, sixDigitRuns, startSmtpSink } from "../support/smtp.ts";

const DOCS = ["README.md", "docs/api.md"];
const PRINTED_BASE = "https://localhost:8443";

let work: string;
let sink: SmtpSink;
let service: Service;
let keys: Keys;
let codes: string;
let watcher: ReturnType<typeof setInterval>;

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), "imgpress-recipes-"));
  codes = join(work, ".codes");
  mkdirSync(codes);
  writeFileSync(join(work, "photo.jpg"), await photo(640, 480));
  sink = await startSmtpSink();
  service = await startService({
    launch: { runtime: "bun" },
    dataDir: join(work, "imgpress-data"),
    env: { IMGPRESS_SMTP_URL: sink.url },
  });
  keys = await service.client.obtainKeys(sink, "recipes@example.com");
  // Every code that reaches the sink is left where a recipe's substituted code can read it.
  let seen = sink.messages.length;
  watcher = setInterval(() => {
    for (; seen < sink.messages.length; seen++) {
      const m = sink.messages[seen]!;
      const [code, ...more] = sixDigitRuns(m.text);
      if (code && more.length === 0) for (const to of m.envelopeTo) writeFileSync(join(codes, to), code);
    }
  }, 20);
});
afterAll(async () => {
  clearInterval(watcher);
  await service?.stop();
  await sink?.close();
  rmSync(work, { recursive: true, force: true });
});

/** bash with strict modes, curl failing on HTTP errors, and `imgpress_code EMAIL` waiting for the code mailed to EMAIL. */
const BASH_PRELUDE = `set -euo pipefail
curl() { command curl --fail-with-body --silent --show-error "$@"; }
imgpress_code() {
  for _ in $(seq 300); do
    if [ -s "$IMGPRESS_CODES/$1" ]; then cat "$IMGPRESS_CODES/$1"; rm -f "$IMGPRESS_CODES/$1"; return; fi
    sleep 0.05
  done
  echo "no code mailed to $1" >&2; return 1
}
`;

/** The shell recipe with the base URL, the printed key and a printed code replaced. */
function substituteShell(code: string): string {
  return code
    .replaceAll(PRINTED_BASE, service.url)
    .replace(/imp_…/g, keys.apiKey)
    .replace(
      /^(.*"email": "([^"]+)".*)"otp": "\d{6}"/gm,
      (_, head: string, email: string) => `${head}"otp": "'"$(imgpress_code ${email})"'"`,
    );
}

/** Runs a command in the work folder; returns its status and output. */
async function run(cmd: string[], env: Record<string, string>): Promise<{ code: number; out: string }> {
  const proc = Bun.spawn(cmd, {
    cwd: work,
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: work, ...env },
    stdout: "pipe",
    stderr: "pipe",
  });
  const timer = setTimeout(() => proc.kill("SIGKILL"), 60_000);
  const [stdout, stderr, code] = await Promise.all([
    new Response(proc.stdout).text(),
    new Response(proc.stderr).text(),
    proc.exited,
  ]);
  clearTimeout(timer);
  return { code, out: `${stdout}\n${stderr}` };
}

/** Files a curl command writes with `-o FILE`, which must then decode as the image their extension says. */
function outputsOf(code: string): string[] {
  return [...code.matchAll(/ -o (\S+\.(?:webp|avif))/g)].map((m) => m[1]!);
}

async function runShell(fence: Fence): Promise<void> {
  const script = substituteShell(fence.code);
  const outputs = outputsOf(script);
  for (const f of outputs) rmSync(join(work, f), { force: true });
  const r = await run(["bash", "-c", BASH_PRELUDE + script], {
    API_KEY: keys.apiKey,
    SECRET_KEY: keys.secretKey,
    IMGPRESS_CODES: codes,
  });
  if (r.code !== 0) throw new Error(`exit ${r.code}:\n${r.out}`);
  for (const f of outputs) {
    const meta = await sharp(readFileSync(join(work, f))).metadata();
    expect(f.endsWith(".webp") ? meta.format : meta.compression).toBe(f.endsWith(".webp") ? "webp" : "av1");
  }
}

/** Files a JavaScript recipe writes with `writeFile("FILE", …)`, which must then decode as the image their extension says. */
function jsOutputsOf(code: string): string[] {
  return [...code.matchAll(/writeFile\("([^"]+\.(?:webp|avif))"/g)].map((m) => m[1]!);
}

const JS_RUNTIMES: Record<string, (file: string) => string[]> = {
  node: (file) => ["node", file],
  bun: (file) => [join(ROOT, "node_modules/.bin/bun"), file],
  deno: (file) => [
    denoExecutable(),
    "run",
    "--no-prompt",
    "--allow-env=API_KEY,SECRET_KEY",
    `--allow-read=${work}`,
    `--allow-write=${work}`,
    `--allow-net=127.0.0.1:${service.port}`,
    file,
  ],
};

/** Runs the JavaScript recipe as printed (keys in the environment, the base URL substituted); what it saves must decode. */
async function runJs(fence: Fence, runtime: string): Promise<void> {
  const file = join(work, `recipe-${fence.line}-${runtime}.mjs`);
  writeFileSync(file, fence.code.replaceAll(PRINTED_BASE, service.url));
  const outputs = jsOutputsOf(fence.code);
  expect(outputs.length).toBeGreaterThan(0);
  for (const f of outputs) rmSync(join(work, f), { force: true });
  const certPath = join(work, "imgpress-data", "tls", "cert.pem");
  const r = await run(JS_RUNTIMES[runtime]!(file), {
    API_KEY: keys.apiKey,
    SECRET_KEY: keys.secretKey,
    NODE_EXTRA_CA_CERTS: certPath,
    DENO_CERT: certPath,
  });
  if (r.code !== 0) throw new Error(`${runtime}: exit ${r.code}:\n${r.out}`);
  for (const f of outputs) {
    const meta = await sharp(readFileSync(join(work, f))).metadata();
    expect(f.endsWith(".webp") ? meta.format : meta.compression).toBe(f.endsWith(".webp") ? "webp" : "av1");
  }
}

test("node, bash and curl are installed (the recipes need them)", () => {
  for (const tool of ["node", "bash", "curl", "openssl", "sha256sum"]) expect(Bun.which(tool)).toBeString();
});

for (const doc of DOCS) {
  const markdown = readFileSync(join(ROOT, doc), "utf8");
  describe(doc, () => {
    test(`every "<!-- recipe: skip -->" sits directly above a fence`, () => {
      expect(strayMarkers(markdown)).toEqual([]);
    });
    for (const fence of recipes(markdown)) {
      if (fence.lang === "js") {
        for (const runtime of Object.keys(JS_RUNTIMES))
          test(`line ${fence.line} (js) under ${runtime}`, () => runJs(fence, runtime));
      } else test(`line ${fence.line} (${fence.lang})`, () => runShell(fence));
    }
  });
}
