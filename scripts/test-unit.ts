// `npm run test:unit`: the tests that start nothing (no server process, SMTP sink, PostgreSQL,
// nginx, browser or CLI run), in seconds. A test file is an integration test when it imports a
// harness that starts a real part, or spawns a process; every other *.test.ts is a unit test, so
// a new file is sorted by what it does, with no list to keep. Extra arguments go to `bun test`.

import { readFileSync } from "node:fs";
import { join } from "node:path";
import { Glob } from "bun";

const ROOT = join(import.meta.dir, "..");
const STARTS_REAL_PARTS =
  /support\/(server|imgpress|postgres|smtp|harness|nginx|browser|mounts|ops|staff)\.ts|Bun\.spawn|spawnSync|startSmtpSink|createHarness/;
const OUTSIDE_UNIT = /^test\/(e2e|cluster|deno)\//;

const files = [...new Glob("test/**/*.test.ts").scanSync({ cwd: ROOT })]
  .filter((file) => !OUTSIDE_UNIT.test(file) && !STARTS_REAL_PARTS.test(readFileSync(join(ROOT, file), "utf8")))
  .sort();
const run = Bun.spawnSync(
  [process.execPath, "test", "--timeout", "30000", ...process.argv.slice(2), ...files.map((f) => `./${f}`)],
  { cwd: ROOT, stdio: ["inherit", "inherit", "inherit"] },
);
process.exit(run.exitCode ?? 1);
