/**
 * A crash (kill -9) in the middle of a thumbnail workload. The database commits with
 * synchronous = NORMAL (src/data/db/index.ts: no fsync per commit), which must still lose nothing a
 * killed process had committed: the issued key keeps working, its consumed code stays consumed,
 * every signature the server accepted stays a replay, and usage counts already flushed stay
 * (only those of the last flush interval, still in memory, may be lost). And the hot path holds
 * no key cache: a key revoked by another process is refused on the very next request.
 */
import { beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { createClient } from "@libsql/client";
import * as img from "../support/images.ts";
import { authHeaders, type Keys, multipart, type Service, startService } from "../support/imgpress.ts";
import { e2eRuntime, runCli, useSmtpSink } from "../support/server.ts";
import { extractOtp } from "../support/smtp.ts";

const sink = useSmtpSink();
let thumbs: Buffer[];

beforeAll(async () => {
  // WordPress-like small sizes: the workload where every request writes a replay record.
  thumbs = await Promise.all([img.photo(150, 100), img.photo(300, 200), img.photo(768, 512)]);
});

/** A signed upload as sent: the exact body and headers, so it can be sent again. */
interface Sent {
  body: Uint8Array;
  headers: Record<string, string>;
}

function signedUpload(keys: Keys, n: number): Sent {
  const form = multipart({ format: n % 2 ? "avif" : "webp" }, thumbs[n % thumbs.length]!, `thumb-${n}.jpg`);
  return { body: form.body, headers: { "content-type": form.contentType, ...authHeaders(keys, "signed", form.body) } };
}

async function conversions(svc: Service, email: string): Promise<number> {
  const db = createClient({ url: `file:${join(svc.dataDir, "imgpress.db")}` });
  try {
    const { rows } = await db.execute({ sql: "SELECT conversions FROM api_keys WHERE email = ?", args: [email] });
    return Number(rows[0]?.conversions ?? 0);
  } finally {
    db.close();
  }
}

describe("kill -9 under the thumbnail workload", () => {
  test("loses no issued key, consumed code or seen signature; flushed usage counts stay", async () => {
    const email = "crash@example.com";
    const svc = await startService({
      launch: { runtime: e2eRuntime() },
      env: { IMGPRESS_SMTP_URL: sink.url, IMGPRESS_USAGE_FLUSH_S: "0.2" },
    });
    try {
      expect((await svc.client.json("POST", "/v1/plugin/auth/request-otp", { email })).status).toBe(200);
      const code = extractOtp(await sink.waitFor((m) => m.envelopeTo.includes(email)));
      const verified = await svc.client.json("POST", "/v1/plugin/auth/verify-otp", { email, otp: code });
      expect(verified.status).toBe(200);
      const keys: Keys = { apiKey: verified.body.api_key, secretKey: verified.body.secret_key };

      // Four client loops; the process is killed once some uploads were accepted and a flush has
      // written some counts, with requests still in flight.
      const accepted: Sent[] = [];
      let sent = 0;
      let killed = false;
      const loop = async () => {
        while (!killed && sent < 400) {
          const upload = signedUpload(keys, sent++);
          const res = await svc.client
            .fetch("/v1/plugin/convert", {
              method: "POST",
              headers: upload.headers,
              body: upload.body as Uint8Array<ArrayBuffer>,
            })
            .catch(() => null);
          if (res?.status === 200) accepted.push(upload);
          await res?.arrayBuffer().catch(() => {});
        }
      };
      const loops = Array.from({ length: 4 }, loop);
      let flushed = 0;
      for (let i = 0; i < 100 && (accepted.length < 12 || flushed === 0); i++) {
        await Bun.sleep(100);
        flushed = await conversions(svc, email);
      }
      expect(flushed).toBeGreaterThan(0);
      svc.proc.kill("SIGKILL");
      killed = true;
      await Promise.all(loops);
      expect(await svc.proc.exited).not.toBe(0);

      await svc.restart();
      const db = createClient({ url: `file:${join(svc.dataDir, "imgpress.db")}` });
      try {
        expect((await db.execute("PRAGMA integrity_check")).rows[0]?.[0]).toBe("ok");
      } finally {
        db.close();
      }
      // The issued key still converts.
      const again = signedUpload(keys, 1);
      expect(
        (
          await svc.client.fetch("/v1/plugin/convert", {
            method: "POST",
            headers: again.headers,
            body: again.body as Uint8Array<ArrayBuffer>,
          })
        ).status,
      ).toBe(200);
      // The consumed code is still consumed.
      const reused = await svc.client.json("POST", "/v1/plugin/auth/verify-otp", { email, otp: code });
      expect(reused.status).toBe(401);
      expect(reused.body.code).toBe("INVALID_OTP");
      // Every accepted signature is still a replay (a sample, to keep the test short).
      for (const upload of accepted.slice(-8)) {
        const replay = await svc.client.fetch("/v1/plugin/convert", {
          method: "POST",
          headers: upload.headers,
          body: upload.body as Uint8Array<ArrayBuffer>,
        });
        expect(replay.status).toBe(401);
        expect(((await replay.json()) as { code: string }).code).toBe("REPLAYED_REQUEST");
      }
      // Counts flushed before the kill are kept; none is invented (the last interval's may be lost).
      const after = await conversions(svc, email);
      expect(after).toBeGreaterThanOrEqual(flushed);
      expect(after).toBeLessThanOrEqual(accepted.length + 1);
    } finally {
      await svc.stop();
    }
  }, 90_000);
});

describe("no key cache on the hot path", () => {
  test("a key revoked by the CLI (another process) is refused on the server's very next request, bearer and signed", async () => {
    const email = "revoked-live@example.com";
    const svc = await startService({ launch: { runtime: e2eRuntime() }, env: { IMGPRESS_SMTP_URL: sink.url } });
    try {
      const keys = await svc.client.obtainKeys(sink, email);
      // Warm: had the server cached the key, these would have put it there.
      for (const auth of ["bearer", "signed"] as const) {
        const res = await svc.client.convert(keys, auth, multipart({ format: "webp" }, thumbs[0]!, "warm.jpg"));
        expect(res.status).toBe(200);
        await res.arrayBuffer();
      }
      const listed = await runCli(["keys", "list", "--json", "--email", email], svc.env);
      const [row] = JSON.parse(listed.stdout) as { id: string }[];
      expect((await runCli(["keys", "revoke", row!.id], svc.env)).code).toBe(0);
      for (const auth of ["bearer", "signed"] as const) {
        const res = await svc.client.convert(keys, auth, multipart({ format: "webp" }, thumbs[0]!, "after.jpg"));
        expect(res.status).toBe(401);
        expect(((await res.json()) as { code: string }).code).toBe("INVALID_API_KEY");
      }
    } finally {
      await svc.stop();
    }
  }, 60_000);
});
