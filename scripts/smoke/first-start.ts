// Stage "first start": serve from an empty folder, the listening line, the generated certificate, verified HTTPS.
import { readFileSync } from "node:fs";
import { relative } from "node:path";
import type { Service } from "../../test/support/imgpress.ts";
import { type Smoke, startServe } from "./context.ts";
import { assert } from "./report.ts";

/** Starts the first server and checks what it reports and serves; returns it with the certificate clients must trust. */
export async function firstStartStage(s: Smoke): Promise<{ svc: Service; ca: string }> {
  const svc = await s.report.must(
    s.tag,
    "serve: first start",
    () => startServe(s),
    (v) => `${v.url}, data ${relative(s.tmp, v.dataDir)}`,
  );
  const ca = await s.report.must(
    s.tag,
    "serve: listening line and self-signed certificate",
    () => {
      assert(/^https:\/\/127\.0\.0\.1:\d+$/.test(svc.url), `url ${svc.url}`);
      assert(svc.info.dataDir === s.dataDir, `dataDir ${svc.info.dataDir}, expected ${s.dataDir} (./imgpress-data)`);
      assert(
        svc.info.selfSignedCert === s.certPath,
        `selfSignedCert ${svc.info.selfSignedCert}, expected ${s.certPath}`,
      );
      return readFileSync(s.certPath, "utf8");
    },
    () => `${relative(s.tmp, s.certPath)}, sha256 ${svc.info.certSha256?.slice(0, 23)}…`,
  );
  await s.report.must(s.tag, "GET /health over verified HTTPS", async () => {
    const res = await svc.client.fetch("/health");
    const body = JSON.stringify(await res.json());
    assert(res.status === 200, `HTTP ${res.status}: ${body}`);
    assert(body === '{"status":"ok"}', `body ${body}`);
    // The same request without the certificate must be refused, or the check above proved nothing.
    const unverified = await fetch(`${svc.url}/health`, { signal: AbortSignal.timeout(s.lim.request) }).then(
      () => "accepted",
      (err: Error) => err.message,
    );
    assert(
      unverified !== "accepted",
      "a client that does not trust cert.pem was accepted: TLS verification is not in effect",
    );
    return `200 {"status":"ok"}; untrusted client refused (${unverified.slice(0, 60)})`;
  });
  return { svc, ca };
}
