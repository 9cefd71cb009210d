/**
 * What the lost-file guard costs (issue #37 point 3): every statement on the embedded file first
 * checks, with one stat, that the path still names the file the server opened. Measured side by side
 * in one run on one file: the same one-row heartbeat upsert through the guarded store's client and
 * through a plain client of the same file, in alternating rounds (the machine is shared and noisy).
 *
 *   bun bench/file-guard.ts [--rounds=N] [--statements=N]
 */

import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Client, createClient } from "@libsql/client";
import { fileUrl } from "../src/data/db/location.ts";
import { openSqliteStore } from "../src/data/db/sqlite.ts";

const arg = (name: string, fallback: number) =>
  Number(process.argv.find((a) => a.startsWith(`--${name}=`))?.split("=")[1] ?? fallback);
const rounds = arg("rounds", 6);
const statements = arg("statements", 3000);

// Microseconds per statement over `statements` upserts, awaited one after another as requests do.
async function perStatement(client: Client): Promise<number> {
  const started = performance.now();
  for (let i = 0; i < statements; i++) {
    await client.execute({
      sql: "INSERT INTO heartbeat (id, at) VALUES (1, ?) ON CONFLICT (id) DO UPDATE SET at = excluded.at",
      args: [i],
    });
  }
  return ((performance.now() - started) * 1000) / statements;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

const dir = await mkdtemp(join(tmpdir(), "imgpress-bench-guard-"));
try {
  const path = join(dir, "imgpress.db");
  const store = await openSqliteStore(fileUrl(path));
  // As the store makes its own (src/data/db/sqlite.ts), less the guard.
  const plain = createClient({ url: fileUrl(path), timeout: 5000, concurrency: 4 });
  await plain.execute("PRAGMA synchronous = NORMAL");
  const guarded: number[] = [];
  const unguarded: number[] = [];
  await perStatement(store.client);
  await perStatement(plain);
  for (let r = 0; r < rounds; r++) {
    // Which goes first alternates, so a load change within a round weighs on both alike.
    if (r % 2 === 0) guarded.push(await perStatement(store.client)), unguarded.push(await perStatement(plain));
    else unguarded.push(await perStatement(plain)), guarded.push(await perStatement(store.client));
  }
  const [g, u] = [median(guarded), median(unguarded)];
  console.log(`heartbeat upsert, ${rounds} rounds × ${statements} statements, median per statement:`);
  console.log(`  plain client       ${u.toFixed(1)} µs`);
  console.log(`  guarded (1 stat)   ${g.toFixed(1)} µs`);
  console.log(`  guard's cost       ${(g - u).toFixed(1)} µs (${((g / u - 1) * 100).toFixed(1)} %)`);
  plain.close();
  await store.close();
} finally {
  await rm(dir, { recursive: true, force: true });
}
