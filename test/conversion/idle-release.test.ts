/**
 * releaseWhenIdle: freed memory is handed back once, after conversions pause, never while the
 * gate holds requests. A real ConversionGate with admissions held by hand, and a clock the test
 * moves itself, so nothing depends on the machine's speed.
 */
import { describe, expect, test } from "bun:test";
import { ConversionGate } from "../../src/conversion/gate.ts";
import { releaseWhenIdle, type Timers } from "../../src/conversion/idle.ts";
import type { ConversionEvent } from "../../src/conversion/service.ts";

const DELAY_MS = 2000;
const event = {} as ConversionEvent;

/** Timers on a clock that only `advance` moves. */
function handClock() {
  let now = 0;
  let nextId = 0;
  const due = new Map<number, { at: number; run: () => void }>();
  const timers: Timers = {
    set(run, ms) {
      due.set(++nextId, { at: now + ms, run });
      return nextId;
    },
    clear: (handle) => void due.delete(handle as number),
  };
  const advance = (ms: number) => {
    const until = now + ms;
    for (;;) {
      const [id, first] = [...due].sort((a, b) => a[1].at - b[1].at)[0] ?? [];
      if (id === undefined || first!.at > until) break;
      due.delete(id);
      now = first!.at;
      first!.run();
    }
    now = until;
  };
  return { timers, advance, pending: () => due.size };
}

function setup() {
  const gate = new ConversionGate({ concurrency: 2, queueSize: 4, queueTimeoutMs: 60_000, abandonAfterMs: Infinity });
  const clock = handClock();
  let releases = 0;
  const observer = releaseWhenIdle(gate, () => releases++, DELAY_MS, clock.timers);
  return { gate, observer, clock, releases: () => releases };
}

describe("releaseWhenIdle", () => {
  test("releases once, the delay after the last conversion of a burst", () => {
    const { observer, clock, releases } = setup();
    for (let i = 0; i < 5; i++) {
      observer(event);
      clock.advance(DELAY_MS / 2);
    }
    // Each conversion pushed the release back: none yet, though the first was long ago.
    expect(releases()).toBe(0);
    clock.advance(DELAY_MS / 2 - 1);
    expect(releases()).toBe(0);
    clock.advance(1);
    expect(releases()).toBe(1);
    // Nothing converted since: no second release, and nothing left scheduled.
    clock.advance(DELAY_MS * 10);
    expect(releases()).toBe(1);
    expect(clock.pending()).toBe(0);
  });

  test("waits while the gate holds a request, and releases once it is empty", () => {
    const { gate, observer, clock, releases } = setup();
    const leave = gate.admit();
    observer(event);
    clock.advance(DELAY_MS * 5);
    expect(releases()).toBe(0);
    leave();
    clock.advance(DELAY_MS);
    expect(releases()).toBe(1);
  });

  test("nothing happens without a conversion", () => {
    const { clock, releases } = setup();
    clock.advance(DELAY_MS * 5);
    expect(releases()).toBe(0);
    expect(clock.pending()).toBe(0);
  });
});
