/**
 * Slow and oversized clients against the real HTTPS server, on loopback, bounded in time:
 * 60 connections trickling their headers are cut by the runtime's header deadline while a normal
 * client keeps converting; a body that stalls gets 408 REQUEST_TIMEOUT after IMGPRESS_UPLOAD_TIMEOUT_S,
 * with Connection: close (the connection is closed though the client goes on sending), stalled uploads
 * hold no conversion place, and a large result nobody reads holds its place until then;
 * headers over the runtime's limit (a 60 KB Content-Type) get 431 where the runtime answers it.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { connect, type TLSSocket } from "node:tls";
import sharp from "sharp";
import { convertForm, type Keys } from "../support/convert-helpers.ts";
import * as img from "../support/images.ts";
import { convertBearer, obtainKeys } from "../support/ops.ts";
import { e2eRuntime, type RunningServer, startServer } from "../support/server.ts";
import { type SmtpSink, startSmtpSink } from "../support/smtp.ts";

const TRICKLERS = 60;
/** Bun cuts incomplete headers after its fixed 10 s deadline (checked every 4 s, so 10–15 s; more room for a busy machine). */
const HEADER_CUT_WITHIN_MS = 25_000;

let sink: SmtpSink;
let server: RunningServer;
let keys: Keys;

beforeAll(async () => {
  sink = await startSmtpSink();
  server = await startServer({ env: { IMGPRESS_SMTP_URL: sink.url, IMGPRESS_UPLOAD_TIMEOUT_S: "2" } });
  keys = await obtainKeys(server, sink, "slow@example.com");
}, 60_000);

afterAll(async () => {
  await server?.stop();
  await sink?.close();
});

/** A TLS connection to the server (or `to`, from `localAddress`: another loopback address is another client) that records what came back and when it closed. */
function open(
  to: RunningServer = server,
  localAddress?: string,
): Promise<{ socket: TLSSocket; received: () => string; closed: Promise<number> }> {
  return new Promise((resolve, reject) => {
    let data = "";
    const started = Date.now();
    const socket = connect(
      {
        host: "127.0.0.1",
        port: to.port,
        ca: to.ca,
        servername: "localhost",
        ALPNProtocols: ["http/1.1"],
        ...(localAddress ? { localAddress } : {}),
      },
      () => resolve({ socket, received: () => data, closed }),
    );
    const closed = new Promise<number>((done) => socket.on("close", () => done(Date.now() - started)));
    socket.on("data", (chunk) => (data += chunk.toString("latin1")));
    socket.on("error", reject);
  });
}

/** Resolves once a response with a JSON body (or the close of the connection) arrived, then closes it; bounded by `ms`. */
async function answered(c: Awaited<ReturnType<typeof open>>, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  while (!c.socket.destroyed && !/\r\n\r\n\{.*\}$/s.test(c.received()) && Date.now() < deadline) {
    if (c.socket.readableEnded) break;
    await Bun.sleep(50);
  }
  c.socket.destroy();
}

