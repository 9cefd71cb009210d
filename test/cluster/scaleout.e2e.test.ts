/**
 * Scale-out, end to end: three instances of the compiled executable (behind-proxy mode, one master
 * key, one PostgreSQL database, one SMTP sink), each in its own empty folder, behind Debian's nginx
 * running docs/scaling/nginx.conf (TLS, round-robin). Every shared-state rule is checked through
 * the balancer and through single instances (plain HTTP with the headers nginx would add):
 * migrations run once, a one-time code is used once and burnt across instances, rate limits count
 * every instance's events, a signature is a replay everywhere, a revocation is seen everywhere at
 * once, usage adds up exactly; and a kill -9 mid-burst loses nothing issued.
 *
 * Not under test/e2e/ (which `npm run test:deno` runs under Deno): this runs the binary only. It
 * builds the host's executable itself, since `npm test` runs before `npm run build`. Needs
 * PostgreSQL's server binaries and nginx (`sh scripts/ci-setup.sh`).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { buildTarget } from "../../scripts/build.ts";
import { MAX_IMAGE_BYTES } from "../../src/api/convert/form.ts";
import { postgresMigrations } from "../../src/data/db/migrations.gen.ts";
import { otpLimits } from "../../src/data/otp/limits.ts";
import { selfSignedCertificate } from "../../src/server/tls/selfsigned.ts";
import { wrongCode } from "../support/harness.ts";
import { photo } from "../support/images.ts";
import {
  Client,
  cleanEnv,
  type Keys,
  type Launch,
  type Multipart,
  multipart,
  ROOT,
  runCommand,
  type Service,
  startService,
} from "../support/imgpress.ts";
import { type Nginx, startNginx } from "../support/nginx.ts";
import { until } from "../support/ops.ts";
import { unusedPorts } from "../support/ports.ts";
import { createDatabase, psql } from "../support/postgres.ts";
import { extractOtp, type SmtpSink, startSmtpSink } from "../support/smtp.ts";

/** The documented config and the values in it that the test replaces (each must occur once). */
const NGINX_CONF = join(ROOT, "docs/scaling/nginx.conf");
const DOC_INSTANCES = ["127.0.0.1:8081", "127.0.0.1:8082", "127.0.0.1:8083"];
const DOC_LISTEN = "listen 443 ssl;";
const DOC_CERT = "/etc/ssl/imgpress/fullchain.pem";
const DOC_KEY = "/etc/ssl/imgpress/privkey.pem";
/** Clients of the conversion bursts through nginx. */
const WORKERS = 6;

let root: string;
let launch: Launch;
let databaseUrl: string;
let sink: SmtpSink;
let sharedEnv: Record<string, string>;
let ports: number[];
let nginx: Nginx | undefined;
/** The balancer, over TLS with the test's certificate. */
let lb: Client;
let jpeg: Buffer;
const instances: Service[] = [];
/** Keys issued before the kill, through each door: instances A, B, C and the balancer. */
const issued: Record<string, Keys> = {};

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), "imgpress-scaleout-"));
  const file = join(root, "bin", "imgpress");
  launch = { runtime: "binary", file };
  [, databaseUrl, sink, jpeg, ports] = await Promise.all([
    buildTarget({ arch: hostArch(), outfile: file }),
    createDatabase("scaleout"),
    startSmtpSink(),
    photo(320, 240),
    unusedPorts(4),
  ]);
  sharedEnv = {
    IMGPRESS_BEHIND_PROXY: "true",
    IMGPRESS_MASTER_KEY: randomBytes(32).toString("hex"),
    IMGPRESS_DATABASE_URL: databaseUrl,
    IMGPRESS_SMTP_URL: sink.url,
    IMGPRESS_MAIL_FROM: "imgpress@example.com",
    IMGPRESS_CACHE_DIR: join(root, "cache"),
    // The bursts below send one key's requests to every instance at once, as many as two
    // instances admit; the per-key share (a fraction of the places, by core count) must not refuse them.
    IMGPRESS_KEY_MAX_ADMITTED: "100",
  };
  // All three at the same moment on the fresh database: they race for its migrations. Those that
  // started are kept even when another failed, so that afterAll stops them.
  const starts = await Promise.allSettled([0, 1, 2].map(startInstance));
  for (const s of starts) if (s.status === "fulfilled") instances.push(s.value);
  for (const s of starts) if (s.status === "rejected") throw s.reason;
  nginx = await startNginx(async (dir) => {
    const tls = await selfSignedCertificate(["localhost", "127.0.0.1"], 2);
    writeFileSync(join(dir, "cert.pem"), tls.cert);
    writeFileSync(join(dir, "key.pem"), tls.key, { mode: 0o600 });
    lb = new Client(`https://127.0.0.1:${ports[3]}`, tls.cert, 60_000);
    return siteConfig(join(dir, "cert.pem"), join(dir, "key.pem"));
  });
  issued.a = await direct(0).obtainKeys(sink, "issued-a@example.com");
  issued.b = await direct(1).obtainKeys(sink, "issued-b@example.com");
  issued.c = await direct(2).obtainKeys(sink, "issued-c@example.com");
  issued.lb = await lb.obtainKeys(sink, "issued-lb@example.com");
}, 60_000);

