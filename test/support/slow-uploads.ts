/**
 * Slow uploads as an attacker sends them, over raw connections: shared by the end-to-end test
 * (test/e2e/slow-uploads.e2e.test.ts) and the bench (bench/slow-uploads.ts).
 */
import { connect as plainConnect, type Socket } from "node:net";
import { connect as tlsConnect } from "node:tls";
import { e2eRuntime } from "./server.ts";

/** What the slow uploads declare: 1 MB, sent one byte every TRICKLE_MS. */
export const DECLARED = 1_000_000;
const TRICKLE_MS = 1_000;

/** The server to connect to: its port, and its certificate unless it is behind a proxy (plain HTTP). */
export interface Target {
  port: number;
  ca?: string;
}

/** A raw connection (TLS unless the server is behind a proxy) that records what came back and whether it closed. */
export interface Conn {
  socket: Socket;
  received: () => string;
  closed: Promise<void>;
  isClosed: () => boolean;
}

export function open(server: Target, localAddress?: string): Promise<Conn> {
  return new Promise((resolve, reject) => {
    let data = "";
    let closedNow = false;
    const options = { host: "127.0.0.1", port: server.port, ...(localAddress ? { localAddress } : {}) };
    const ready = () => resolve({ socket, received: () => data, closed, isClosed: () => closedNow });
    const socket: Socket = server.ca
      ? tlsConnect({ ...options, ca: server.ca, servername: "localhost", ALPNProtocols: ["http/1.1"] }, ready)
      : plainConnect(options, ready);
    const closed = new Promise<void>((done) => socket.on("close", () => ((closedNow = true), done())));
    socket.on("data", (chunk) => (data += chunk.toString("latin1")));
    socket.on("error", (err) => (closedNow ? undefined : reject(err)));
  });
}

/** Starts one slow upload: headers naming `credential`, a declared 1 MB body, then one byte every TRICKLE_MS until the connection ends. */
export async function slowUpload(
  server: Target,
  credential: Record<string, string>,
  from: { localAddress?: string; forwardedFor?: string },
): Promise<Conn> {
  const c = await open(server, from.localAddress);
  const forwarded = from.forwardedFor ? `X-Forwarded-For: ${from.forwardedFor}\r\nX-Forwarded-Proto: https\r\n` : "";
  const creds = Object.entries(credential)
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join("");
  c.socket.write(
    `POST /v1/plugin/convert HTTP/1.1\r\nHost: localhost\r\n${creds}${forwarded}Content-Type: multipart/form-data; boundary=x\r\nContent-Length: ${DECLARED}\r\n\r\n--x`,
  );
  const trickle = setInterval(() => (c.isClosed() ? clearInterval(trickle) : c.socket.write("a")), TRICKLE_MS);
  c.closed.then(() => clearInterval(trickle));
  return c;
}

/** Keeps `count` slow uploads open per source, opening a new one whenever one ends (after `pauseMs`), until `stop`; counts the answers. */
export function attack(open1: (source: number) => Promise<Conn>, sources: number, count: number, pauseMs = 100) {
  const conns = new Set<Conn>();
  const answers: string[] = [];
  let stopped = false;
  const keep = async (source: number) => {
    while (!stopped) {
      const c = await open1(source).catch(() => undefined);
      if (!c) continue;
      conns.add(c);
      // Deno's server keeps a connection open after an answer that asks to close it (see docs/operations.md): the answer ends the upload there.
      while (!c.isClosed() && !(e2eRuntime() === "deno" && c.received().includes("\r\n\r\n")))
        await Promise.race([c.closed, Bun.sleep(100)]);
      c.socket.destroy();
      conns.delete(c);
      answers.push(c.received().split("\r\n")[0] ?? "");
      if (c.received() !== "" && !/\r\nconnection: close\r\n/i.test(c.received()))
        answers.push(`NO CLOSE: ${c.received().split("\r\n")[0]}`);
      await Bun.sleep(pauseMs);
    }
  };
  const loops = Array.from({ length: sources * count }, (_, i) => keep(i % sources));
  return {
    conns,
    answers,
    async stop() {
      stopped = true;
      for (const c of conns) c.socket.destroy();
      await Promise.all(loops);
    },
  };
}
