/**
 * The live panel's memory: a burst shorter than the poll interval stays in the sparkline for ten
 * minutes, then leaves it; the health line's verdict from its 15-minute sums and the state now.
 */
import { expect, test } from "bun:test";
import { type HealthInputs, healthVerdict, REFUSED_DEGRADED } from "../../src/staff/dashboard/health.ts";
import { sparklines } from "../../src/staff/dashboard/sparkline.ts";
import { LiveHistory } from "../../src/staff/live-history.ts";
import { createClock } from "../support/harness.ts";

const refused = new Response(null, { status: 401 });
const ok = new Response(null, { status: 200 });
const convert = () => new Request("http://localhost/v1/plugin/convert", { method: "POST" });

test("a 3 s burst shows in the sparkline with its peak load, and is gone after 10 minutes", () => {
  const clock = createClock();
  let load = { slotsBusy: 0, waiting: 0, rssBytes: 100 * 2 ** 20 };
  const history = new LiveHistory(() => load, clock.now);
  clock.advance(60_000);
  load = { slotsBusy: 2, waiting: 3, rssBytes: 500 * 2 ** 20 };
  for (let s = 0; s < 3; s++) {
    for (let i = 0; i < 10; i++)
      history.observer(convert(), i % 2 ? refused : ok, { id: "r", peer: undefined, startedAt: 0 });
    clock.advance(1000);
  }
  load = { slotsBusy: 0, waiting: 0, rssBytes: 100 * 2 ** 20 };
  clock.advance(20_000);
  const points = history.sparkline();
  expect(points).toHaveLength(60);
  expect(Math.max(...points.map((p) => p.waiting))).toBe(3);
  expect(Math.max(...points.map((p) => p.slotsBusy))).toBe(2);
  expect(points.reduce((s, p) => s + p.refusedPerS * 10, 0)).toBeCloseTo(15, 5);
  expect(history.recent(900)).toMatchObject({ requests: 30, refused: 15 });
  const drawn = sparklines(points, 2).text;
  expect(drawn).toContain('data-spark="waiting" data-peak="3"');
  expect(drawn).toContain('data-spark="refusedPerS" data-peak="1.5"');
  clock.advance(10 * 60_000);
  expect(Math.max(...history.sparkline().map((p) => p.waiting))).toBe(0);
  expect(history.recent(900).requests).toBe(30);
  clock.advance(5 * 60_000);
  expect(history.recent(900).requests).toBe(0);
});

const calm: HealthInputs = {
  recent: { requests: 100, refused: 0, converted: 50, failed: 1, mailFailed: 0 },
  slotsBusy: 0.5,
  concurrency: 2,
  waiting: 0,
  abandoned: 0,
  readiness: { database: "ok", storage: "ok", libvips: "ok", draining: "ok" },
  diskFreeBytes: 50 * 1024 ** 3,
  tlsDaysLeft: 300,
};

test("the health verdict says why: ok, degraded (refusals, saturation, hung, disk, certificate, mail, errors) or failing", () => {
  expect(healthVerdict(calm).state).toBe("ok");
  const cases: [Partial<HealthInputs>, string, RegExp][] = [
    [{ recent: { ...calm.recent, refused: REFUSED_DEGRADED } }, "degraded", /20 requests refused in the last 15 min/],
    [{ waiting: 2, slotsBusy: 2 }, "degraded", /saturated: 2\.0 of 2 slots busy, 2 waiting/],
    [{ abandoned: 1 }, "degraded", /1 hung conversion given up/],
    [{ diskFreeBytes: 200 * 2 ** 20 }, "degraded", /only 200\.0 MiB free for the database/],
    [{ tlsDaysLeft: 3 }, "degraded", /certificate ends in 3 days/],
    [{ recent: { ...calm.recent, mailFailed: 2 } }, "degraded", /2 mails not delivered/],
    [
      { recent: { ...calm.recent, converted: 8, failed: 2 } },
      "degraded",
      /20 % of conversions failed in the last 15 min \(2 of 10\)/,
    ],
    [{ recent: { ...calm.recent, converted: 2, failed: 8 } }, "failing", /80 % of conversions failed/],
    [{ readiness: { ...calm.readiness, database: "cannot write" } }, "failing", /database check: cannot write/],
    [{ tlsDaysLeft: -1 }, "failing", /certificate has expired/],
  ];
  for (const [change, state, reason] of cases) {
    const verdict = healthVerdict({ ...calm, ...change });
    expect(verdict.state).toBe(state as never);
    expect(verdict.reasons.join("; ")).toMatch(reason);
  }
  // Too few attempts to call a rate: one failure of two is not "50 % failing".
  expect(healthVerdict({ ...calm, recent: { ...calm.recent, converted: 1, failed: 1 } }).state).toBe("ok");
});
