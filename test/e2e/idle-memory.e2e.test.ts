/**
 * Freed memory goes back to the system once conversions pause (src/conversion/idle.ts): on Bun the
 * server calls glibc's malloc_trim about 2 s after the last conversion and logs it at debug level,
 * once per pause; Deno has no such hook (E2E_RUNTIME=deno: no line).
 */
import { describe, expect, test } from "bun:test";
import { convertForm } from "../support/convert-helpers.ts";
import * as img from "../support/images.ts";
import { burstForm, convertBearer, holdsFor, obtainKeys } from "../support/ops.ts";
import { e2eRuntime, useServer } from "../support/server.ts";

const { server, sink } = useServer({ env: { IMGPRESS_LOG_LEVEL: "debug" } });
const LINE = "conversions idle: freed memory handed back";

const released = () => server.logs.filter((l) => l.json?.msg === LINE).length;

/** Waits (up to 10 s) until the release line has been logged `count` times. */
async function releasedTimes(count: number): Promise<void> {
  for (const deadline = Date.now() + 10_000; released() < count; await Bun.sleep(100)) {
    if (Date.now() > deadline) throw new Error(`released ${released()} times, expected ${count}`);
  }
}

describe("memory after a pause in conversions", () => {
  test("is handed back once per pause, after the last conversion of a burst", async () => {
    const keys = await obtainKeys(server, sink, "idle-memory@example.com");
    const body = await burstForm(await img.photo(1600, 1200));
    const answers = await Promise.all(Array.from({ length: 3 }, () => convertBearer(server, keys.api_key, body)));
    for (const a of answers) expect(a.status).toBe(200);
    if (e2eRuntime() === "bun") {
      await releasedTimes(1);
      // Not during the burst: the release waits for a pause (2 s) after the last conversion. Told
      // by the server's own clock, as a test that looks "right after" may itself run late.
      const at = (msg: string, path?: string) =>
        server.logs
          .filter((l) => l.json?.msg === msg && (!path || l.json?.path === path))
          .map((l) => Date.parse(String(l.json?.time)));
      expect(Math.min(...at(LINE)) - Math.max(...at("request", "/v1/plugin/convert"))).toBeGreaterThan(1_500);
    }
    // No conversion since: no second release (Deno has no release hook: never one), watched past one more pause.
    const expected = e2eRuntime() === "bun" ? 1 : 0;
    await holdsFor(() => released() === expected, 3_500, `${expected} release(s) and no more`);
    expect((await convertBearer(server, keys.api_key, body)).status).toBe(200);
    if (e2eRuntime() === "bun") await releasedTimes(2);
    else await holdsFor(() => released() === 0, 3_500, "no release under Deno");
  }, 60_000);

  // The quality guard holds a lossy AVIF's decoded pixels in one buffer (72 MB here); garbage
  // after the answer, but the collector may keep it for minutes unless the pause collects it.
  test.skipIf(e2eRuntime() !== "bun")(
    "the buffers of a large conversion are collected at the pause",
    async () => {
      const keys = await obtainKeys(server, sink, "idle-buffers@example.com");
      const body = await convertForm(await img.photo(6000, 4000), { format: "avif" });
      const arrayBuffers = async () =>
        ((await (await server.fetch("/internal/status")).json()).memory as { arrayBuffers: number }).arrayBuffers;
      const before = released();
      expect((await convertBearer(server, keys.api_key, body)).status).toBe(200);
      await releasedTimes(before + 1);
      // The collector scans stacks conservatively, so a stale pointer can keep a buffer one collection
      // longer: a small conversion brings another pause. Never collected, it would stay above 72 MB.
      const small = await burstForm(await img.photo(320, 240));
      for (let pause = 1; pause < 3 && (await arrayBuffers()) >= 24 * 2 ** 20; pause++) {
        const count = released();
        expect((await convertBearer(server, keys.api_key, small)).status).toBe(200);
        await releasedTimes(count + 1);
      }
      expect(await arrayBuffers()).toBeLessThan(24 * 2 ** 20);
    },
    60_000,
  );
});
