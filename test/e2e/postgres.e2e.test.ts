/**
 * End to end on PostgreSQL (IMGPRESS_DATABASE_URL=postgres://…), under Bun or Deno (E2E_RUNTIME),
 * against this process's private cluster (test/support/postgres.ts): the service migrates an empty
 * database and serves the happy path (keys through the real code flow, bearer and signed
 * conversions, a replayed signature refused, a staff sign-in). Then the cluster is stopped under
 * it: conversions, codes and /health answer 503 at once, the process stays up, and once the
 * cluster is back it recovers without a restart, the usage counted while the database was away
 * written by the retrying flush. An instance started while the database is down, or with a wrong
 * password, exits with one line naming the database with its password masked.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtemp, rm } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect } from "node:tls";
import { postgresMigrations } from "../../src/data/db/migrations.gen.ts";
import { type Body, convertForm, type Keys, type RawResponse, readResponse } from "../support/convert-helpers.ts";
import * as img from "../support/images.ts";
import { expectStorageUnavailable, gateStats, holdsFor, obtainKeys, until } from "../support/ops.ts";
import { createDatabase, type PostgresCluster, psql, startPostgres } from "../support/postgres.ts";
import { runCli, startServer, useServer } from "../support/server.ts";
import { signedHeaders } from "../support/sign.ts";
import { staffSignInOverHttps } from "../support/staff.ts";

/** IMGPRESS_DATABASE_TIMEOUT_S of the service: a connection attempt or statement fails after this. */
const DB_TIMEOUT_S = 3;
/** Longest any request may take while the database is away: its timeout plus a margin (a hang is 30 s+). */
const ANSWER_WITHIN_MS = (DB_TIMEOUT_S + 2) * 1000;
/** How soon after the cluster is back the service must serve again, without a restart. */
const RECOVERY_MS = 10_000;
const OWNER = "site@example.com";
const STAFF = "ops@example.com";

let pg: PostgresCluster;
let url: string;
/** The key of the happy path, reused by the outage test. */
let keys: Keys;
/** Successful conversions with `keys` so far: what the usage counters must add up to. */
let converted = 0;

beforeAll(async () => {
  pg = await startPostgres();
  url = await createDatabase("e2e_outage");
}, 60_000);

const { server, sink } = useServer({
  env: () => ({
    IMGPRESS_DATABASE_URL: url,
    IMGPRESS_DATABASE_TIMEOUT_S: String(DB_TIMEOUT_S),
    IMGPRESS_USAGE_FLUSH_S: "1",
    IMGPRESS_STAFF_EMAILS: STAFF,
  }),
});

/**
 * `server.fetch` that must answer within ANSWER_WITHIN_MS, read whole: past it the request is
 * aborted and the test fails, so a request that waits on a frozen database until it resumes (rather
 * than giving up after IMGPRESS_DATABASE_TIMEOUT_S) cannot pass late.
 */
async function bounded(path: string, init: RequestInit = {}): Promise<RawResponse> {
  try {
    return await readResponse(await server.fetch(path, { ...init, signal: AbortSignal.timeout(ANSWER_WITHIN_MS) }));
  } catch (err) {
    throw new Error(`${init.method ?? "GET"} ${path} did not answer within ${ANSWER_WITHIN_MS} ms: ${err}`);
  }
}

const bearer = (body: Body) =>
  bounded("/v1/plugin/convert", {
    method: "POST",
    body: body.bytes as Uint8Array<ArrayBuffer>,
    headers: { "content-type": body.contentType, authorization: `Bearer ${keys.api_key}` },
  });

/** The headers of one signed conversion of `body`, to send once (or twice, for a replay). */
function signedRequest(body: Body): () => Promise<RawResponse> {
  const headers = {
    "content-type": body.contentType,
    ...signedHeaders({
      apiKey: keys.api_key,
      secretKey: keys.secret_key,
      timestamp: Math.floor(Date.now() / 1000),
      body: body.bytes,
    }),
  };
  return () => bounded("/v1/plugin/convert", { method: "POST", body: body.bytes as Uint8Array<ArrayBuffer>, headers });
}

