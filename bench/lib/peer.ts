// Bench-side handle of the ipx peer (lib/ipx-server.mjs under Node).
import { join } from "node:path";
import type { Subprocess } from "bun";
import { childEnv } from "./util.ts";

/** A running ipx peer. */
export interface Peer {
  pid: number;
  base: string;
  ca: string;
  info: { sharp: string; vips: string; concurrency: number; node: string };
  stop(): Promise<void>;
}

/** Starts ipx over HTTPS serving `dirs` with the key pair in `pemPath` (the service's self-signed pair). */
export async function startIpx(dirs: string[], pemPath: string, ca: string): Promise<Peer> {
  const env = childEnv();
  const proc: Subprocess<"ignore", "pipe", "inherit"> = Bun.spawn(
    ["node", join(import.meta.dir, "ipx-server.mjs"), dirs.join(","), pemPath],
    {
      env,
      stdin: "ignore",
      stdout: "pipe",
      stderr: "inherit",
    },
  );
  const reader = proc.stdout.getReader();
  let text = "";
  while (!text.includes("\n")) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`ipx exited: ${text}`);
    text += new TextDecoder().decode(value);
  }
  reader.releaseLock();
  void proc.stdout.pipeTo(new WritableStream());
  const info = JSON.parse(text.split("\n")[0]!);
  return {
    pid: proc.pid,
    base: `https://127.0.0.1:${info.port}`,
    ca,
    info,
    async stop() {
      proc.kill("SIGTERM");
      const t = setTimeout(() => proc.kill("SIGKILL"), 5000);
      await proc.exited;
      clearTimeout(t);
    },
  };
}

/** GET of one file converted to WebP q80 (ipx's modifiers), read to the end. */
export async function ipxGet(peer: Peer, rel: string): Promise<{ status: number; bytes: number; ms: number }> {
  const t0 = performance.now();
  const res = await fetch(`${peer.base}/f_webp,q_80/${rel.split("/").map(encodeURIComponent).join("/")}`, {
    tls: { ca: peer.ca },
  } as RequestInit);
  const buf = await res.arrayBuffer();
  return { status: res.status, bytes: buf.byteLength, ms: performance.now() - t0 };
}