afterAll(async () => {
  await nginx?.stop();
  await Promise.all(instances.map((s) => s.stop().catch(() => s.proc.kill("SIGKILL"))));
  await sink?.close();
  if (root) rmSync(root, { recursive: true, force: true });
}, 30_000);

describe("three instances behind nginx on one PostgreSQL database", () => {
  test("started together on a fresh database, they applied each migration exactly once; all serve", async () => {
    const rows = await psql(databaseUrl, "SELECT hash || ' ' || created_at FROM __drizzle_migrations ORDER BY id");
    expect(rows.split("\n")).toEqual(postgresMigrations.map((m) => `${m.hash} ${m.when}`));
    for (const i of [0, 1, 2]) {
      expect((await direct(i).fetch("/health")).status).toBe(200);
      // Behind a proxy an instance refuses what the proxy did not mark as HTTPS.
      expect(await answer(await new Client(instances[i]!.url, "").fetch("/health"))).toEqual({
        status: 403,
        code: "HTTPS_REQUIRED",
      });
    }
    expect((await lb.fetch("/health")).status).toBe(200);
  });

  test("nginx balances round-robin, marks requests HTTPS and appends the client's real address", async () => {
    const before = (await nginx!.requests()).length;
    for (let i = 0; i < 6; i++) expect((await lb.fetch("/health")).status).toBe(200);
    const served = (await nginx!.requests()).slice(before).map((r) => r.upstreams.join(","));
    expect(served.toSorted()).toEqual(
      ports
        .slice(0, 3)
        .flatMap((p) => [`127.0.0.1:${p}`, `127.0.0.1:${p}`])
        .toSorted(),
    );
    // A client's own X-Forwarded-Proto is overwritten: nginx speaks for the TLS it terminated.
    expect((await lb.fetch("/health", { headers: { "x-forwarded-proto": "http" } })).status).toBe(200);
    // A client's own X-Forwarded-For is kept on the left and ignored: the instances see 127.0.0.1,
    // which may read /internal/status, while 203.0.113.9 itself may not.
    expect((await lb.fetch("/internal/status", { headers: { "x-forwarded-for": "203.0.113.9" } })).status).toBe(200);
    expect(await answer(await direct(0, "203.0.113.9").fetch("/internal/status"))).toEqual({
      status: 404,
      code: "NOT_FOUND",
    });
  });

  test("uploads up to the service's limit pass nginx, so the service answers their size itself", async () => {
    const upload = (bytes: number) =>
      lb.convert(issued.lb!, "bearer", multipart({ format: "webp" }, new Uint8Array(bytes), "big.jpg"));
    // Exactly the limit reaches the service, which sniffs it (zeros are no image).
    expect(await answer(await upload(MAX_IMAGE_BYTES))).toEqual({ status: 415, code: "UNSUPPORTED_MEDIA_TYPE" });
    expect(await answer(await upload(MAX_IMAGE_BYTES + 1))).toEqual({ status: 413, code: "FILE_TOO_LARGE" });
    // Far over it, nginx stops the body itself (its own HTML page).
    expect(await answer(await upload(MAX_IMAGE_BYTES + 2 * 1024 * 1024))).toEqual({ status: 413, code: "(not JSON)" });
  });

  test("a code requested through A is exchanged exactly once: of concurrent right guesses on every door, one wins", async () => {
    const email = "once@example.com";
    expect((await direct(0).json("POST", "/v1/plugin/auth/request-otp", { email })).status).toBe(200);
    const otp = await otpFor(email);
    // A and B first, then more on all three instances (own client addresses) and through nginx.
    const doors = [
      direct(0),
      direct(1),
      ...Array.from({ length: 9 }, (_, n) => direct(n % 3, `198.51.100.${50 + n}`)),
      lb,
    ];
    const all = await racingOnCode(email, () =>
      doors.map((door) => door.json("POST", "/v1/plugin/auth/verify-otp", { email, otp })),
    );
    expect(tally(all.map((r) => `${r.status} ${r.body.code ?? r.body.status}`))).toEqual({
      "200 success": 1,
      "401 INVALID_OTP": doors.length - 1,
    });
    for (const late of [direct(2), lb])
      expect((await late.json("POST", "/v1/plugin/auth/verify-otp", { email, otp })).body.code).toBe("INVALID_OTP");
    const winner = all.find((r) => r.status === 200)!.body;
    issued.once = { apiKey: winner.api_key, secretKey: winner.secret_key };
    for (const door of [direct(2), lb]) expect((await convert(door, issued.once)).status).toBe(200);
  });

  test("five wrong guesses spread over the instances burn the code; concurrent guesses compare at most five", async () => {
    const email = "burn@example.com";
    expect((await direct(1).json("POST", "/v1/plugin/auth/request-otp", { email })).status).toBe(200);
    const otp = await otpFor(email);
    const doors = [direct(0), direct(1), direct(2), lb, direct(0)];
    const codes = [];
    for (const [n, door] of doors.entries())
      codes.push(
        (await door.json("POST", "/v1/plugin/auth/verify-otp", { email, otp: wrongCode(otp, n + 1) })).body.code,
      );
    expect(codes).toEqual(["INVALID_OTP", "INVALID_OTP", "INVALID_OTP", "INVALID_OTP", "TOO_MANY_ATTEMPTS"]);
    expect((await direct(2).json("POST", "/v1/plugin/auth/verify-otp", { email, otp })).body.code).toBe("INVALID_OTP");

    // Eight wrong guesses at once over three instances: exactly the fifth compared one burns it.
    const burst = "burst@example.com";
    expect((await lb.json("POST", "/v1/plugin/auth/request-otp", { email: burst })).status).toBe(200);
    const right = await otpFor(burst);
    const guesses = await racingOnCode(burst, () =>
      Array.from({ length: 8 }, (_, n) =>
        direct(n % 3, "192.0.2.8").json("POST", "/v1/plugin/auth/verify-otp", {
          email: burst,
          otp: wrongCode(right, n + 1),
        }),
      ),
    );
    expect(tally(guesses.map((g) => `${g.status} ${g.body.code}`))).toEqual({
      "401 INVALID_OTP": 7,
      "429 TOO_MANY_ATTEMPTS": 1,
    });
    expect((await direct(1).json("POST", "/v1/plugin/auth/verify-otp", { email: burst, otp: right })).body.code).toBe(
      "INVALID_OTP",
    );
  });

  test("rate limits count the events of every instance", async () => {
    // One code per address and minute: 30 requests at once (each from its own client address,
    // ten per instance) and three through nginx; one is answered, one mail is sent.
    const email = "limited@example.com";
    const doors = [...Array.from({ length: 30 }, (_, n) => direct(n % 3, `198.51.100.${100 + n}`)), lb, lb, lb];
    const asked = await Promise.all(doors.map((door) => door.json("POST", "/v1/plugin/auth/request-otp", { email })));
    expect(tally(asked.map((r) => `${r.status} ${r.body.code ?? r.body.status}`))).toEqual({
      "200 success": 1,
      "429 RATE_LIMITED": doors.length - 1,
    });
    for (const r of asked.filter((r) => r.status === 429))
      expect(Number(r.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(sink.messages.filter((m) => m.envelopeTo.includes(email))).toHaveLength(1);

    // Verifications per client address (30 per 5 minutes), one address spread over three instances.
    const { limit } = otpLimits.verifyPerIp[0];
    const tries = await Promise.all(
      Array.from({ length: limit + 15 }, (_, n) =>
        direct(n % 3, "192.0.2.30").json("POST", "/v1/plugin/auth/verify-otp", {
          email: "nobody@example.com",
          otp: "123456",
        }),
      ),
    );
    expect(tally(tries.map((r) => `${r.status} ${r.body.code}`))).toEqual({
      "401 INVALID_OTP": limit,
      "429 RATE_LIMITED": 15,
    });
  });

  test("a signature accepted by one instance is a replay on every instance", async () => {
    const form = webp();
    const ts = Math.floor(Date.now() / 1000);
    expect((await convert(lb, issued.a!, "signed", form, ts)).status).toBe(200);
    for (const door of [direct(0), direct(1), direct(2), lb])
      expect(await convert(door, issued.a!, "signed", form, ts)).toEqual({ status: 401, code: "REPLAYED_REQUEST" });

    const fresh = webp();
    const race = await Promise.all([0, 1, 2].map((i) => convert(direct(i), issued.b!, "signed", fresh, ts)));
    expect(tally(race.map((r) => `${r.status} ${r.code}`))).toEqual({ "200 image/webp": 1, "401 REPLAYED_REQUEST": 2 });
  });

  test("a key revoked with the CLI is refused on its next request on every instance", async () => {
    const keys = await lb.obtainKeys(sink, "revoked@example.com");
    for (const i of [0, 1, 2]) expect((await convert(direct(i), keys)).status).toBe(200);
    const id = await keyId(keys);
    const cwd = join(root, "cli");
    mkdirSync(cwd, { recursive: true });
    const revoked = await runCommand(launch, ["keys", "revoke", id], { cwd, env: { ...cleanEnv(), ...sharedEnv } });
    expect({ code: revoked.code, stdout: revoked.stdout.trim() }).toEqual({ code: 0, stdout: `revoked ${id}` });
    for (const door of [direct(0), direct(1), direct(2), lb]) {
      expect(await convert(door, keys)).toEqual({ status: 401, code: "INVALID_API_KEY" });
      expect(await convert(door, keys, "signed")).toEqual({ status: 401, code: "INVALID_API_KEY" });
    }
  });

  test("kill -9 of one instance mid-burst: the others keep serving, nothing issued is lost", async () => {
    const keys = Object.values(issued);
    const victim = instances[2]!;
    const victimAddress = `127.0.0.1:${ports[2]}`;
    const before = (await nginx!.requests()).length;
    const total = 48;
    const results = await burst(total, keys, (done) => done === total / 4 && victim.proc.kill("SIGKILL"));
    await victim.proc.exited;
    const during = (await nginx!.requests()).slice(before);
    // The victim really served part of the burst before it died.
    expect(during.some((r) => r.status === 200 && r.upstreams.at(-1) === victimAddress)).toBe(true);
    // Only requests already sent to the victim failed (nginx never resends a conversion), at most one per worker.
    const failed = results.filter((r) => r.status !== 200);
    expect(results).toHaveLength(total);
    expect(failed.length).toBeLessThanOrEqual(WORKERS);
    for (const f of failed) expect(f.status).toBe(502);
    for (const r of during.filter((r) => r.status !== 200)) expect(r.upstreams.at(-1)).toBe(victimAddress);

    // From now on every request succeeds, through nginx and directly on the survivors.
    const later = await burst(24, keys);
    expect(tally(later.map((r) => `${r.status} ${r.code}`))).toEqual({ "200 image/webp": 24 });
    for (const k of keys) for (const door of [direct(0), direct(1)]) expect((await convert(door, k)).status).toBe(200);
    // Once the dead instance's fail_timeout is over, nginx tries it again with a client's request:
    // the refused connection goes on to a survivor and that client still gets its image.
    const triedAgain = async () =>
      (await nginx!.requests()).some(
        (r) => r.upstreams.length > 1 && r.upstreams[0] === victimAddress && r.status === 200,
      );
    await until(
      async () => {
        expect(await convert(lb, keys[0]!)).toEqual({ status: 200, code: "image/webp" });
        return (await triedAgain()) || (await Bun.sleep(200), false);
      },
      20_000,
      "nginx to try the dead instance again",
    );
    // Every key issued before, through any door, is still there and active.
    const prefixes = keys.map((k) => `'${k.apiKey.slice(0, 12)}'`).join(",");
    expect(
      await psql(databaseUrl, `SELECT count(*) FROM api_keys WHERE revoked_at IS NULL AND key_prefix IN (${prefixes})`),
    ).toBe(String(keys.length));
  }, 45_000);

  test("usage from all instances adds up exactly once they flush at shutdown", async () => {
    // The killed instance comes back on its port, in its folder.
    instances[2] = await startInstance(2);
    const keys = await direct(2).obtainKeys(sink, "usage@example.com");
    const doors = [direct(0), direct(1), direct(2), direct(0), direct(1), direct(2), lb, lb, lb];
    const ok = await Promise.all(doors.flatMap((door) => [convert(door, keys), convert(door, keys)]));
    expect(tally(ok.map((r) => r.status))).toEqual({ 200: doors.length * 2 });
    // One refused attempt per instance: counted in the buckets, not in the key's conversions.
    const bad = await Promise.all(
      [0, 1, 2].map((i) => convert(direct(i), keys, "bearer", multipart({ format: "gif" }, jpeg, "photo.jpg"))),
    );
    expect(tally(bad.map((r) => `${r.status} ${r.code}`))).toEqual({ "400 UNSUPPORTED_FORMAT": 3 });

    expect(await Promise.all(instances.map((s) => s.stop()))).toEqual([0, 0, 0]);
    const id = await keyId(keys);
    const sums = await psql(
      databaseUrl,
      `SELECT outcome || '=' || sum(count) FROM usage_hourly WHERE key_id = '${id}' GROUP BY outcome ORDER BY outcome`,
    );
    expect(sums.split("\n")).toEqual(["UNSUPPORTED_FORMAT=3", `ok=${doors.length * 2}`]);
    expect(await psql(databaseUrl, `SELECT conversions FROM api_keys WHERE id = '${id}'`)).toBe(
      String(doors.length * 2),
    );
  }, 45_000);
});

/** A conversion's outcome: 200 and the image type, or the status and error code (connection failures: status 0). */
interface Answer {
  status: number;
  code: string;
}

async function answer(res: Response): Promise<Answer> {
  const bytes = await res.arrayBuffer();
  if (res.status === 200) return { status: 200, code: res.headers.get("content-type") ?? "" };
  try {
    return { status: res.status, code: String(JSON.parse(new TextDecoder().decode(bytes)).code) };
  } catch {
    return { status: res.status, code: "(not JSON)" };
  }
}

function convert(
  door: Client,
  keys: Keys,
  auth: "bearer" | "signed" = "bearer",
  form = webp(),
  timestamp?: number,
): Promise<Answer> {
  return door.convert(keys, auth, form, timestamp).then(answer, (err: Error) => ({ status: 0, code: err.message }));
}

/**
 * `total` bearer conversions through nginx by WORKERS clients in a loop, cycling over `keys`;
 * `progress` hears each completion. As many at once as two instances admit (IMGPRESS_CONCURRENCY
 * + IMGPRESS_QUEUE_SIZE each), so no answer is a 503 SERVER_BUSY.
 */
async function burst(total: number, keys: Keys[], progress: (done: number) => unknown = () => {}): Promise<Answer[]> {
  const results: Answer[] = [];
  let done = 0;
  await Promise.all(
    Array.from({ length: WORKERS }, async (_, w) => {
      for (let n = w; n < total; n += WORKERS) {
        results[n] = await convert(lb, keys[n % keys.length]!);
        progress(++done);
      }
    }),
  );
  return results;
}

function webp(): Multipart {
  return multipart({ format: "webp" }, jpeg, "photo.jpg");
}

/** Instance `i` spoken to directly, with the headers nginx would add for a client at `ip`. */
function direct(i: number, ip = `198.51.100.${i + 1}`): Client {
  return new Client(instances[i]!.url, "", 60_000, { "x-forwarded-proto": "https", "x-forwarded-for": ip });
}

/** Starts instance `i` in its own folder on its port (the same after a restart, as nginx expects). */
function startInstance(i: number): Promise<Service> {
  const cwd = join(root, `instance-${i}`);
  mkdirSync(cwd, { recursive: true });
  return startService({
    launch,
    dataDir: false,
    cwd,
    env: { ...sharedEnv, IMGPRESS_PORT: String(ports[i]) },
    startTimeoutMs: 30_000,
  });
}

/** docs/scaling/nginx.conf with only the instance ports, the listen port and the certificate paths replaced. */
function siteConfig(cert: string, key: string): string {
  let text = readFileSync(NGINX_CONF, "utf8");
  const replace = (from: string, to: string) => {
    const count = text.split(from).length - 1;
    if (count !== 1)
      throw new Error(`docs/scaling/nginx.conf: expected "${from}" exactly once, found it ${count} times`);
    text = text.replace(from, to);
  };
  for (const [i, address] of DOC_INSTANCES.entries()) replace(`${address} `, `127.0.0.1:${ports[i]} `);
  replace(DOC_LISTEN, `listen 127.0.0.1:${ports[3]} ssl;`);
  replace(DOC_CERT, cert);
  replace(DOC_KEY, key);
  return text;
}

async function otpFor(email: string): Promise<string> {
  return extractOtp(await sink.waitFor((m) => m.envelopeTo.includes(email) && /code/i.test(m.subject)));
}

/**
 * Sends the guesses `send` starts while another session holds the row of `email`'s code locked,
 * and releases it only once every guess waits for that row: they then run as close together as
 * the database allows, instead of one after another as they happen to arrive.
 */
async function racingOnCode<T>(email: string, send: () => Promise<T>[]): Promise<T[]> {
  const holding = psql(
    databaseUrl,
    `BEGIN; SELECT 1 FROM otp_codes WHERE email = '${email}' FOR UPDATE; SELECT pg_sleep(60); COMMIT;`,
  ).catch(() => "cancelled");
  const holder = () =>
    psql(databaseUrl, "SELECT pid FROM pg_stat_activity WHERE query LIKE '%pg_sleep(60)%' AND pid <> pg_backend_pid()");
  await until(async () => (await holder()) !== "", 10_000, "the session holding the code's row");
  const guesses = send();
  const waiting = `SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query ILIKE 'update "otp_codes"%'`;
  await until(
    async () => Number(await psql(databaseUrl, waiting)) === guesses.length,
    10_000,
    `${guesses.length} guesses waiting for the code's row`,
  );
  await psql(databaseUrl, `SELECT pg_cancel_backend(${await holder()})`);
  expect(await holding).toBe("cancelled");
  return Promise.all(guesses);
}

async function keyId(keys: Keys): Promise<string> {
  return psql(databaseUrl, `SELECT id FROM api_keys WHERE key_prefix = '${keys.apiKey.slice(0, 12)}'`);
}

/** How many times each value occurs. */
function tally(values: (string | number)[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const v of values) counts[String(v)] = (counts[String(v)] ?? 0) + 1;
  return counts;
}

function hostArch(): "x64" | "arm64" {
  if (process.arch === "x64" || process.arch === "arm64") return process.arch;
  throw new Error(`no imgpress executable for ${process.arch}`);
}
