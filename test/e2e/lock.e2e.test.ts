/**
 * A database locked by another process (issue 37 point 1), against a real server: on the embedded
 * libSQL file the `sqlite3` CLI holds `BEGIN EXCLUSIVE` with a write in it; on PostgreSQL another
 * session holds `LOCK TABLE … IN ACCESS EXCLUSIVE MODE` on every table a request writes (all but
 * api_keys, which authentication reads) in an open transaction. While the lock is held:
 * `/health` and unknown routes keep answering, many times, each far under the lock wait budget
 * (the process is not frozen); bearer conversions of a known key succeed; `/health/ready` answers
 * 503 well before a client request's budget; code requests, code checks and signed conversions
 * answer 503 STORAGE_UNAVAILABLE with Retry-After. Once released: the usage of the conversions
 * made during the lock is counted, the code requested before it still verifies, nothing written
 * during it exists (no code, no mail), and every write path works again without a restart. On
 * PostgreSQL a lock on api_keys itself (which blocks reads there) makes bearer conversions answer
 * 503 within their budget, and nothing else waits on it.
 */
import { describe, expect, test } from "bun:test";
import { join } from "node:path";
import postgres from "postgres";
import { convertForm, type Keys, readResponse } from "../support/convert-helpers.ts";
import * as img from "../support/images.ts";
import { convertBearer, expectStorageUnavailable, obtainKeys, until } from "../support/ops.ts";
import { createDatabase, psql, serverBindir } from "../support/postgres.ts";
import { type RunningServer, startServer } from "../support/server.ts";
import { signedHeaders } from "../support/sign.ts";
import { extractOtp, startSmtpSink } from "../support/smtp.ts";
import { hasSqlite3, holdSqliteLock, type SqliteLock, sqliteScalar } from "../support/sqlite-lock.ts";

/** A client request's lock wait (IMGPRESS_DATABASE_TIMEOUT_S): the write paths give up after it. */
const BUDGET_S = 3;
/** "Not frozen": a request that needs no write answers well under the budget, even on a loaded machine. */
const NOT_FROZEN_MS = 1000;
/** Readiness waits 500 ms for a lock; this bound is below a client request's budget, loaded machine included. */
const READY_WITHIN_MS = 2500;

/** Another process holding the database's lock, and a way to read the database beside the server. */
interface Locker {
  hold(): Promise<void>;
  release(): Promise<void>;
  /** One value: the first column of the first row. */
  scalar(sql: string): Promise<string>;
}

function sqliteLocker(file: string): Locker {
  let lock: SqliteLock | undefined;
  return {
    async hold() {
      lock = await holdSqliteLock(file, "UPDATE heartbeat SET at = at + 1");
    },
    release: () => lock!.release(),
    scalar: async (sql) => sqliteScalar(file, sql),
  };
}

/** The tables a request, the heartbeat or the usage flush writes; api_keys stays readable. */
const WRITTEN_TABLES =
  "heartbeat, otp_codes, rate_events, seen_signatures, usage_hourly, usage_hourly_total, usage_daily_total, usage_daily";

function postgresLocker(url: string, tables = WRITTEN_TABLES): Locker {
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  let session: Awaited<ReturnType<typeof sql.reserve>> | undefined;
  return {
    async hold() {
      session = await sql.reserve();
      await session`BEGIN`;
      await session.unsafe(`LOCK TABLE ${tables} IN ACCESS EXCLUSIVE MODE`);
    },
    async release() {
      await session!`COMMIT`;
      session!.release();
      await sql.end();
    },
    scalar: (query) => psql(url, query),
  };
}

let hasPostgres = false;
try {
  hasPostgres = serverBindir().length > 0;
} catch {
  hasPostgres = false;
}
if (!hasSqlite3) console.warn("lock: the libSQL case is SKIPPED — no `sqlite3` CLI (apt-get install sqlite3)");
if (!hasPostgres)
  console.warn("lock: the PostgreSQL case is SKIPPED — no PostgreSQL server binaries (sh scripts/ci-setup.sh)");

