/**
 * The shared-state rules of test/data/db/store.test.ts, on PostgreSQL, under Deno: two instances' real
 * services (createServices over openStore, loadConfig over a test environment, the real SMTP
 * mailer talking to an in-process sink, one fixed master key, one hand-driven clock) share one
 * database, as instances behind a load balancer do.
 *
 * test/data/db/deno-store.test.ts starts the private cluster and runs this file with the narrowest
 * permissions that work; by hand, with a fresh database:
 *
 *   IMGPRESS_TEST_DATABASE_URL=postgres://… ./node_modules/.bin/deno test --allow-env --allow-net=127.0.0.1 \
 *     --allow-sys=cpus,hostname,networkInterfaces --allow-ffi=./node_modules test/deno/store_test.ts
 */
import assert from "node:assert/strict";
import { sql } from "drizzle-orm";
import { ConfigError, loadConfig } from "../../src/core/config.ts";
import { AppError } from "../../src/core/errors.ts";
import { createLogger } from "../../src/core/log.ts";
import { smtpMailer } from "../../src/core/mail/mailer.ts";
import { openStore, type Store } from "../../src/data/db/index.ts";
import type { IssuedKey } from "../../src/data/keys/service.ts";
import { loadMasterKey } from "../../src/server/masterkey.ts";
import { createServices, type Services } from "../../src/services.ts";
import { wrongCode } from "../support/codes.ts";
import { signedHeaders } from "../support/sign.ts";
import { extractOtp, type SmtpSink, startSmtpSink } from "../support/smtp.ts";

const url = Deno.env.get("IMGPRESS_TEST_DATABASE_URL");
if (!url?.startsWith("postgres"))
  throw new Error(
    "IMGPRESS_TEST_DATABASE_URL must name a fresh PostgreSQL database (test/data/db/deno-store.test.ts passes one)",
  );

const MASTER_KEY = "0f".repeat(32);
/** 2030-01-01T00:00:00Z, as in test/support/harness.ts: a test that forgot the clock would notice. */
let now = Date.UTC(2030, 0, 1);
const clock = () => now;

/** One instance: its store and services. */
interface Instance {
  store: Store;
  services: Services;
}

let sink: SmtpSink;
let a: Instance;
let b: Instance;

/** Builds one instance's store and services as the runtime entry does, from a test environment. */
async function instance(masterKey = MASTER_KEY): Promise<Instance> {
  const config = loadConfig({
    // Never touched: the database is PostgreSQL and the master key comes from the environment.
    IMGPRESS_DATA_DIR: "/nonexistent/imgpress-deno-store",
    IMGPRESS_DATABASE_URL: url,
    IMGPRESS_DATABASE_POOL_SIZE: "4",
    IMGPRESS_SMTP_URL: sink.url,
    IMGPRESS_MAIL_FROM: "imgpress@test.invalid",
    IMGPRESS_MASTER_KEY: masterKey,
  });
  const store = await openStore(config.databaseUrl, {
    poolSize: config.databasePoolSize,
    timeoutS: config.databaseTimeoutS,
  });
  try {
    const services = await createServices({
      config,
      store,
      mailer: smtpMailer(config.smtpUrl!, config.mailFrom),
      // Only what goes wrong, on stderr: deno test shows it beside the failing test.
      logger: createLogger("warn", (line) => console.error(line)),
      masterKey: await loadMasterKey(config),
      loadDocsAsset: () => Promise.resolve(new Blob([])),
      now: clock,
    });
    return { store, services };
  } catch (err) {
    await store.close();
    throw err;
  }
}

/** What a promise came to: "ok", or the AppError code it was refused with (anything else is rethrown). */
async function outcome(work: Promise<unknown>): Promise<string> {
  try {
    await work;
    return "ok";
  } catch (err) {
    if (err instanceof AppError) return err.code;
    throw err;
  }
}

/** Requests a code for `email` through `via` and reads it from the mail the sink received. */
async function obtainCode(via: Instance, email: string, ip = "192.0.2.1"): Promise<string> {
  const seen = sink.messages.length;
  await via.services.issuance.request({ email, ip });
  return extractOtp(await sink.waitFor((m) => sink.messages.indexOf(m) >= seen && m.envelopeTo.includes(email)));
}

/** The whole issuance flow through `via`: a code, then its exchange for a key pair. */
async function issueKey(via: Instance, email: string) {
  return via.services.issuance.verify({ email, otp: await obtainCode(via, email), ip: "192.0.2.2" });
}

