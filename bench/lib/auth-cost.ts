// The auth figure: what verifying one signed 20 MB request costs, measured on the service's own
// classes (RequestAuthenticator, KeyService, libSQL store with its migrations) in this process:
// header checks + key lookup (fromHeaders), then SHA-256 of the body + HMACs + replay insert
// (verifyBody). Each sample is a fresh signature, as the replay check requires.
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { type Config, loadConfig } from "../../src/core/config.ts";
import { sha256Hex } from "../../src/core/crypto.ts";
import { createLogger } from "../../src/core/log.ts";
import { logMailer } from "../../src/core/mail/mailer.ts";
import type { Store } from "../../src/data/db/index.ts";
import { openSqliteStore as openStore } from "../../src/data/db/sqlite.ts";
import { createServices } from "../../src/services.ts";
import { signedConvert } from "./service.ts";
import { median } from "./util.ts";

/** Medians of the verification steps of a signed request. */
export interface AuthCost {
  bodyBytes: number;
  samples: number;
  /** Median ms of the whole check (fromHeaders + verifyBody). */
  totalMs: number;
  headersMs: number;
  verifyBodyMs: number;
  /** Median ms of the SHA-256 of the body alone (src/core/crypto.ts sha256Hex). */
  sha256Ms: number;
}

/** The service's own classes on a migrated libSQL file in `dataDir`, with one issued key pair. */
export async function openServices(dataDir: string) {
  const config = loadConfig({
    IMGPRESS_DATA_DIR: dataDir,
    IMGPRESS_MASTER_KEY: randomBytes(32).toString("hex"),
    IMGPRESS_LOG_LEVEL: "error",
  });
  const store = await openStore(config.databaseUrl);
  return { config, store, ...(await servicesOn(store, config)) };
}

/** The service's own classes on an open, migrated `store` (either dialect), with one issued key pair. */
export async function servicesOn(store: Store, config: Config) {
  const logger = createLogger("error", () => {});
  const services = await createServices({
    config,
    store,
    logger,
    mailer: logMailer(() => {}),
    masterKey: new Uint8Array(Buffer.from(config.masterKey!, "hex")),
    loadDocsAsset: async () => new Blob([]),
  });
  const issued = await services.keys.issue("bench@example.com", "https://bench.example.com");
  return { services, keys: { apiKey: issued.apiKey, secretKey: issued.secretKey } };
}

/** Verifies `samples` fresh signed requests with the body of `imagePath` on the service's own classes. */
export async function measureAuthCost(imagePath: string, dataDir: string, samples: number): Promise<AuthCost> {
  const { store, services, keys } = await openServices(dataDir);
  const image = readFileSync(imagePath);
  const headers: number[] = [];
  const verify: number[] = [];
  const total: number[] = [];
  const sha: number[] = [];
  let bodyBytes = 0;
  for (let i = 0; i < samples + 1; i++) {
    const req = signedConvert(keys, image, join("x", "worst.jpg"));
    bodyBytes = req.body.length;
    const h = new Headers(req.headers);
    const t0 = performance.now();
    const credential = await services.authenticator.fromHeaders("POST", "/v1/convert", h);
    const t1 = performance.now();
    await credential.verifyBody(req.body);
    const t2 = performance.now();
    await sha256Hex(req.body);
    const t3 = performance.now();
    if (i === 0) continue; // warm-up
    headers.push(t1 - t0);
    verify.push(t2 - t1);
    total.push(t2 - t0);
    sha.push(t3 - t2);
  }
  store.close();
  return {
    bodyBytes,
    samples,
    totalMs: median(total),
    headersMs: median(headers),
    verifyBodyMs: median(verify),
    sha256Ms: median(sha),
  };
}