/** `path` answered within NOT_FROZEN_MS with `status`, `times` times in a row. */
async function answersQuickly(server: RunningServer, path: string, status: number, times: number): Promise<number[]> {
  const took: number[] = [];
  for (let i = 0; i < times; i++) {
    const t0 = performance.now();
    const res = await server.fetch(path, { signal: AbortSignal.timeout(BUDGET_S * 1000) });
    await res.arrayBuffer();
    took.push(performance.now() - t0);
    expect(res.status).toBe(status);
  }
  expect(Math.max(...took)).toBeLessThan(NOT_FROZEN_MS);
  return took;
}

async function signedConvert(server: RunningServer, keys: Keys, image: Uint8Array) {
  const body = await convertForm(image);
  const headers = signedHeaders({
    apiKey: keys.api_key,
    secretKey: keys.secret_key,
    timestamp: Math.floor(Date.now() / 1000),
    body: body.bytes,
  });
  return readResponse(
    await server.fetch("/v1/plugin/convert", {
      method: "POST",
      body: body.bytes as Uint8Array<ArrayBuffer>,
      headers: { "content-type": body.contentType, ...headers },
    }),
  );
}

const usageCount = (locker: Locker) =>
  locker.scalar("SELECT coalesce(sum(count), 0) FROM usage_hourly WHERE outcome = 'ok'").then(Number);

/** The whole scenario on one backend: `database` is the server's IMGPRESS_DATABASE_URL (undefined: its own file). */
async function lockedScenario(
  database: string | undefined,
  lockerFor: (server: RunningServer) => Locker,
): Promise<void> {
  // A sink of its own: the codes of the other backend's run must not be read as this one's.
  const sink = await startSmtpSink();
  const env: Record<string, string> = {
    IMGPRESS_SMTP_URL: sink.url,
    IMGPRESS_DATABASE_TIMEOUT_S: String(BUDGET_S),
    IMGPRESS_USAGE_FLUSH_S: "1",
  };
  const server = await startServer({ env: database ? { ...env, IMGPRESS_DATABASE_URL: database } : env });
  try {
    const locker = lockerFor(server);
    const keys = await obtainKeys(server, sink, "known@example.com");
    const form = await convertForm(await img.photo(320, 240));
    expect((await convertBearer(server, keys.api_key, form)).status).toBe(200);
    // A code requested before the lock: it must survive unconsumed.
    expect((await server.json("POST", "/v1/plugin/auth/request-otp", { email: "pending@example.com" })).status).toBe(
      200,
    );
    const pending = extractOtp(await sink.waitFor((m) => m.envelopeTo.includes("pending@example.com")));
    await until(async () => (await usageCount(locker)) === 1, 10_000, "the first conversion counted");
    const mails = sink.messages.length;

    await locker.hold();
    let convertedDuringLock = 0;
    try {
      // One write in flight the whole time, as in the issue: it must not hold anything else.
      const t0 = performance.now();
      const otp = server
        .json("POST", "/v1/plugin/auth/request-otp", { email: "during@example.com" })
        .then((res) => ({ res, ms: performance.now() - t0 }));
      await answersQuickly(server, "/health", 200, 20);
      await answersQuickly(server, "/no/such/route", 404, 5);
      for (let i = 0; i < 3; i++) {
        expect((await convertBearer(server, keys.api_key, form)).status).toBe(200);
        convertedDuringLock++;
      }
      const readyStart = performance.now();
      const ready = await server.json("GET", "/health/ready");
      expect({ status: ready.status, database: ready.body.checks?.database }).toEqual({
        status: 503,
        database: "write failed",
      });
      expect(performance.now() - readyStart).toBeLessThan(READY_WITHIN_MS);
      const { res, ms } = await otp;
      expectStorageUnavailable(res);
      // Answered by the budget, not by the lock's release (which has not happened yet).
      expect(ms).toBeLessThan(BUDGET_S * 1000 + 2000);
      expectStorageUnavailable(
        await server.json("POST", "/v1/plugin/auth/verify-otp", { email: "pending@example.com", otp: pending }),
      );
      expectStorageUnavailable(await signedConvert(server, keys, await img.photo(64, 48)));
      await answersQuickly(server, "/health", 200, 5);
      // The flush failed meanwhile (its counts kept in memory), and nothing was written.
      await server.waitForLog(
        (l) => l.json?.msg === "usage flush failed; keeping the counts for the next flush",
        10_000,
      );
    } finally {
      await locker.release();
    }

    // Counted after the lock: the conversions before it and the ones during it, once each.
    await until(
      async () => (await usageCount(locker)) === 1 + convertedDuringLock,
      10_000,
      "the usage of the conversions made during the lock",
    );
    await until(
      async () => (await server.json("GET", "/health/ready")).status === 200,
      10_000,
      "readiness back to 200",
    );
    // Nothing of the refused requests was written or sent; the code from before still works.
    expect(await locker.scalar("SELECT count(*) FROM otp_codes WHERE email = 'during@example.com'")).toBe("0");
    expect(sink.messages.slice(mails).some((m) => m.envelopeTo.includes("during@example.com"))).toBe(false);
    expect(
      (await server.json("POST", "/v1/plugin/auth/verify-otp", { email: "pending@example.com", otp: pending })).status,
    ).toBe(200);
    expect((await server.json("POST", "/v1/plugin/auth/request-otp", { email: "after@example.com" })).status).toBe(200);
    expect((await signedConvert(server, keys, await img.photo(64, 48))).status).toBe(200);
    expect(server.logs.some((l) => l.json?.msg === "unhandled error")).toBe(false);
  } finally {
    await server.stop();
    await sink.close();
  }
}

