/**
 * End to end: the real service writes its usage counts on its timer while it runs (the CLI, a
 * separate process on the same database, sees them) and at shutdown (SIGTERM) whatever is left.
 */
import { beforeAll, describe, expect, test } from "bun:test";
import { rm } from "node:fs/promises";
import { join } from "node:path";
import { sql } from "drizzle-orm";
import { openSqliteStore as openStore } from "../../src/data/db/sqlite.ts";
import { convertForm, type Keys, readResponse } from "../support/convert-helpers.ts";
import * as img from "../support/images.ts";
import { type RunningServer, runCli, startServer, useSmtpSink } from "../support/server.ts";
import { extractOtp } from "../support/smtp.ts";

const sink = useSmtpSink();
let photo: Buffer;

beforeAll(async () => {
  photo = await img.photo(64, 48);
});

async function keysOf(server: RunningServer, email: string): Promise<Keys> {
  expect((await server.json("POST", "/v1/plugin/auth/request-otp", { email })).status).toBe(200);
  const mail = await sink.waitFor((m) => m.envelopeTo.includes(email));
  const verified = await server.json("POST", "/v1/plugin/auth/verify-otp", { email, otp: extractOtp(mail) });
  expect(verified.status).toBe(200);
  return verified.body;
}

async function convert(server: RunningServer, keys: Keys): Promise<number> {
  const body = await convertForm(photo);
  const res = await readResponse(
    await server.fetch("/v1/plugin/convert", {
      method: "POST",
      body: body.bytes as Uint8Array<ArrayBuffer>,
      headers: { "content-type": body.contentType, authorization: `Bearer ${keys.api_key}` },
    }),
  );
  expect(res.status).toBe(200);
  return res.bytes.length;
}

async function listedConversions(server: RunningServer, email: string): Promise<number> {
  const r = await runCli(["keys", "list", "--json", "--email", email], server.env);
  expect(r.code).toBe(0);
  return (JSON.parse(r.stdout) as { conversions: number }[])[0]!.conversions;
}

describe("usage flushes of the running service", () => {
  test("every IMGPRESS_USAGE_FLUSH_S while running: `keys list` in another process sees the conversions", async () => {
    const server = await startServer({ env: { IMGPRESS_SMTP_URL: sink.url, IMGPRESS_USAGE_FLUSH_S: "0.2" } });
    try {
      const keys = await keysOf(server, "timer@example.com");
      await convert(server, keys);
      await convert(server, keys);
      let seen = 0;
      for (let i = 0; i < 20 && seen < 2; i++) {
        seen = await listedConversions(server, "timer@example.com");
        if (seen < 2) await Bun.sleep(250);
      }
      expect(seen).toBe(2);
    } finally {
      await server.stop();
    }
  }, 60_000);

  test("at shutdown: counts not yet flushed are written before the process exits", async () => {
    // An hour between timed flushes: only the shutdown can have written these.
    const server = await startServer({ env: { IMGPRESS_SMTP_URL: sink.url, IMGPRESS_USAGE_FLUSH_S: "3600" } });
    try {
      const keys = await keysOf(server, "shutdown@example.com");
      const out = (await convert(server, keys)) + (await convert(server, keys)) + (await convert(server, keys));
      expect(await listedConversions(server, "shutdown@example.com")).toBe(0);
      expect(await server.stop({ keepData: true })).toBe(0);

      const store = await openStore(`file:${join(server.dataDir, "imgpress.db")}`);
      try {
        const [bucket] = await store.all<{ n: number; bo: number }>(
          sql`SELECT sum(count) AS n, sum(bytes_out) AS bo FROM usage_hourly WHERE outcome = 'ok'`,
        );
        expect(bucket).toEqual({ n: 3, bo: out });
        const [key] = await store.all<{ conversions: number; bytes_out: number }>(
          sql`SELECT conversions, bytes_out FROM api_keys WHERE email = 'shutdown@example.com'`,
        );
        expect(key).toEqual({ conversions: 3, bytes_out: out });
      } finally {
        store.close();
      }
    } finally {
      await rm(server.dataDir, { recursive: true, force: true });
    }
  }, 60_000);
});