/** A six-digit code that is not `code`. */
Deno.test.beforeAll(async () => {
  sink = await startSmtpSink();
  // Started together on an empty database: the migrations of one must not trip the other.
  [a, b] = await Promise.all([instance(), instance()]);
});

Deno.test.afterAll(async () => {
  await Promise.all([a?.store.close(), b?.store.close()]);
  await sink?.close();
});

Deno.test("a code requested through A is exchanged through B, exactly once when both try at the same moment", async () => {
  const email = "once@example.com";
  const code = await obtainCode(a, email);
  const issued: IssuedKey[] = [];
  const tries = await Promise.all(
    [a, b, b, a].map((via, i) =>
      outcome(
        via.services.issuance.verify({ email, otp: code, ip: `198.51.100.${i + 1}` }).then((k) => void issued.push(k)),
      ),
    ),
  );
  assert.deepEqual(tries.sort(), ["INVALID_OTP", "INVALID_OTP", "INVALID_OTP", "ok"]);
  assert.equal((await b.services.keys.list({ email })).length, 1);
  // The key works on both instances.
  for (const via of [a, b]) assert.equal((await via.services.keys.findActive(issued[0]!.apiKey))?.id, issued[0]!.id);
});

Deno.test("wrong guesses spread over both instances, all at once, burn the code after exactly five", async () => {
  const email = "burn@example.com";
  const code = await obtainCode(b, email);
  const guesses = Array.from({ length: 10 }, (_, i) =>
    (i % 2 ? a : b).services.issuance.verify({ email, otp: wrongCode(code, 1 + i), ip: `198.51.100.${20 + i}` }),
  );
  // Every guess spends one attempt in one UPDATE: five are compared, the fifth burns the code.
  const outcomes = await Promise.all(guesses.map(outcome));
  assert.equal(outcomes.filter((o) => o === "TOO_MANY_ATTEMPTS").length, 1, outcomes.join(", "));
  assert.equal(outcomes.filter((o) => o === "INVALID_OTP").length, 9, outcomes.join(", "));
  const table = a.store.tables.otpCodes;
  const rows = await a.store.db.select({ attempts: table.attempts }).from(table).where(sql`${table.email} = ${email}`);
  assert.deepEqual(
    rows.map((r) => r.attempts),
    [5],
  );
  assert.equal(await outcome(a.services.issuance.verify({ email, otp: code, ip: "198.51.100.40" })), "INVALID_OTP");
});

Deno.test("a rate limit counts both instances' events: of six simultaneous code requests for one address, exactly one passes", async () => {
  const email = "limited@example.com";
  const all = await Promise.all(
    Array.from({ length: 6 }, (_, i) =>
      outcome((i % 2 ? a : b).services.issuance.request({ email, ip: `203.0.113.${i + 1}` })),
    ),
  );
  assert.deepEqual(all.sort(), ["RATE_LIMITED", "RATE_LIMITED", "RATE_LIMITED", "RATE_LIMITED", "RATE_LIMITED", "ok"]);
});

Deno.test("the limiter stays exact under a burst: of 60 simultaneous events in a bucket of 7, over both instances, exactly 7 pass", async () => {
  const rule = [{ limit: 7, windowMs: 60_000 }];
  const outcomes = await Promise.all(
    Array.from({ length: 60 }, (_, i) => outcome((i % 2 ? a : b).services.limiter.hit("burst", rule))),
  );
  assert.equal(outcomes.filter((o) => o === "ok").length, 7);
  assert.equal(outcomes.filter((o) => o === "RATE_LIMITED").length, 53);
});

Deno.test("a signature accepted by one instance is a replay on the other", async () => {
  const keys = await issueKey(a, "signer@example.com");
  const body = new TextEncoder().encode("the bytes of one upload");
  const headers = new Headers(
    signedHeaders({ apiKey: keys.apiKey, secretKey: keys.secretKey, timestamp: Math.floor(now / 1000), body }),
  );
  await (await a.services.authenticator.fromHeaders("POST", "/v1/plugin/convert", headers)).verifyBody(body);
  const replay = await b.services.authenticator.fromHeaders("POST", "/v1/plugin/convert", headers);
  assert.equal(await outcome(replay.verifyBody(body)), "REPLAYED_REQUEST");
  // A fresh signature still passes on B.
  now += 1000;
  const fresh = new Headers(
    signedHeaders({ apiKey: keys.apiKey, secretKey: keys.secretKey, timestamp: Math.floor(now / 1000), body }),
  );
  await (await b.services.authenticator.fromHeaders("POST", "/v1/plugin/convert", fresh)).verifyBody(body);
});

