/**
 * releaseWhenIdle: freed memory is handed back once, after conversions pause, never while the
 * gate holds requests. A real ConversionGate with admissions held by hand; short real delays.
 */
import { describe, expect, test } from "bun:test";
import { ConversionGate } from "../src/convert/gate.ts";
import { releaseWhenIdle } from "../src/convert/idle.ts";
import type { ConversionEvent } from "../src/convert/service.ts";

const DELAY_MS = 40;
const event = {} as ConversionEvent;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function setup() {
  const gate = new ConversionGate({ concurrency: 2, queueSize: 4, queueTimeoutMs: 60_000 });
  let releases = 0;
  const observer = releaseWhenIdle(gate, () => releases++, DELAY_MS);
  return { gate, observer, releases: () => releases };
}

describe("releaseWhenIdle", () => {
  test("releases once, the delay after the last conversion of a burst", async () => {
    const { observer, releases } = setup();
    for (let i = 0; i < 5; i++) {
      observer(event);
      await sleep(DELAY_MS / 4);
    }
    // Each conversion pushed the release back: none yet, though the first was long ago.
    expect(releases()).toBe(0);
    await sleep(DELAY_MS * 2);
    expect(releases()).toBe(1);
    // Nothing converted since: no second release.
    await sleep(DELAY_MS * 2);
    expect(releases()).toBe(1);
  });

  test("waits while the gate holds a request, and releases once it is empty", async () => {
    const { gate, observer, releases } = setup();
    const leave = gate.admit();
    observer(event);
    await sleep(DELAY_MS * 3);
    expect(releases()).toBe(0);
    leave();
    await sleep(DELAY_MS * 2);
    expect(releases()).toBe(1);
  });

  test("nothing happens without a conversion", async () => {
    const { releases } = setup();
    await sleep(DELAY_MS * 2);
    expect(releases()).toBe(0);
  });
});
