// Section "auth": the cost of verifying a signed 20 MB request, against converting it.
import { rmSync } from "node:fs";
import { measureAuthCost } from "../lib/auth-cost.ts";
import { figure, type Section } from "../lib/figures.ts";
import { tempDir } from "../lib/service.ts";
import { fmt, fmtMs, median, progress } from "../lib/util.ts";

/** The auth-cost section, on the service's own classes in the bench process. */
export const auth: Section = {
  name: "auth",
  async run(b) {
    const worst = b.worst[0]!;
    progress("auth cost: signed verification of a 20 MB body on the service's own classes…");
    const dir = tempDir("auth");
    const cost = await measureAuthCost(worst.path, dir, b.P.authSamples);
    rmSync(dir, { recursive: true, force: true });
    const conv: number[] = [];
    for (let i = 0; i < b.P.worstConvReps; i++)
      conv.push((await b.ref.call<{ ms: number }>({ op: "convert", path: worst.path, format: "webp" })).ms);
    const ratio = cost.totalMs / median(conv);
    const f = figure({
      figure: "auth cost",
      measured: `${fmtMs(cost.totalMs)} to verify vs ${fmtMs(median(conv))} to convert (${worst.name}, ${cost.bodyBytes} bytes body)`,
      ratio,
      against: "that request's conversion time",
      target: "≤ 0.02",
      met: ratio <= 0.02,
    });
    const markdown =
      "## Auth cost: signed request with a 20 MB body\n\n" +
      `Measured on the service's own RequestAuthenticator, KeyService and libSQL store (migrated, in a temp dir) in the bench process; ${cost.samples} samples, medians, each a fresh signature. ` +
      `Header checks + key lookup (one indexed SELECT, AES-GCM open of the secret): ${fmtMs(cost.headersMs)}; body check (SHA-256 of ${cost.bodyBytes} bytes, the HMACs, replay INSERT): ${fmtMs(cost.verifyBodyMs)}, ` +
      `of which SHA-256 alone ${fmtMs(cost.sha256Ms)}. Conversion of the same image (in-process, WebP lossy, median of ${conv.length}): ${fmtMs(median(conv))}. ` +
      `Ratio **${fmt(ratio * 100, 2)} %**.`;
    return { figures: [f], markdown, raw: { auth: { cost, conv } } };
  },
};
