// The parts of the service's fixed cost per request that happen inside the process, measured on the
// service's own classes (the same ones the server runs) with one thumbnail's request: multipart
// parse, authentication (key lookup; signature with its replay record), the replay INSERT alone at
// the database's synchronous level and at FULL, the usage observer, and the pipeline's set-up (the
// header read that convertImage does before decoding). The parts between the wire and the app
// (TLS, HTTP, routing, response, log line) come from the client-side table of the section.

import { randomBytes } from "node:crypto";
import { readFileSync, rmSync } from "node:fs";
import sharp from "sharp";
import { readUpload } from "../../src/api/convert/form.ts";
import { parseMultipart } from "../../src/api/convert/multipart.ts";
import { convertImage } from "../../src/conversion/pipeline/index.ts";
import { presets } from "../../src/conversion/pipeline/presets.ts";
import { authHeaders, multipart } from "../../test/support/imgpress.ts";
import { openServices } from "./auth-cost.ts";
import { fmt, median, table } from "./util.ts";

/** Medians (ms) of each in-process part, with the markdown table. */
export async function measureFixedCost(imagePath: string, dataDir: string, samples: number) {
  const { config, store, services, keys } = await openServices(dataDir);
  const image = readFileSync(imagePath);
  const limits = { maxPixels: config.maxPixels, timeoutS: config.convertTimeoutS };
  const ms: Record<string, number[]> = {};
  const time = async <T>(part: string, warm: boolean, work: () => Promise<T> | T): Promise<T> => {
    const t0 = performance.now();
    const out = await work();
    if (warm) (ms[part] ??= []).push(performance.now() - t0);
    return out;
  };
  const insert = (sync: string) => ({
    sql: "INSERT INTO seen_signatures (key_id, signature, expires_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING RETURNING key_id",
    args: [sync, randomBytes(16).toString("hex"), Date.now() + 60_000],
  });
  const setSync = (level: string) =>
    Promise.all(Array.from({ length: 4 }, () => store.client.execute(`PRAGMA synchronous = ${level}`)));
  const synchronous = Number((await store.client.execute("PRAGMA synchronous")).rows[0]?.[0]);
  // Two loops: the request's own parts warm (back to back, as a busy server runs them), then the
  // pipeline's, so a conversion's cold caches do not land on whichever part follows it.
  for (let i = 0; i < samples + 10; i++) {
    const warm = i >= 10;
    const form = multipart({ format: "webp", quality: "lossy" }, image, "thumb.jpg");
    const bearer = new Headers({ "content-type": form.contentType, ...authHeaders(keys, "bearer", form.body) });
    const signed = new Headers({ "content-type": form.contentType, ...authHeaders(keys, "signed", form.body) });
    await time("multipart parse + form checks", warm, () => readUpload(parseMultipart(form.body, form.contentType)));
    await time("bearer: key lookup (SHA-256 + indexed SELECT)", warm, () =>
      services.authenticator.fromHeaders("POST", "/v1/convert", bearer),
    );
    const credential = await time("signed: headers, timestamp, key lookup", warm, () =>
      services.authenticator.fromHeaders("POST", "/v1/convert", signed),
    );
    await time("signed: key secret, body hash, HMACs, replay INSERT", warm, () => credential.verifyBody(form.body));
    await time(`replay INSERT alone (synchronous = ${["OFF", "NORMAL", "FULL", "EXTRA"][synchronous]})`, warm, () =>
      store.client.execute(insert("now")),
    );
    const event = {
      keyId: "k",
      format: "webp" as const,
      quality: "lossy" as const,
      outcome: "ok",
      bytesIn: image.length,
      bytesOut: 1,
      queueWaitMs: 0,
      convertMs: 5,
      guardEncodes: 0,
      at: Date.now(),
    };
    await time("usage: record the event in memory", warm, () => services.usage.observer(event));
  }
  const form = multipart({ format: "webp", quality: "lossy" }, image, "thumb.jpg");
  const upload = readUpload(parseMultipart(form.body, form.contentType));
  for (let i = 0; i < Math.min(samples, 100) + 5; i++) {
    const warm = i >= 5;
    await time("pipeline set-up: header read (in both service and in-process)", warm, () =>
      sharp(upload.image, { limitInputPixels: false }).metadata(),
    );
    await time("convertImage (the in-process reference's work)", warm, () =>
      convertImage(upload.image, upload.options, limits),
    );
    await time("bare sharp chain, same output", warm, () =>
      sharp(upload.image, { limitInputPixels: limits.maxPixels, failOn: "error", autoOrient: true })
        .toColourspace("srgb")
        .webp(presets.webp.lossy)
        .toBuffer(),
    );
  }
  // The durable write the replay record cost before synchronous = NORMAL, on the same file.
  await setSync("FULL");
  for (let i = 0; i < Math.min(samples, 100); i++)
    await time("replay INSERT alone (synchronous = FULL, for comparison)", i >= 5, () =>
      store.client.execute(insert("full")),
    );
  store.close();
  rmSync(dataDir, { recursive: true, force: true });
  const p50 = Object.fromEntries(Object.entries(ms).map(([k, v]) => [k, median(v)]));
  const markdown =
    `In-process parts of the fixed cost, on the service's own classes (RequestAuthenticator, KeyService, UsageRecorder, the libSQL store migrated in a temp dir, the pipeline) with the same thumbnail's request, medians of ${samples} samples (the request's parts, back to back) and of ${Math.min(samples, 100)} (the pipeline's, then the FULL comparison):\n\n` +
    table(
      ["part", "median"],
      Object.entries(p50).map(([k, v]) => [k, `${fmt(v, 3)} ms`]),
    );
  return { p50, markdown, raw: p50 };
}
