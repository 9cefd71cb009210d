// Stage "restart": the same data folder again: same certificate, the key still valid, the cache reused; and nothing written elsewhere.
import { readdirSync, readFileSync } from "node:fs";
import { basename, join } from "node:path";
import { Client, type Keys, type Listening, multipart } from "../../test/support/imgpress.ts";
import { type Smoke, startServe, stopServe } from "./context.ts";
import { assertOneExtraction } from "./folders.ts";
import { checkImage } from "./photo.ts";
import { assert } from "./report.ts";

/** Restarts on the first start's data folder and converts with its key (one conversion). */
export async function restartStage(
  s: Smoke,
  first: Listening,
  ca: string,
  keys: Keys,
  cacheNames: string[],
): Promise<void> {
  const svc = await s.report.must(
    s.tag,
    "serve: restart on the same data folder",
    () => startServe(s),
    (v) => v.url,
  );
  await s.report.check(
    s.tag,
    "restart: same certificate, /health verified against the first start's cert.pem",
    async () => {
      assert(readFileSync(s.certPath, "utf8") === ca, "cert.pem changed on restart");
      assert(svc.info.certSha256 === first.certSha256, `fingerprint ${svc.info.certSha256} != ${first.certSha256}`);
      const res = await new Client(svc.url, ca, s.lim.request).fetch("/health");
      assert(res.status === 200, `HTTP ${res.status}`);
      return "unchanged";
    },
  );
  const { photo } = s;
  const small = Math.min(480, photo.width);
  await s.report.check(s.tag, `restart: key still valid, JPEG → WebP max_width ${small} (signed request)`, async () => {
    const res = await new Client(svc.url, ca, s.lim.convert).convert(
      keys,
      "signed",
      multipart({ format: "webp", max_width: String(small) }, photo.bytes, "photo.jpg"),
    );
    return checkImage(res, "webp", small, Math.round((photo.height * small) / photo.width), photo.bytes.length);
  });
  await s.report.check(s.tag, "cache: extraction reused on restart (no new copy)", () =>
    assertOneExtraction(s.cacheDir, s.t.arch, cacheNames),
  );
  await s.report.must(s.tag, "SIGTERM after restart", () => stopServe(svc));
}

/** Nothing written outside the data, cache and home folders: the working folder holds the binary and its data, TMPDIR stays empty. */
export async function footprintStage(s: Smoke): Promise<void> {
  await s.report.check(s.tag, "nothing written outside the data, cache and home folders", () => {
    const inRun = readdirSync(s.run).sort();
    assert(
      JSON.stringify(inRun) === JSON.stringify([basename(s.exe), "imgpress-data"].sort()),
      `working folder holds [${inRun.join(", ")}]`,
    );
    const inTmp = readdirSync(join(s.tmp, "tmpdir"));
    assert(inTmp.length === 0, `TMPDIR holds [${inTmp.join(", ")}]`);
    return `working folder: ${basename(s.exe)}, imgpress-data/ (${readdirSync(s.dataDir).sort().join(", ")}); TMPDIR empty`;
  });
}
