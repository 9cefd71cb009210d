// Bench-side handle of the reference worker (lib/refworker.ts).
import { join } from "node:path";
import type { Subprocess } from "bun";
import { childEnv } from "./util.ts";

/** A running reference worker. */
export interface Reference {
  pid: number;
  call<T>(msg: Record<string, unknown>): Promise<T>;
  stop(): Promise<void>;
}

/** Starts the reference worker with `env` on top of the bench's environment. */
export async function startReference(env: Record<string, string | undefined> = {}): Promise<Reference> {
  const pending = new Map<number, { resolve: (v: any) => void; reject: (e: Error) => void }>();
  let ready!: () => void;
  const isReady = new Promise<void>((r) => (ready = r));
  const merged = childEnv(env);
  const proc: Subprocess = Bun.spawn([process.execPath, join(import.meta.dir, "refworker.ts")], {
    env: merged,
    stdio: ["ignore", "inherit", "inherit"],
    ipc(msg: any) {
      if (msg.ready) return ready();
      const p = pending.get(msg.id);
      if (!p) return;
      pending.delete(msg.id);
      msg.error ? p.reject(new Error(msg.error)) : p.resolve(msg.result);
    },
  });
  await isReady;
  let id = 0;
  return {
    pid: proc.pid,
    call<T>(msg: Record<string, unknown>) {
      return new Promise<T>((resolve, reject) => {
        const n = ++id;
        pending.set(n, { resolve, reject });
        proc.send({ ...msg, id: n });
      });
    },
    async stop() {
      proc.kill();
      await proc.exited;
    },
  };
}
