/**
 * Graceful drain of the real service (E2E_RUNTIME picks Bun or Deno): SIGTERM in the middle of a
 * burst of large conversions lets every accepted request get its image, refuses new connections,
 * logs what it waits for, checkpoints the WAL and exits 0 (SIGHUP alike); a second signal exits at once; the
 * shutdown timeout cuts what is left and exits 1; IMGPRESS_DRAIN_DELAY_S keeps the listener open,
 * readiness 503, while new requests are still served.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { once } from "node:events";
import { existsSync, statSync } from "node:fs";
import { connect } from "node:net";
import { join } from "node:path";
import { type TLSSocket, connect as tlsConnect } from "node:tls";
import { expectImage, type Keys } from "../support/convert-helpers.ts";
import * as img from "../support/images.ts";
import { burstForm, convertBearer, gateStats, obtainKeys, until } from "../support/ops.ts";
import { type RunningServer, startServer } from "../support/server.ts";
import { type SmtpSink, startSmtpSink } from "../support/smtp.ts";

const BURST = 5;
const WIDTH = 2400;
const HEIGHT = 1800;

let sink: SmtpSink;
let photo: Buffer;

beforeAll(async () => {
  sink = await startSmtpSink();
  photo = await img.photo(WIDTH, HEIGHT);
});
afterAll(async () => {
  await sink?.close();
});

/** GET /health over an HTTP/1.1 connection that asks to be kept alive: the answer's head, and whether the server then closed the connection. */
async function keptAliveHealth(port: number): Promise<{ head: string; closed: boolean }> {
  const socket = tlsConnect({ host: "127.0.0.1", port, rejectUnauthorized: false, ALPNProtocols: ["http/1.1"] });
  await once(socket, "secureConnect");
  let text = "";
  socket.on("data", (chunk: Buffer) => (text += chunk.toString("latin1")));
  const closed = once(socket, "close").then(() => true);
  socket.write("GET /health HTTP/1.1\r\nHost: localhost\r\nConnection: keep-alive\r\n\r\n");
  const result = await Promise.race([
    closed,
    new Promise<boolean>((resolve) => setTimeout(() => resolve(false), 3_000)),
  ]);
  socket.destroy();
  return { head: text.split("\r\n\r\n")[0]!, closed: result };
}

/** A server with one conversion slot, so a burst (of one key: no per-key share) forms a queue behind it. */
async function start(email: string, env: Record<string, string> = {}): Promise<{ server: RunningServer; keys: Keys }> {
  const server = await startServer({
    env: {
      IMGPRESS_SMTP_URL: sink.url,
      IMGPRESS_CONCURRENCY: "1",
      IMGPRESS_QUEUE_SIZE: "8",
      IMGPRESS_KEY_MAX_ADMITTED: "9",
      ...env,
    },
  });
  return { server, keys: await obtainKeys(server, sink, email) };
}

/** An HTTP/1.1 upload with a wrong key: the headers and two bytes of a 500 kB body; resolves with the socket, kept open, once the 401 came. */
async function refusedUpload(port: number): Promise<TLSSocket> {
  const socket = tlsConnect({ host: "127.0.0.1", port, rejectUnauthorized: false, ALPNProtocols: ["http/1.1"] });
  await once(socket, "secureConnect");
  socket.write(
    `POST /v1/plugin/convert HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer imp_${"x".repeat(40)}\r\nContent-Type: multipart/form-data; boundary=b\r\nContent-Length: 500000\r\n\r\n--`,
  );
  let answer = "";
  await new Promise<void>((resolve) =>
    socket.on("data", (chunk: Buffer) => (answer += chunk.toString("latin1")).includes("INVALID_API_KEY") && resolve()),
  );
  expect(answer).toStartWith("HTTP/1.1 401");
  return socket;
}

/** Starts BURST conversions and resolves once the server has admitted all of them. */
async function burst(server: RunningServer, keys: Keys) {
  const body = await burstForm(photo);
  const answers = Array.from({ length: BURST }, () => convertBearer(server, keys.api_key, body));
  await until(async () => (await gateStats(server)).admitted === BURST, 20_000, "the whole burst to be admitted");
  return answers;
}

