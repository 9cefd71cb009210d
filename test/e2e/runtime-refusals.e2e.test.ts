/**
 * Requests the runtime's HTTP parser refuses before any code of ours runs (issue 37, point 5).
 * Neither runtime offers a hook there (Bun's `error` and Deno's `onError` see only exceptions of
 * the handler), so the answers are the runtime's own, without the JSON body: this test pins them
 * as docs/api.md ("Answers the runtime gives itself") describes them, so that a runtime upgrade
 * that changes one is noticed. Each closes its connection and leaves the server healthy.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { connect } from "node:tls";
import { e2eRuntime, type RunningServer, startServer } from "../support/server.ts";

let server: RunningServer;

beforeAll(async () => {
  server = await startServer();
}, 60_000);

afterAll(async () => {
  await server?.stop();
});

/** Sends `raw` on a fresh connection and resolves with everything received once the server closed it (bounded). */
function exchange(raw: string): Promise<{ text: string; closed: boolean }> {
  return new Promise((resolve) => {
    let text = "";
    const socket = connect(
      { host: "127.0.0.1", port: server.port, ca: server.ca, servername: "localhost", ALPNProtocols: ["http/1.1"] },
      () => socket.write(raw),
    );
    const timer = setTimeout(() => (socket.destroy(), resolve({ text, closed: false })), 5_000);
    socket.on("data", (chunk) => (text += chunk.toString("latin1")));
    socket.on("close", () => (clearTimeout(timer), resolve({ text, closed: true })));
    socket.on("error", () => {});
  });
}

const CASES = [
  {
    name: "a 60 KB header",
    raw: `GET /health HTTP/1.1\r\nHost: localhost\r\nX-Big: ${"a".repeat(60 * 1024)}\r\n\r\n`,
    bun: 431,
    deno: 431,
  },
  {
    name: "Content-Length together with chunked",
    raw: "POST /v1/plugin/convert HTTP/1.1\r\nHost: localhost\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
    bun: 400,
    deno: 400,
  },
  {
    name: "a negative Content-Length",
    raw: "POST /v1/plugin/convert HTTP/1.1\r\nHost: localhost\r\nContent-Length: -1\r\n\r\n",
    bun: 400,
    deno: 400,
  },
  { name: "a space in the path", raw: "GET /he alth HTTP/1.1\r\nHost: localhost\r\n\r\n", bun: 505, deno: 400 },
] as const;

describe("answers the runtime gives itself", () => {
  test.each(CASES)(
    "$name",
    async (c) => {
      const { text, closed } = await exchange(c.raw);
      const status = e2eRuntime() === "deno" ? c.deno : c.bun;
      expect(text).toStartWith(`HTTP/1.1 ${status} `);
      expect(text).toMatch(/\r\nconnection: close\r\n/i);
      // Deno keeps the connection open after its app's own 431 (it ignores the Connection: close the app sends).
      expect(closed).toBe(e2eRuntime() === "bun" || status !== 431);
      const body = text.slice(text.indexOf("\r\n\r\n") + 4);
      // Deno lets the app see headers of any size: our own 16 KiB limit answers there, with the JSON error.
      if (e2eRuntime() === "deno" && status === 431) expect(JSON.parse(body).code).toBe("HEADERS_TOO_LARGE");
      else expect(body).toBe("");
      expect((await server.fetch("/health")).status).toBe(200);
    },
    30_000,
  );
});