Deno.test("a key revoked through one instance is refused on the other's very next request", async () => {
  const keys = await issueKey(b, "revoked@example.com");
  const bearer = new Headers({ authorization: `Bearer ${keys.apiKey}` });
  assert.equal((await a.services.authenticator.fromHeaders("POST", "/v1/plugin/convert", bearer)).key.id, keys.id);
  assert.equal(await b.services.keys.revoke(keys.id), true);
  assert.equal(await a.services.keys.revoke(keys.id), false);
  for (const via of [a, b]) {
    assert.equal(await via.services.keys.findActive(keys.apiKey), null);
    assert.equal(
      await outcome(via.services.authenticator.fromHeaders("POST", "/v1/plugin/convert", bearer)),
      "INVALID_API_KEY",
    );
  }
});

Deno.test("usage recorded on both instances adds up exactly once flushed: buckets, key counters and the dashboard's queries", async () => {
  const keys = await issueKey(a, "counted@example.com");
  const sizes = [1200, 3400, 560, 7800, 910];
  for (const [i, via] of [a, b, a, b, b].entries()) {
    via.services.usage.record({
      keyId: keys.id,
      format: "webp",
      quality: "lossy",
      outcome: "ok",
      bytesIn: 10_000,
      bytesOut: sizes[i]!,
      queueWaitMs: 0,
      convertMs: 20 + i,
      guardEncodes: 0,
      at: now,
    });
  }
  a.services.usage.record({
    keyId: keys.id,
    format: null,
    quality: null,
    outcome: "UNSUPPORTED_MEDIA_TYPE",
    bytesIn: 3,
    bytesOut: 0,
    queueWaitMs: 0,
    convertMs: 0,
    guardEncodes: 0,
    at: now,
  });
  await Promise.all([a, b].map((via) => via.services.usage.flush()));
  // Flushing again adds nothing: each bucket was written once.
  await Promise.all([a, b].map((via) => via.services.usage.flush()));
  const bytesOut = sizes.reduce((x, y) => x + y, 0);
  const [sums] = await a.store.all<{ n: number; bo: number }>(
    sql`SELECT sum(count) AS n, sum(bytes_out) AS bo FROM usage_hourly WHERE key_id = ${keys.id} AND outcome = 'ok'`,
  );
  assert.deepEqual(sums, { n: 5, bo: bytesOut });
  const [counter] = await b.services.keys.list({ email: "counted@example.com" });
  assert.deepEqual(
    { conversions: counter!.conversions, bytesOut: counter!.bytesOut, lastUsedAt: counter!.lastUsedAt },
    { conversions: 5, bytesOut, lastUsedAt: now },
  );

  const range = { from: now - 3_600_000, to: now + 3_600_000 };
  const overview = await b.services.usageQueries.overview({ ...range, keyId: keys.id });
  assert.equal(overview.totals.conversions, 5);
  assert.equal(overview.totals.bytesOut, bytesOut);
  assert.deepEqual(overview.errorsByCode, [{ code: "UNSUPPORTED_MEDIA_TYPE", count: 1 }]);
  assert.notEqual(overview.totals.p50Ms, null);
  assert.equal((await a.services.usageQueries.key(keys.id, range))?.usage.totals.conversions, 5);
});

Deno.test("staff added on one instance is staff on the other; removing them ends their sessions everywhere", async () => {
  assert.equal((await a.services.staff.add("ops@example.com", "cli")).added, true);
  assert.equal(await b.services.staff.isStaff("ops@example.com"), true);
  const session = await a.services.sessions.create("ops@example.com", "192.0.2.1", "test");
  assert.equal((await b.services.sessions.authenticate(session.token))?.email, "ops@example.com");
  assert.equal((await b.services.staff.remove("ops@example.com", "cli")).removed, true);
  assert.equal(await a.services.sessions.authenticate(session.token), null);
  assert.equal((await a.services.staff.remove("ops@example.com", "cli")).removed, false);
});

Deno.test("an instance holding another master key refuses to start on this database", async () => {
  await assert.rejects(
    instance("1e".repeat(32)),
    (err: unknown) => err instanceof ConfigError && /not the one this database was created with/.test(err.message),
  );
});
