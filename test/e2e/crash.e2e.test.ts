/**
 * kill -9 under load (key issuance, signed and bearer conversions all running): on restart the
 * database passes `PRAGMA integrity_check`, and everything the clients were told happened is still
 * there: every issued key converts, every consumed code stays consumed, every accepted signature is
 * still refused as a replay.
 */
import { beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { createClient } from "@libsql/client";
import { type Body, convertForm, type Keys, readResponse } from "../support/convert-helpers.ts";
import * as img from "../support/images.ts";
import { burstForm, convertBearer, obtainKeys } from "../support/ops.ts";
import { useServer } from "../support/server.ts";
import { signedHeaders } from "../support/sign.ts";
import { extractOtp } from "../support/smtp.ts";

const { server, sink } = useServer({ env: { IMGPRESS_CONCURRENCY: "1", IMGPRESS_QUEUE_SIZE: "8" } });
let signer: Keys;

beforeAll(async () => {
  signer = await obtainKeys(server, sink, "signer@example.com");
}, 60_000);

/** What the clients were told before the crash. */
interface Acknowledged {
  keys: Keys[];
  codes: { email: string; otp: string }[];
  signed: { headers: Record<string, string>; body: Body }[];
}

async function issueLoop(ack: Acknowledged, running: () => boolean): Promise<void> {
  for (let i = 0; running() && i < 12; i++) {
    const email = `crash-${i}@example.com`;
    try {
      if ((await server.json("POST", "/v1/plugin/auth/request-otp", { email })).status !== 200) continue;
      const otp = extractOtp(await sink.waitFor((m) => m.envelopeTo.includes(email), 5_000));
      const verified = await server.json("POST", "/v1/plugin/auth/verify-otp", { email, otp });
      if (verified.status === 200) {
        ack.keys.push(verified.body);
        ack.codes.push({ email, otp });
      }
    } catch {
      return; // the server is gone
    }
  }
}

async function signedLoop(ack: Acknowledged, running: () => boolean, image: Uint8Array): Promise<void> {
  for (let i = 0; running(); i++) {
    const body = await convertForm(image, { max_width: String(100 + i) });
    const headers = {
      "content-type": body.contentType,
      ...signedHeaders({
        apiKey: signer.api_key,
        secretKey: signer.secret_key,
        timestamp: Math.floor(Date.now() / 1000),
        body: body.bytes,
      }),
    };
    try {
      const res = await server.fetch("/v1/plugin/convert", {
        method: "POST",
        body: body.bytes as Uint8Array<ArrayBuffer>,
        headers,
      });
      if (res.status === 200) ack.signed.push({ headers, body });
      await res.arrayBuffer();
    } catch {
      return;
    }
  }
}

async function bearerLoop(running: () => boolean, body: Body): Promise<void> {
  while (running()) if ((await convertBearer(server, signer.api_key, body)).status === 0) return;
}

describe("kill -9 under load", () => {
  test("integrity_check passes; issued keys, consumed codes and seen signatures survive", async () => {
    const ack: Acknowledged = { keys: [], codes: [], signed: [] };
    let alive = true;
    const running = () => alive;
    const small = await img.photo(320, 240);
    const big = await burstForm(await img.photo(1600, 1200));
    const load = Promise.all([
      issueLoop(ack, running),
      signedLoop(ack, running, small),
      bearerLoop(running, big),
      bearerLoop(running, big),
    ]);
    const deadline = Date.now() + 30_000;
    while ((ack.keys.length < 4 || ack.signed.length < 4) && Date.now() < deadline) await Bun.sleep(50);
    expect(ack.keys.length).toBeGreaterThanOrEqual(4);
    expect(ack.signed.length).toBeGreaterThanOrEqual(4);
    server.kill("SIGKILL");
    expect(await server.exited()).not.toBe(0);
    alive = false;
    await load;

    const client = createClient({ url: `file:${join(server.dataDir, "imgpress.db")}` });
    try {
      expect((await client.execute("PRAGMA integrity_check")).rows.map((r) => String(r[0]))).toEqual(["ok"]);
    } finally {
      client.close();
    }

    await server.restart();
    for (const keys of ack.keys)
      expect((await convertBearer(server, keys.api_key, await convertForm(small))).status).toBe(200);
    for (const { email, otp } of ack.codes) {
      const again = await server.json("POST", "/v1/plugin/auth/verify-otp", { email, otp });
      expect(again.status).toBe(401);
    }
    for (const { headers, body } of ack.signed) {
      const replay = await readResponse(
        await server.fetch("/v1/plugin/convert", {
          method: "POST",
          body: body.bytes as Uint8Array<ArrayBuffer>,
          headers,
        }),
      );
      expect(replay.status).toBe(401);
      expect(replay.body.code).toBe("REPLAYED_REQUEST");
    }
  }, 120_000);
});