describe("slow clients", () => {
  test.skipIf(e2eRuntime() !== "bun")(
    `${TRICKLERS} connections trickling headers are cut; a normal client keeps converting`,
    async () => {
      const conns = await Promise.all(Array.from({ length: TRICKLERS }, () => open()));
      let line = 0;
      for (const c of conns) c.socket.write("POST /v1/plugin/convert HTTP/1.1\r\nHost: localhost\r\n");
      const trickle = setInterval(() => {
        line++;
        for (const c of conns) if (!c.socket.destroyed) c.socket.write(`X-Slow-${line}: ${"y".repeat(10)}\r\n`);
      }, 500);
      const cutoff = setTimeout(() => {
        for (const c of conns) c.socket.destroy();
      }, HEADER_CUT_WITHIN_MS + 5_000);
      try {
        const image = await convertForm(await img.photo(640, 480));
        let converted = 0;
        const closedAll = Promise.all(conns.map((c) => c.closed));
        let done = false;
        closedAll.then(() => (done = true));
        while (!done) {
          expect((await convertBearer(server, keys.api_key, image)).status).toBe(200);
          converted++;
        }
        const times = await closedAll;
        expect(converted).toBeGreaterThan(0);
        // Cut by the server (not by our safety net), never answered, within the header deadline.
        expect(Math.max(...times)).toBeLessThan(HEADER_CUT_WITHIN_MS);
        expect(Math.min(...times)).toBeGreaterThan(5_000);
        for (const c of conns) expect(c.received()).toBe("");
      } finally {
        clearInterval(trickle);
        clearTimeout(cutoff);
      }
      expect((await server.fetch("/health")).status).toBe(200);
    },
    60_000,
  );

  test("a stalled body gets 408 REQUEST_TIMEOUT after the upload timeout, and the server stays healthy", async () => {
    const c = await open();
    const body = await convertForm(await img.photo(320, 240));
    c.socket.write(
      `POST /v1/plugin/convert HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${keys.api_key}\r\n` +
        `Content-Type: ${body.contentType}\r\nContent-Length: ${body.bytes.length}\r\n\r\n`,
    );
    c.socket.write(body.bytes.subarray(0, 1000));
    // The client goes on trickling after the 408: the server closes the connection all the same.
    const trickle = setInterval(() => c.socket.destroyed || c.socket.write("x"), 200);
    await Promise.race([c.closed, Bun.sleep(20_000)]);
    clearInterval(trickle);
    expect(c.received()).toStartWith("HTTP/1.1 408");
    expect(c.received()).toContain('"code":"REQUEST_TIMEOUT"');
    expect(c.received()).toMatch(/\r\nconnection: close\r\n/i);
    // Deno (2.x) sends the header but keeps the connection open while the client sends (docs/operations.md).
    if (e2eRuntime() === "bun") expect(c.socket.readableEnded || c.socket.destroyed).toBe(true);
    expect((await server.fetch("/health")).status).toBe(200);
  }, 30_000);

  // Deno (2.9.5) does not abort request.signal when the client goes away while the handler runs, so there the job still runs.
  test.skipIf(e2eRuntime() !== "bun")(
    "a client that disconnects while its conversion waits for a slot: the job is dropped, never converted",
    async () => {
      // Generous time limits: the slow conversion below must outlast the queued one on any machine, never time out.
      const one = await startServer({
        env: {
          IMGPRESS_SMTP_URL: sink.url,
          IMGPRESS_CONCURRENCY: "1",
          IMGPRESS_CONVERT_TIMEOUT_S: "300",
          IMGPRESS_QUEUE_TIMEOUT_S: "300",
        },
      });
      try {
        const k = await obtainKeys(one, sink, "gone@example.com");
        const status = async () =>
          (await (await one.fetch("/internal/status")).json()).conversions as { running: number; waiting: number };
        const until = async (what: string, ok: (c: { running: number; waiting: number }) => boolean) => {
          for (const deadline = Date.now() + 20_000; !ok(await status()); await Bun.sleep(20))
            if (Date.now() > deadline) throw new Error(`never ${what}`);
        };
        // A lossless AVIF of a 12 MP image holds the only slot for several seconds.
        const slow = convertBearer(
          one,
          k.api_key,
          await convertForm(await img.photo(4000, 3000), { format: "avif", quality: "lossless" }),
        );
        await until("running", (c) => c.running === 1);
        const c = await open(one);
        const body = await convertForm(await img.photo(320, 240));
        c.socket.write(
          `POST /v1/plugin/convert HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${k.api_key}\r\n` +
            `Content-Type: ${body.contentType}\r\nContent-Length: ${body.bytes.length}\r\n\r\n`,
        );
        c.socket.write(body.bytes);
        await until("queued", (s) => s.waiting === 1);
        c.socket.destroy();
        // It leaves the queue at once, while the slow one still runs.
        await until("dropped", (s) => s.waiting === 0);
        expect((await status()).running).toBe(1);
        const line = await one.waitForLog((l) => l.json?.msg === "request" && l.json?.status === 499);
        expect(line.json?.path).toBe("/v1/plugin/convert");
        expect(line.json?.code).toBe("CLIENT_CLOSED_REQUEST");
        expect((await slow).status).toBe(200);
        // The 200's line may still be on its way through the pipe when its answer has arrived.
        await one.waitForLog(
          (l) => l.json?.msg === "request" && l.json?.status === 200 && l.json?.path === "/v1/plugin/convert",
        );
        const converted = one.logs.filter((l) => l.json?.msg === "request" && l.json?.path === "/v1/plugin/convert");
        expect(converted.map((l) => l.json?.status).sort()).toEqual([200, 499]);
      } finally {
        await one.stop();
      }
    },
    60_000,
  );

  test("one key's stalled uploads hold no conversion place: the same key and another client still convert; the stalled ones end with 408 and a closed connection", async () => {
    // A server of its own: the places are fixed (2 + 8, whatever the machine's cores) and the upload
    // timeout leaves room to open every stalled connection on a busy machine before the first ends.
    const own = await startServer({
      env: {
        IMGPRESS_SMTP_URL: sink.url,
        IMGPRESS_UPLOAD_TIMEOUT_S: "5",
        IMGPRESS_CONCURRENCY: "2",
        IMGPRESS_QUEUE_SIZE: "8",
      },
    });
    try {
      const conversions = async () =>
        (await (await own.fetch("/internal/status")).json()).conversions as { admitted: number; receiving: number };
      const [mine, other] = [
        await obtainKeys(own, sink, "stalls@example.com"),
        await obtainKeys(own, sink, "other@example.com"),
      ];
      const body = await convertForm(await img.photo(320, 240));
      const stall = async () => {
        const c = await open(own);
        c.socket.write(
          `POST /v1/plugin/convert HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${mine.api_key}\r\n` +
            `Content-Type: ${body.contentType}\r\nContent-Length: ${body.bytes.length}\r\n\r\n`,
        );
        c.socket.write(body.bytes.subarray(0, body.bytes.length - 1));
        return c;
      };
      const stalled = [];
      for (let i = 0; i < 10; i++) stalled.push(await stall());
      for (const deadline = Date.now() + 10_000; (await conversions()).receiving < 10; await Bun.sleep(20)) {
        if (Date.now() > deadline) throw new Error("the stalled uploads were never received");
      }
      // Ten stalled uploads of one key and one address (more than its share of places, 8 of 2 + 8), every place
      // free: they are not admitted until their body has arrived.
      expect((await conversions()).admitted).toBe(0);
      expect((await convertBearer(own, mine.api_key, body)).status).toBe(200);
      expect((await convertBearer(own, other.api_key, body)).status).toBe(200);
      // The stalled ones end at the upload timeout (5 s here) with 408, and their connections are closed with it.
      await Promise.all(stalled.map((c) => Promise.race([c.closed, Bun.sleep(30_000)])));
      for (const c of stalled) expect(c.received()).toStartWith("HTTP/1.1 408");
      for (const c of stalled) expect(c.received()).toMatch(/\r\nconnection: close\r\n/i);
      expect((await conversions()).receiving).toBe(0);
    } finally {
      await own.stop();
    }
  }, 60_000);

  test("a client that does not read a large result: its place is held, then given back at the upload timeout, the connection closed", async () => {
    const conversions = async () =>
      (await (await server.fetch("/internal/status")).json()).conversions as { admitted: number; running: number };
    // Lossless WebP of noise: ~12 MB, more than the loopback's socket buffers take at once.
    const noise = await sharp(crypto.getRandomValues(new Uint8Array(2000 * 2000 * 3)), {
      raw: { width: 2000, height: 2000, channels: 3 },
    })
      .png({ compressionLevel: 1 })
      .toBuffer();
    const body = await convertForm(noise, { format: "webp", quality: "lossless" });
    const answeredConversions = () =>
      server.logs.filter(
        (l) => l.json?.msg === "request" && l.json?.path === "/v1/plugin/convert" && l.json?.status === 200,
      ).length;
    const answeredBefore = answeredConversions();
    const c = await open();
    c.socket.write(
      `POST /v1/plugin/convert HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${keys.api_key}\r\n` +
        `Content-Type: ${body.contentType}\r\nContent-Length: ${body.bytes.length}\r\n\r\n`,
    );
    c.socket.write(body.bytes);
    // Never read while the server converts and answers.
    c.socket.pause();
    // Answered (the request's log line is written with the response, before its body is sent).
    for (const deadline = Date.now() + 30_000; answeredConversions() === answeredBefore; await Bun.sleep(50)) {
      if (Date.now() > deadline) throw new Error(`never converted: ${JSON.stringify(await conversions())}`);
    }
    // Converted, unread: the place stays held (for up to the upload timeout, 2 s, counted from the
    // answer: looked at right away, as a sleep here could outlast it on a loaded machine).
    expect((await conversions()).admitted).toBe(1);
    for (const deadline = Date.now() + 15_000; (await conversions()).admitted > 0; await Bun.sleep(100))
      if (Date.now() > deadline) throw new Error("the place was never given back");
    // Then the connection is closed without the whole result.
    c.socket.resume();
    const closedAfter = await Promise.race([c.closed, Bun.sleep(15_000).then(() => -1)]);
    expect(closedAfter).toBeGreaterThan(0);
    const received = c.received();
    const head = received.slice(0, received.indexOf("\r\n\r\n"));
    expect(head).toStartWith("HTTP/1.1 200");
    const length = Number(/\r\nx-optimized-size: (\d+)/i.exec(head)![1]);
    expect(length).toBeGreaterThan(8 * 1024 * 1024);
    expect(Buffer.byteLength(received, "latin1") - head.length).toBeLessThan(length);
    expect((await convertBearer(server, keys.api_key, await convertForm(await img.photo(320, 240)))).status).toBe(200);
  }, 60_000);

  test("a 60 KB Content-Type header is answered 431; the server stays healthy", async () => {
    const c = await open();
    c.socket.write(
      `POST /v1/plugin/convert HTTP/1.1\r\nHost: localhost\r\nContent-Type: ${"a".repeat(60 * 1024)}\r\nContent-Length: 0\r\n\r\n`,
    );
    await answered(c, 10_000);
    expect(c.received()).toStartWith("HTTP/1.1 431 ");
    // Bun's parser answers before any code of ours runs, without a body; Deno lets the app answer with the JSON error.
    if (e2eRuntime() === "deno") expect(c.received()).toContain('"code":"HEADERS_TOO_LARGE"');
    expect((await server.fetch("/health")).status).toBe(200);
  }, 30_000);
});