const postJson = (path: string, json: unknown) =>
  bounded(path, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(json) });

async function expectImage(res: RawResponse, width: number, height: number): Promise<void> {
  expect({ status: res.status, body: res.body }).toEqual({ status: 200, body: null });
  expect(await img.decode(res.bytes)).toMatchObject({ format: "webp", width, height });
  converted++;
}

/**
 * A bearer conversion whose headers are sent (and its key checked against the database) but whose
 * body is held back: resolves once the server is receiving it (its upload budget reserved), so the
 * caller can stop the database before `finish` sends the body. Its usage is then counted while the
 * database is away.
 */
async function heldUpload(body: Body): Promise<{ finish(): Promise<number> }> {
  let received = "";
  const socket = await new Promise<ReturnType<typeof connect>>((resolve, reject) => {
    const s = connect(
      { host: "127.0.0.1", port: server.port, ca: server.ca, servername: "localhost", ALPNProtocols: ["http/1.1"] },
      () => resolve(s),
    );
    s.on("error", reject);
  });
  socket.on("data", (chunk: Buffer) => (received += chunk.toString("latin1")));
  const before = (await gateStats(server)).receiving;
  socket.write(
    `POST /v1/plugin/convert HTTP/1.1\r\nHost: 127.0.0.1:${server.port}\r\nAuthorization: Bearer ${keys.api_key}\r\n` +
      `Content-Type: ${body.contentType}\r\nContent-Length: ${body.bytes.length}\r\nConnection: close\r\n\r\n`,
  );
  await until(
    async () => (await gateStats(server)).receiving > before,
    ANSWER_WITHIN_MS,
    "the held upload to be received",
  );
  return {
    async finish() {
      socket.write(body.bytes);
      try {
        await until(() => received.includes("\r\n\r\n"), ANSWER_WITHIN_MS, "the answer to the held upload");
      } finally {
        socket.destroy();
      }
      return Number(/^HTTP\/1\.1 (\d{3}) /.exec(received)?.[1]);
    },
  };
}

/** The key's counters and its hourly buckets of successful conversions, as PostgreSQL holds them. */
async function storedUsage(): Promise<{ conversions: number; buckets: number }> {
  const row = await psql(
    url,
    `SELECT k.conversions, coalesce((SELECT sum(h.count) FROM usage_hourly h WHERE h.key_id = k.id AND h.outcome = 'ok'), 0) FROM api_keys k WHERE k.email = '${OWNER}'`,
  );
  const [conversions, buckets] = row.split("|").map(Number);
  return { conversions: conversions!, buckets: buckets! };
}