describe.skipIf(!hasSqlite3)("libSQL file locked by the sqlite3 CLI (BEGIN EXCLUSIVE)", () => {
  test("the process keeps answering; writes answer 503 within their budget; usage counted after; nothing lost", async () => {
    await lockedScenario(undefined, (server) => sqliteLocker(join(server.dataDir, "imgpress.db")));
  }, 90_000);
});

describe.skipIf(!hasPostgres)("PostgreSQL tables locked by another session (ACCESS EXCLUSIVE)", () => {
  test("the same: answers go on, writes answer 503 within their budget, usage counted after, nothing lost", async () => {
    const url = await createDatabase("e2e_lock");
    await lockedScenario(url, () => postgresLocker(url));
  }, 120_000);

  test("a lock that blocks reading api_keys too: bearer conversions answer 503 within their budget, the rest answers", async () => {
    const url = await createDatabase("e2e_lock_keys");
    const sink = await startSmtpSink();
    const server = await startServer({
      env: { IMGPRESS_SMTP_URL: sink.url, IMGPRESS_DATABASE_URL: url, IMGPRESS_DATABASE_TIMEOUT_S: String(BUDGET_S) },
    });
    try {
      const keys = await obtainKeys(server, sink, "known@example.com");
      const form = await convertForm(await img.photo(64, 48));
      const locker = postgresLocker(url, "api_keys");
      await locker.hold();
      try {
        const t0 = performance.now();
        const converting = convertBearer(server, keys.api_key, form).then((res) => ({
          res,
          ms: performance.now() - t0,
        }));
        await answersQuickly(server, "/health", 200, 10);
        const { res, ms } = await converting;
        expectStorageUnavailable(res);
        expect(ms).toBeLessThan(BUDGET_S * 1000 + 2000);
      } finally {
        await locker.release();
      }
      expect((await convertBearer(server, keys.api_key, form)).status).toBe(200);
    } finally {
      await server.stop();
      await sink.close();
    }
  }, 60_000);
});