describe("SIGTERM during a burst", () => {
  test("every accepted request gets its image, new connections are refused, exit 0 with a checkpointed WAL", async () => {
    const { server, keys } = await start("drain@example.com");
    try {
      const answers = await burst(server, keys);
      server.kill("SIGTERM");
      const first = await server.waitForLog(
        (l) => String(l.json?.msg ?? "").startsWith("SIGTERM received: draining:"),
        5_000,
      );
      // The signal really came mid-burst: several accepted requests were still open.
      expect(Number(first.json!.requests)).toBeGreaterThanOrEqual(2);
      // The listener is closed at once: a new connection fails while the burst is still converting.
      const late = await server.fetch("/health").then(
        (r) => `answered ${r.status}`,
        () => "refused",
      );
      expect(late).toBe("refused");
      expect((await gateStats(server).catch(() => null)) ?? "no new connections").toBe("no new connections");

      const results = await Promise.all(answers);
      for (const r of results) {
        expect(r.status).toBe(200);
        await expectImage(r.bytes, { format: "webp", width: WIDTH, height: HEIGHT });
      }
      expect(await server.exited()).toBe(0);
      const msgs = server.logs.map((l) => String(l.json?.msg ?? ""));
      expect(msgs.some((m) => /^SIGTERM received: draining: \d+ conversions in flight, \d+ queued/.test(m))).toBe(true);
      expect(msgs).toContain("all requests answered");
      expect(msgs).toContain("stopped");
      // wal_checkpoint(TRUNCATE) at close: the main file holds everything, the WAL is empty.
      const wal = join(server.dataDir, "imgpress.db-wal");
      expect(statSync(wal, { throwIfNoEntry: false })?.size ?? 0).toBe(0);
    } finally {
      await server.stop();
    }
  }, 120_000);

  test("a second signal exits at once, non-zero, and says so", async () => {
    const { server, keys } = await start("drain-twice@example.com");
    try {
      const answers = await burst(server, keys);
      server.kill("SIGTERM");
      await server.waitForLog((l) => String(l.json?.msg ?? "").startsWith("SIGTERM received"), 5_000);
      server.kill("SIGINT");
      const started = Date.now();
      expect(await server.exited()).toBe(130);
      expect(Date.now() - started).toBeLessThan(5_000);
      expect(server.logs.some((l) => l.json?.msg === "second SIGINT: exiting at once")).toBe(true);
      const results = await Promise.all(answers);
      // Not all of them can have finished: the burst holds several seconds of work on one slot.
      expect(results.filter((r) => r.status === 200).length).toBeLessThan(BURST);
    } finally {
      await server.stop();
    }
  }, 120_000);

  test("SIGHUP (the terminal it was started from closed) drains like SIGTERM: every accepted request answered, exit 0, no pid record left", async () => {
    const { server, keys } = await start("drain-hup@example.com");
    try {
      const answers = await burst(server, keys);
      server.kill("SIGHUP");
      await server.waitForLog((l) => String(l.json?.msg ?? "").startsWith("SIGHUP received: draining:"), 5_000);
      expect(await server.exited()).toBe(0);
      for (const r of await Promise.all(answers)) expect(r.status).toBe(200);
      expect(server.logs.some((l) => l.json?.msg === "stopped" && l.json?.exitCode === 0)).toBe(true);
      expect(existsSync(join(server.dataDir, "imgpress.db.pid"))).toBe(false);
    } finally {
      await server.stop();
    }
  }, 120_000);

  test("requests refused before their bodies were read (a wrong key) do not hold the stop: exit 0 after a 5 s grace, not at the timeout", async () => {
    const { server } = await start("drain-refused@example.com", { IMGPRESS_SHUTDOWN_TIMEOUT_S: "20" });
    try {
      const body = await burstForm(photo);
      const refused = await Promise.all(
        Array.from({ length: 3 }, () => convertBearer(server, `imp_${"x".repeat(40)}`, body)),
      );
      for (const r of refused)
        expect({ status: r.status, code: r.body?.code }).toEqual({ status: 401, code: "INVALID_API_KEY" });
      // Connections a client keeps after its answer, whatever the runtime does with them: an HTTP/1.1
      // upload refused before its body (only two bytes of it sent), and a TCP connection that never starts TLS.
      const held = await refusedUpload(server.port);
      const bare = connect({ host: "127.0.0.1", port: server.port });
      await once(bare, "connect");
      const t0 = performance.now();
      server.kill("SIGTERM");
      expect(await server.exited()).toBe(0);
      // Their connections closed with the answer: nothing was left for the drain to wait on.
      expect(performance.now() - t0).toBeLessThan(10_000);
      expect(server.logs.some((l) => String(l.json?.msg ?? "").startsWith("shutdown timeout"))).toBe(false);
      held.destroy();
      bare.destroy();
    } finally {
      await server.stop();
    }
  }, 60_000);

  test("IMGPRESS_SHUTDOWN_TIMEOUT_S cuts what is left, still closes the database, exits 1", async () => {
    const { server, keys } = await start("drain-timeout@example.com", { IMGPRESS_SHUTDOWN_TIMEOUT_S: "0.5" });
    try {
      const answers = await burst(server, keys);
      server.kill("SIGTERM");
      expect(await server.exited()).toBe(1);
      const msgs = server.logs.map((l) => String(l.json?.msg ?? ""));
      expect(msgs.some((m) => m.startsWith("shutdown timeout (0.5 s) reached"))).toBe(true);
      expect(msgs).toContain("stopped");
      await Promise.all(answers);
    } finally {
      await server.stop();
    }
  }, 120_000);

  test("IMGPRESS_DRAIN_DELAY_S: readiness answers 503 over new connections and requests are still served, then the listener closes", async () => {
    const delayS = 3;
    const { server, keys } = await start("drain-delay@example.com", { IMGPRESS_DRAIN_DELAY_S: String(delayS) });
    try {
      const answers = await burst(server, keys);
      const signalled = Date.now();
      server.kill("SIGTERM");
      await server.waitForLog(
        (l) =>
          String(l.json?.msg ?? "").startsWith(
            `SIGTERM received: readiness answers 503; the listener closes in ${delayS} s`,
          ),
        5_000,
      );
      // A balancer's probe on a new connection sees the 503, not a refused connection.
      const ready = await server.fetch("/health/ready");
      expect(ready.status).toBe(503);
      expect(((await ready.json()) as { checks: { draining: string } }).checks.draining).toBe("shutting down");
      // A request that still arrives during the delay is served as usual (after the listener closed it
      // would be refused). It queues behind the burst, which may outlast the delay on a loaded machine,
      // so its answer is awaited with the burst's.
      const late = convertBearer(server, keys.api_key, await burstForm(await img.photo(300, 200)));
      // Told to close its connection: a client reusing it as the listener closed lost its request (reset, unanswered).
      const kept = await keptAliveHealth(server.port);
      expect(kept.head).toMatch(/^HTTP\/1\.1 (200|503)/);
      expect(kept.head).toMatch(/\r\nconnection: close\r\n/i);
      expect(kept.closed).toBe(true);
      await server.waitForLog(
        (l) => String(l.json?.msg ?? "").startsWith("closing the listener: draining:"),
        (delayS + 5) * 1000,
      );
      expect(Date.now() - signalled).toBeGreaterThanOrEqual(delayS * 1000 - 100);
      const after = await server.fetch("/health").then(
        (r) => `answered ${r.status}`,
        () => "refused",
      );
      // Still converting the burst (one slot) when the listener closed, or already gone: never answered.
      expect(after).toBe("refused");
      for (const r of await Promise.all([...answers, late])) expect(r.status).toBe(200);
      expect(await server.exited()).toBe(0);
    } finally {
      await server.stop();
    }
  }, 120_000);
});