describe("imgpress on PostgreSQL", () => {
  test("starts on an empty database: migrations, keys by e-mail, bearer and signed conversions, a replay refused, staff sign-in", async () => {
    expect(Number(await psql(url, "SELECT count(*) FROM __drizzle_migrations"))).toBe(postgresMigrations.length);
    keys = await obtainKeys(server, sink, OWNER);
    expect(await psql(url, "SELECT email FROM api_keys")).toBe(OWNER);

    await expectImage(await bearer(await convertForm(await img.photo(64, 48))), 64, 48);
    const signed = signedRequest(await convertForm(await img.photo(40, 30)));
    await expectImage(await signed(), 40, 30);
    const replayed = await signed();
    expect({ status: replayed.status, code: replayed.body?.code }).toEqual({ status: 401, code: "REPLAYED_REQUEST" });

    const { cookie } = await staffSignInOverHttps(server, sink, STAFF);
    expect((await server.fetch("/internal/", { headers: { cookie }, redirect: "manual" })).status).toBe(200);
    const me = await server.json("GET", "/internal/api/me", undefined, { cookie });
    expect({ status: me.status, email: me.body.email }).toEqual({ status: 200, email: STAFF });
    expect(await psql(url, "SELECT count(*) FROM staff_sessions")).toBe("1");
  }, 60_000);

  test("database stopped: 503 at once, process up; started again: serving within seconds, usage of the outage flushed", async () => {
    const image = await img.photo(48, 32);
    await until(
      async () => (await storedUsage()).conversions === converted,
      RECOVERY_MS,
      "the happy path's usage to be flushed",
    );
    const held = await heldUpload(await convertForm(image));
    const stoppedAt = server.logs.length;
    await pg.stop();
    const logSince = (msg: string) =>
      server.waitForLog((l) => server.logs.indexOf(l) >= stoppedAt && String(l.json?.msg).startsWith(msg));
    try {
      // Admitted before the stop, converted after it: the answer needs no database, its usage waits in memory.
      expect(await held.finish()).toBe(200);
      converted++;
      await logSince("usage flush failed");

      expectStorageUnavailable(await bearer(await convertForm(image)));
      expectStorageUnavailable(await signedRequest(await convertForm(image))());
      const mails = sink.messages.length;
      const otp = await postJson("/v1/plugin/auth/request-otp", { email: "during@example.com" });
      expectStorageUnavailable(otp);
      expect(sink.messages.length).toBe(mails);

      // Overlapping requests too: every one is refused at once, none waits out a reconnect delay
      // (postgres.js's default backoff held them up to 20 s while each connect failed in a millisecond).
      const burst = await Promise.all(
        Array.from({ length: 8 }, async (_, i) => {
          const t0 = performance.now();
          const res =
            i % 2
              ? await bearer(await convertForm(image))
              : await postJson("/v1/plugin/auth/request-otp", { email: `burst${i}@example.com` });
          return { code: res.body?.code, fast: performance.now() - t0 < (DB_TIMEOUT_S * 1000) / 2 };
        }),
      );
      expect(burst).toEqual(Array.from({ length: 8 }, () => ({ code: "STORAGE_UNAVAILABLE", fast: true })));

      const health = await bounded("/health");
      expect({ status: health.status, code: health.body?.code }).toEqual({ status: 503, code: "UNHEALTHY" });
      const ready = await bounded("/health/ready");
      expect({ status: ready.status, code: ready.body?.code }).toEqual({ status: 503, code: "NOT_READY" });
      expect(ready.body.checks.database).toBe("write failed");
      expect(ready.body.checks.libvips).toBe("ok");
      // Still up and answering what needs no database.
      expect((await bounded("/internal/status")).status).toBe(200);
    } finally {
      await pg.start();
    }

    await until(async () => (await bounded("/health")).status === 200, RECOVERY_MS, "/health to answer 200 again");
    await expectImage(await bearer(await convertForm(image)), 48, 32);
    await expectImage(await signedRequest(await convertForm(image))(), 48, 32);
    expect((await bounded("/health/ready")).status).toBe(200);
    await logSince("usage flush succeeded again");
    await until(async () => (await storedUsage()).conversions >= converted, RECOVERY_MS, "the usage to be flushed");
    // Exactly once: the failed flushes wrote nothing and nothing was counted twice.
    expect(await storedUsage()).toEqual({ conversions: converted, buckets: converted });
    expect(server.logs.filter((l) => l.json?.msg === "unhandled error")).toEqual([]);
    expect(server.logs.filter((l) => l.json?.msg === "imgpress listening")).toHaveLength(1); // never restarted
  }, 60_000);

  test("database frozen (connections open, nothing answers): conversions get 503 within the database timeout, then serve again", async () => {
    const image = await img.photo(40, 30);
    // A conversion first, so the pool holds an open connection the next lookup will use.
    await expectImage(await bearer(await convertForm(image)), 40, 30);
    pg.freeze();
    try {
      // Each answered after about IMGPRESS_DATABASE_TIMEOUT_S (bounded() aborts past ANSWER_WITHIN_MS), not when the server resumes.
      expectStorageUnavailable(await bearer(await convertForm(image)));
      expectStorageUnavailable(await signedRequest(await convertForm(image))());
    } finally {
      pg.thaw();
    }
    await until(
      async () => (await bearer(await convertForm(image))).status === 200,
      RECOVERY_MS,
      "a conversion to succeed after the thaw",
    );
    converted++;
  }, 60_000);

  // A rotated password (or a dropped database) is the storage's fault, as an outage is: 503 with
  // Retry-After, and the log says why, without the query's parameters (addresses, key hashes).
  test("the login refused while serving (password rotated): 503 STORAGE_UNAVAILABLE, the cause logged, serving again once it is put back", async () => {
    const role = `rot_${Math.random().toString(36).slice(2, 8)}`;
    const admin = new URL(url);
    await psql(url, `CREATE ROLE ${role} LOGIN PASSWORD 'first-pw'; GRANT ALL ON SCHEMA public TO ${role}`);
    const own = await createDatabase("e2e_rotate");
    await psql(own, `ALTER DATABASE "${new URL(own).pathname.slice(1)}" OWNER TO ${role}`);
    const asRole = Object.assign(new URL(own), { username: role, password: "first-pw" }).href;
    const rotating = await startServer({
      env: {
        IMGPRESS_SMTP_URL: sink.url,
        IMGPRESS_DATABASE_URL: asRole,
        IMGPRESS_DATABASE_TIMEOUT_S: String(DB_TIMEOUT_S),
        IMGPRESS_DATABASE_POOL_SIZE: "2",
      },
    });
    try {
      const k = await obtainKeys(rotating, sink, "rotate@example.com");
      const form = await convertForm(await img.photo(40, 30));
      const headers = { "content-type": form.contentType, authorization: `Bearer ${k.api_key}` };
      const convert = async () =>
        readResponse(
          await rotating.fetch("/v1/plugin/convert", {
            method: "POST",
            body: form.bytes as Uint8Array<ArrayBuffer>,
            headers,
          }),
        );
      expect((await convert()).status).toBe(200);
      await psql(
        `${admin.protocol}//${admin.username}:${admin.password}@${admin.host}/postgres`,
        `ALTER ROLE ${role} PASSWORD 'second-pw'; SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = '${role}'`,
      );
      // The first may meet the terminated connection (57P01); the next ones reconnect and are refused the login (28P01).
      for (let i = 0; i < 3; i++) expectStorageUnavailable(await convert());
      const line = await rotating.waitForLog((l) =>
        JSON.stringify(l.json ?? {}).includes("password authentication failed"),
      );
      expect(JSON.stringify(line.json)).not.toContain("rotate@example.com");
      expect(rotating.logs.filter((l) => l.json?.status === 500)).toEqual([]);
      await psql(
        `${admin.protocol}//${admin.username}:${admin.password}@${admin.host}/postgres`,
        `ALTER ROLE ${role} PASSWORD 'first-pw'`,
      );
      await until(
        async () => (await convert()).status === 200,
        RECOVERY_MS,
        "a conversion to succeed once the password is back",
      );
    } finally {
      await rotating.stop();
    }
  }, 60_000);

  test("stopped while the database is frozen: the last usage flush gives up after the database timeout, says what is lost, exit 1", async () => {
    const image = await img.photo(36, 24);
    const held = await heldUpload(await convertForm(image));
    const since = server.logs.length;
    pg.freeze();
    let exit: number;
    const t0 = performance.now();
    try {
      // Converted after the freeze: its count cannot be written, and the periodic flush hangs on the frozen server.
      expect(await held.finish()).toBe(200);
      server.kill("SIGTERM");
      exit = await server.exited();
    } finally {
      pg.thaw();
    }
    // The flush's bound (the database timeout) and closing the pool (5 s), not until the thaw (a supervisor's kill).
    expect(performance.now() - t0).toBeLessThan((DB_TIMEOUT_S + 5 + 5) * 1000);
    expect(exit).toBe(1);
    const failed = server.logs.slice(since).find((l) => l.json?.msg === "shutdown step failed");
    expect(failed?.json?.step).toBe("usage flush");
    // The counts recorded since the flush that hangs are lost; those of that flush may still commit once the server resumes.
    const said =
      /the last usage counts \((\d+) buckets\) could not be written and are lost(?:; (\d+) more were being written when it gave up and may have been)?/.exec(
        JSON.stringify(failed?.json),
      );
    expect(said).not.toBeNull();
    expect(Number(said![1]) + Number(said![2] ?? 0)).toBeGreaterThanOrEqual(1);
    await server.restart();
    expect((await bounded("/health/ready")).status).toBe(200);
  }, 60_000);

  describe("start-up errors: one line naming the database, password masked, exit status ≠ 0", () => {
    let dataDir: string;
    beforeAll(async () => {
      dataDir = await mkdtemp(join(tmpdir(), "imgpress-pg-start-"));
    });
    afterAll(() => rm(dataDir, { recursive: true, force: true }));

    /** Runs `imgpress serve` on `databaseUrl` with a fresh data folder until it exits by itself. */
    const serve = (databaseUrl: string) =>
      runCli(["serve"], {
        IMGPRESS_DATA_DIR: dataDir,
        IMGPRESS_DATABASE_URL: databaseUrl,
        IMGPRESS_DATABASE_TIMEOUT_S: String(DB_TIMEOUT_S),
        IMGPRESS_HOST: "127.0.0.1",
        IMGPRESS_PORT: "0",
        IMGPRESS_MAIL_FROM: "imgpress@test.invalid",
      });
    const masked = (databaseUrl: string) => {
      const u = new URL(databaseUrl);
      return `postgres://${u.username}:******@${u.host}${u.pathname}`;
    };

    test("the database is down", async () => {
      await pg.stop();
      let result: Awaited<ReturnType<typeof serve>>;
      try {
        result = await serve(url);
      } finally {
        await pg.start();
      }
      expect(result.code).not.toBe(0);
      expect(result.stdout).not.toContain("imgpress listening");
      const lines = result.stderr.trim().split("\n");
      expect(lines).toHaveLength(1);
      expect(lines[0]).toStartWith(`imgpress: cannot open the database ${masked(url)}: `);
      expect(lines[0]).toContain("ECONNREFUSED");
      expect(result.stderr).not.toContain(pg.password);
    }, 60_000);

    test("another service on the port (an HTTP server that answers and closes): refused within the timeout, not retried for ever", async () => {
      let connections = 0;
      const web = createServer((socket) => {
        connections++;
        socket.on("error", () => {});
        socket.on("data", () => socket.end("HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n"));
      });
      await new Promise<void>((resolve) => web.listen(0, "127.0.0.1", resolve));
      const wrong = new URL(url);
      wrong.port = String((web.address() as { port: number }).port);
      try {
        const t0 = performance.now();
        const result = await serve(wrong.href);
        expect(performance.now() - t0).toBeLessThan((DB_TIMEOUT_S + 10) * 1000);
        expect(result.code).not.toBe(0);
        expect(result.stderr.trim().split("\n")).toEqual([
          `imgpress: cannot open the database ${masked(wrong.href)}: no PostgreSQL start-up completed within ${DB_TIMEOUT_S + 1} s: something answers at that address and port, but not as PostgreSQL (is it another service's port?)`,
        ]);
        // The process is gone, and with it the reconnect loop.
        const after = connections;
        await holdsFor(() => connections === after, 300, "no further connection attempt");
      } finally {
        web.close();
      }
    }, 60_000);

    test("a wrong password", async () => {
      const wrong = new URL(url);
      wrong.password = "not-the-password-4f1c";
      const result = await serve(wrong.href);
      expect(result.code).not.toBe(0);
      expect(result.stdout).not.toContain("imgpress listening");
      const lines = result.stderr.trim().split("\n");
      expect(lines).toEqual([
        `imgpress: cannot open the database ${masked(url)}: password authentication failed for user "imgpress"`,
      ]);
    }, 60_000);
  });
});
