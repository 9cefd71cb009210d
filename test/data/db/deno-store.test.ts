/**
 * Deno runs the store-level shared-state rules against PostgreSQL (issue 15): test/deno/store_test.ts
 * under `deno test` (type-checked first, as `deno test` does), on a fresh database of the private
 * cluster, with the narrowest permissions that work. Importing src/app.ts loads sharp and libSQL,
 * whose native addons need --allow-ffi for node_modules only; nothing is read or written outside the
 * module graph, so there is no --allow-read or --allow-write.
 */
import { expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { cleanEnv, denoExecutable, ROOT } from "../../support/imgpress.ts";
import { createDatabase } from "../../support/postgres.ts";

const FILE = "test/deno/store_test.ts";

const PERMISSIONS = [
  // The SMTP sink listens on 127.0.0.1; the mailer and postgres.js connect there.
  "--allow-net=127.0.0.1",
  // Not a list of names: postgres.js alone reads a dozen PG* defaults, and a new one in an upgrade
  // would fail the test for no reason. The child's environment is ours (IMGPRESS_* and PG* removed).
  "--allow-env",
  // sharp's libc detection calls process.report.getReport(), which reads these.
  "--allow-sys=cpus,hostname,networkInterfaces",
  `--allow-ffi=${join(ROOT, "node_modules")}`,
];

test("deno test runs the shared-state rules on PostgreSQL, and all of them pass", async () => {
  const url = await createDatabase("deno_store");
  const env = Object.fromEntries(Object.entries(cleanEnv()).filter(([k]) => !k.startsWith("PG")));
  const sub = Bun.spawn([denoExecutable(), "test", "--no-prompt", ...PERMISSIONS, FILE], {
    cwd: ROOT,
    env: { ...env, NO_COLOR: "1", IMGPRESS_TEST_DATABASE_URL: url },
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
  });
  const timer = setTimeout(() => sub.kill("SIGKILL"), 100_000);
  const [stdout, stderr, code] = await Promise.all([
    new Response(sub.stdout).text(),
    new Response(sub.stderr).text(),
    sub.exited,
  ]);
  clearTimeout(timer);
  const output = `${stdout}\n${stderr}`;
  // Every Deno.test of the file ran and passed: none filtered out, ignored or lost to a crash.
  const declared = readFileSync(join(ROOT, FILE), "utf8").match(/^Deno\.test\("/gm)?.length ?? 0;
  const summary = /^ok \| (\d+) passed \| 0 failed/m.exec(output);
  if (code !== 0 || !summary || Number(summary[1]) !== declared)
    throw new Error(`deno test exited ${sub.signalCode ?? code}, expected ${declared} passed tests:\n${output}`);
  expect(declared).toBeGreaterThanOrEqual(8);
}, 120_000);
