/**
 * The conversion gate (backpressure): admission cap with 503 + Retry-After, queue timeout, FIFO
 * order, heavy (lossless) jobs never holding every slot, and counts that always return to zero.
 * Jobs are promises the test resolves by hand and the queue and abandon timers are driven by
 * hand (manualTimers), so nothing depends on timing.
 */
import { describe, expect, test } from "bun:test";
import { ConversionGate, type GateOptions, type JobWeight } from "../../src/conversion/gate.ts";
import { ConvertService, requesterOf } from "../../src/conversion/service.ts";
import { AppError } from "../../src/core/errors.ts";
import * as img from "../support/images.ts";
import { manualTimers } from "../support/timers.ts";

/** A job the test finishes by hand, recording when it started. */
interface Job {
  name: string;
  started: boolean;
  promise: Promise<string>;
  finish(): void;
  fail(err: Error): void;
}

function gate(options: Partial<GateOptions> = {}) {
  return new ConversionGate({
    concurrency: 2,
    queueSize: 4,
    queueTimeoutMs: 60_000,
    abandonAfterMs: Infinity,
    ...options,
  });
}

/** Submits a job (`true`: heavy, `false`: normal); `log` receives its name when it starts. Finishing a job that has not started yet makes it end as soon as it starts. */
function submit(g: ConversionGate, name: string, heavy: boolean | JobWeight, log: string[] = [], memory = 0): Job {
  let outcome: { error?: Error } | null = null;
  let settleNow: (() => void) | null = null;
  const job: Job = {
    name,
    started: false,
    promise: undefined as unknown as Promise<string>,
    finish: () => {
      outcome ??= {};
      settleNow?.();
    },
    fail: (error) => {
      outcome ??= { error };
      settleNow?.();
    },
  };
  job.promise = g.run(
    heavy === true ? "heavy" : heavy === false ? "normal" : heavy,
    () => {
      job.started = true;
      log.push(name);
      return new Promise<string>((resolve, reject) => {
        settleNow = () => (outcome!.error ? reject(outcome!.error) : resolve(name));
        if (outcome) settleNow();
      });
    },
    { memoryBytes: memory },
  );
  job.promise.catch(() => {}); // observed by the tests that expect a rejection
  return job;
}

/** Lets queued microtasks (starts, pumps) run. */
const settle = async () => {
  for (let i = 0; i < 5; i++) await Promise.resolve();
  await new Promise((r) => setTimeout(r, 0));
};

function busy(fn: () => unknown): AppError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(AppError);
    return err as AppError;
  }
  throw new Error("expected 503 SERVER_BUSY");
}

describe("admission", () => {
  test("admits concurrency + queueSize requests, then 503 SERVER_BUSY with Retry-After at once", () => {
    const g = gate({ concurrency: 2, queueSize: 3 });
    const leaves = Array.from({ length: 5 }, () => g.admit());
    expect(g.stats().admitted).toBe(5);
    const err = busy(() => g.admit());
    expect({ status: err.status, code: err.code }).toEqual({ status: 503, code: "SERVER_BUSY" });
    expect(Number(err.headers["retry-after"])).toBeGreaterThanOrEqual(1);
    expect(Number.isInteger(Number(err.headers["retry-after"]))).toBe(true);
    expect(g.stats().rejected).toBe(1);
    leaves[0]!();
    const again = g.admit(); // a place freed up
    expect(g.stats().admitted).toBe(5);
    again();
    for (const leave of leaves) leave();
    expect(g.stats()).toEqual({
      admitted: 0,
      running: 0,
      slotsBusy: 0,
      waiting: 0,
      rejected: 1,
      abandoned: 0,
      memoryReservedMiB: 0,
      receiving: 0,
      receivingMiB: 0,
    });
  });

  test("leaving twice frees only one place", () => {
    const g = gate({ concurrency: 1, queueSize: 0 });
    const leave = g.admit();
    const other = (() => {
      leave();
      leave();
      return g.admit();
    })();
    expect(g.stats().admitted).toBe(1);
    expect(busy(() => g.admit()).code).toBe("SERVER_BUSY");
    other();
    expect(g.stats().admitted).toBe(0);
  });

  test("one owner holds at most its share of the places (429 TOO_MANY_IN_PROGRESS); the others still get in", () => {
    const g = gate({ concurrency: 2, queueSize: 6, maxAdmittedPerOwner: 3 });
    const mine = Array.from({ length: 3 }, () => g.admit("key_a"));
    const err = busy(() => g.admit("key_a"));
    expect({ status: err.status, code: err.code, retry: err.headers["retry-after"] }).toEqual({
      status: 429,
      code: "TOO_MANY_IN_PROGRESS",
      retry: "5",
    });
    expect(err.message).toContain("3 conversions in progress");
    // Not a refusal for lack of room: the gate's rejected count is for 503s.
    expect(g.stats()).toMatchObject({ admitted: 3, rejected: 0 });
    const theirs = [g.admit("key_b"), g.admit("key_b"), g.admit("key_c")];
    mine[0]!();
    mine[0]!(); // leaving twice frees one place only
    const again = g.admit("key_a");
    expect(busy(() => g.admit("key_a")).code).toBe("TOO_MANY_IN_PROGRESS");
    for (const leave of [...mine, ...theirs, again]) leave();
    expect(g.stats().admitted).toBe(0);
    for (let i = 0; i < 3; i++) g.admit("key_a");
  });

  test("a request of several owners (its key, its address) is refused when any of them holds its share, and counts for each", () => {
    const g = gate({ concurrency: 2, queueSize: 6, maxAdmittedPerOwner: 3 });
    const mine = ["key:a", "key:b", "key:c"].map((key) => g.admit(key, "address:203.0.113.9"));
    const err = busy(() => g.admit("key:d", "address:203.0.113.9"));
    expect({ status: err.status, code: err.code }).toEqual({ status: 429, code: "TOO_MANY_IN_PROGRESS" });
    expect(err.message).toStartWith("This client address already has 3 conversions in progress");
    const elsewhere = [g.admit("key:a", "address:198.51.100.7"), g.admit("key:a", "address:198.51.100.7")];
    expect(busy(() => g.admit("key:a", "address:192.0.2.1")).message).toStartWith(
      "This key already has 3 conversions in progress",
    );
    mine[0]!();
    // Leaving gives back the place of each owner: key a's, and the address's.
    const again = g.admit("key:a", "address:203.0.113.9");
    for (const leave of [...mine, ...elsewhere, again]) leave();
    expect(g.stats().admitted).toBe(0);
  });

  test("uploads being received reserve the upload budget by size, hold no place, and one client holds at most its share", () => {
    const MiB = 2 ** 20;
    const g = gate({
      concurrency: 1,
      queueSize: 0,
      maxAdmittedPerOwner: 1,
      uploadBudgetBytes: 40 * MiB,
      uploadShareBytes: 10 * MiB,
    });
    // A client may always have one upload, even one larger than its share.
    const big = g.reserveUpload("203.0.113.9", 15 * MiB);
    const err = busy(() => g.reserveUpload("203.0.113.9", 1));
    expect({ status: err.status, code: err.code, retry: err.headers["retry-after"] }).toEqual({
      status: 429,
      code: "TOO_MANY_IN_PROGRESS",
      retry: "5",
    });
    // Tiny uploads count MIN_UPLOAD_RESERVATION each: 160 of them fill another client's 10 MiB.
    const tiny = Array.from({ length: 160 }, () => g.reserveUpload("198.51.100.7", 1));
    expect(busy(() => g.reserveUpload("198.51.100.7", 1)).code).toBe("TOO_MANY_IN_PROGRESS");
    expect(g.stats()).toMatchObject({ receiving: 161, receivingMiB: 25, admitted: 0 });
    // Receiving took no place: the one place is still free.
    const place = g.admit("key:a");
    // The budget spent: 503 for everyone, counted as a refusal for lack of room.
    const third = g.reserveUpload("192.0.2.1", 10 * MiB);
    const full = busy(() => g.reserveUpload("192.0.2.2", 10 * MiB));
    expect({ status: full.status, code: full.code }).toEqual({ status: 503, code: "SERVER_BUSY" });
    expect(g.stats().rejected).toBe(1);
    big();
    big(); // giving back twice gives back once
    g.reserveUpload("192.0.2.2", 10 * MiB)();
    for (const leave of [...tiny, third, place]) leave();
    expect(g.stats()).toMatchObject({ receiving: 0, receivingMiB: 0, admitted: 0 });
  });

  test("the service receives first and admits after: an upload that never arrives holds no place and no key's share", async () => {
    const g = gate({ concurrency: 1, queueSize: 0, maxAdmittedPerOwner: 1 });
    const service = new ConvertService(g, { maxPixels: 1e8, timeoutS: 60, qualityGuard: "off" });
    let arrive!: () => void;
    const arrived = new Promise<void>((resolve) => (arrive = resolve));
    const image = await img.photo(64, 48);
    const pending = service.handle(requesterOf("k", "203.0.113.9"), 1000, async () => {
      await arrived;
      return { image, stem: "x", options: { format: "webp", quality: "lossy" } };
    });
    expect(g.stats()).toMatchObject({ receiving: 1, admitted: 0 });
    // The same key from elsewhere converts meanwhile: the pending upload is not yet the key's.
    const other = await service.handle(requesterOf("k", "198.51.100.7"), 1000, async () => ({
      image,
      stem: "y",
      options: { format: "webp", quality: "lossy" },
    }));
    other.release();
    arrive();
    (await pending).release();
    expect(g.stats()).toMatchObject({ receiving: 0, admitted: 0 });
  });

  test("queueSize 0 and concurrency 1 admit exactly one request", () => {
    const g = gate({ concurrency: 1, queueSize: 0 });
    const leave = g.admit();
    expect(busy(() => g.admit()).status).toBe(503);
    leave();
    g.admit()();
  });
});

describe("running", () => {
  test("no more than `concurrency` jobs run at once", async () => {
    const g = gate({ concurrency: 2 });
    const jobs = ["a", "b", "c", "d"].map((n) => submit(g, n, false));
    await settle();
    expect(jobs.map((j) => j.started)).toEqual([true, true, false, false]);
    expect(g.stats()).toMatchObject({ running: 2, waiting: 2 });
    jobs[0]!.finish();
    expect(await jobs[0]!.promise).toBe("a");
    await settle();
    expect(jobs.map((j) => j.started)).toEqual([true, true, true, false]);
    jobs[1]!.finish();
    jobs[2]!.finish();
    await settle();
    expect(jobs[3]!.started).toBe(true);
    jobs[3]!.finish();
    await Promise.all(jobs.map((j) => j.promise));
    expect(g.stats()).toMatchObject({ running: 0, waiting: 0 });
  });

  test("jobs whose memory estimates do not fit the budget together run one after another, in order", async () => {
    const MiB = 2 ** 20;
    const g = gate({ concurrency: 4, memoryBudgetBytes: 300 * MiB });
    const log: string[] = [];
    const a = submit(g, "a", "light", log, 200 * MiB);
    const b = submit(g, "b", "light", log, 200 * MiB);
    const c = submit(g, "c", "light", log, 50 * MiB);
    await settle();
    // b waits for memory, and c (which would fit) does not overtake it.
    expect(log).toEqual(["a"]);
    expect(g.stats()).toMatchObject({ running: 1, waiting: 2, memoryReservedMiB: 200 });
    a.finish();
    await settle();
    expect(log).toEqual(["a", "b", "c"]);
    expect(g.stats()).toMatchObject({ running: 2, memoryReservedMiB: 250 });
    b.finish();
    c.finish();
    await Promise.all([a.promise, b.promise, c.promise]);
    expect(g.stats()).toMatchObject({ running: 0, memoryReservedMiB: 0 });
  });

  test("a waiting job whose client went away leaves the queue with 499 and never runs; the one behind it moves up", async () => {
    const g = gate({ concurrency: 1 });
    const log: string[] = [];
    const running = submit(g, "running", false, log);
    const gone = new AbortController();
    const lost = g.run("normal", async () => log.push("lost"), { signal: gone.signal });
    const next = submit(g, "next", false, log);
    await settle();
    expect(g.stats()).toMatchObject({ running: 1, waiting: 2 });
    gone.abort();
    const err = await lost.catch((e: AppError) => e);
    expect(err).toBeInstanceOf(AppError);
    expect({ status: (err as AppError).status, code: (err as AppError).code }).toEqual({
      status: 499,
      code: "CLIENT_CLOSED_REQUEST",
    });
    expect(g.stats()).toMatchObject({ running: 1, waiting: 1, rejected: 0 });
    running.finish();
    await settle();
    expect(log).toEqual(["running", "next"]);
    next.finish();
    await next.promise;
    // Already gone before asking: refused at once, whatever room there is.
    const early = new AbortController();
    early.abort();
    expect(
      await g.run("light", async () => log.push("early"), { signal: early.signal }).catch((e: AppError) => e.code),
    ).toBe("CLIENT_CLOSED_REQUEST");
    expect(log).toEqual(["running", "next"]);
    expect(g.stats()).toMatchObject({ running: 0, waiting: 0, memoryReservedMiB: 0 });
  });

  test("a job estimated above the whole budget still runs, alone", async () => {
    const MiB = 2 ** 20;
    const g = gate({ concurrency: 4, memoryBudgetBytes: 100 * MiB });
    const log: string[] = [];
    const big = submit(g, "big", false, log, 150 * MiB);
    const small = submit(g, "small", "light", log, 1 * MiB);
    await settle();
    expect(log).toEqual(["big"]);
    big.finish();
    await settle();
    expect(log).toEqual(["big", "small"]);
    small.finish();
    await small.promise;
  });

  test("two light jobs share a slot; a normal one needs a whole slot", async () => {
    const g = gate({ concurrency: 1 });
    const light = ["a", "b", "c"].map((n) => submit(g, n, "light"));
    await settle();
    expect(light.map((j) => j.started)).toEqual([true, true, false]);
    expect(g.stats()).toMatchObject({ running: 2, slotsBusy: 1, waiting: 1 });
    light[0]!.finish();
    await settle();
    expect(light[2]!.started).toBe(true);
    const normal = submit(g, "n", "normal");
    light[1]!.finish();
    await settle();
    expect(normal.started).toBe(false); // half a slot is free, not a whole one
    light[2]!.finish();
    await settle();
    expect(normal.started).toBe(true);
    normal.finish();
    await Promise.all([...light, normal].map((j) => j.promise));
    expect(g.stats()).toMatchObject({ running: 0, waiting: 0 });
  });

  test("a light job does not overtake a normal one waiting for room", async () => {
    const g = gate({ concurrency: 1 });
    const log: string[] = [];
    const first = submit(g, "first", "light", log);
    const normal = submit(g, "normal", "normal", log);
    const later = submit(g, "later", "light", log);
    await settle();
    expect(log).toEqual(["first"]); // "later" would fit in the free half, but "normal" came first
    first.finish();
    await settle();
    expect(log).toEqual(["first", "normal"]);
    normal.finish();
    await settle();
    expect(log).toEqual(["first", "normal", "later"]);
    later.finish();
    await Promise.all([first, normal, later].map((j) => j.promise));
  });

  test("the service weighs a conversion by its header: small lossy light, large lossy normal, lossless heavy", async () => {
    const g = gate({ concurrency: 2 });
    const weights: JobWeight[] = [];
    const run = g.run.bind(g);
    g.run = (weight, job) => {
      weights.push(weight);
      return run(weight, job);
    };
    const service = new ConvertService(g, { maxPixels: 1e8, timeoutS: 60, qualityGuard: "off" });
    const upload = (image: Uint8Array, quality: "lossy" | "lossless") => ({
      image,
      stem: "x",
      options: { format: "webp" as const, quality },
    });
    await service.convert(upload(await img.photo(2048, 2048), "lossy"));
    await service.convert(upload(await img.photo(2049, 2048), "lossy"));
    await service.convert(upload(await img.photo(64, 48), "lossless"));
    expect(weights).toEqual(["light", "normal", "heavy"]);
    // A refused image is refused before it takes room in the gate, and never waited for one.
    const timing = { queueWaitMs: null as number | null, convertMs: 0 };
    const refused = await service.convert(upload(img.pngBomb(), "lossy"), timing).catch((err: AppError) => err);
    expect((refused as AppError).code).toBe("IMAGE_TOO_LARGE");
    expect(weights).toHaveLength(3);
    expect(timing.queueWaitMs).toBeNull();
    expect(timing.convertMs).toBeGreaterThan(0); // the header read
    const ok = { queueWaitMs: null as number | null, convertMs: 0 };
    await service.convert(upload(await img.photo(64, 48), "lossy"), ok);
    expect(ok.queueWaitMs).toBeGreaterThanOrEqual(0);
    expect(ok.convertMs).toBeGreaterThan(0);
  });

  test("waiting jobs start first come, first served", async () => {
    const g = gate({ concurrency: 1 });
    const log: string[] = [];
    const blocker = submit(g, "blocker", false, log);
    const queued = ["a", "b", "c", "d", "e"].map((n) => submit(g, n, false, log));
    await settle();
    expect(log).toEqual(["blocker"]);
    blocker.finish();
    for (const j of queued) {
      await settle();
      j.finish();
      await j.promise;
    }
    expect(log).toEqual(["blocker", "a", "b", "c", "d", "e"]);
  });

  test("when a job waiting for room times out, a light job queued behind it that fits starts at once", async () => {
    const timers = manualTimers();
    const g = gate({ concurrency: 1, queueTimeoutMs: 500, timers });
    const running = submit(g, "running", "light");
    const normal = submit(g, "normal", "normal"); // needs the whole slot: waits, then times out
    await settle();
    timers.advance(15);
    const later = submit(g, "later", "light"); // fits in the free half, but queues behind "normal"
    await settle();
    expect(later.started).toBe(false);
    timers.advance(485);
    const err = await normal.promise.catch((e: AppError) => e);
    expect((err as AppError).code).toBe("SERVER_BUSY");
    await settle();
    // Its own timeout is 15 ms later, not yet reached: it started when the job ahead of it left.
    expect(later.started).toBe(true);
    for (const j of [running, later]) j.finish();
    await Promise.all([running.promise, later.promise]);
    expect(g.stats()).toMatchObject({ running: 0, slotsBusy: 0, waiting: 0 });
  });

  test("a queued job that waits longer than the queue timeout gets 503 SERVER_BUSY and leaves the queue", async () => {
    const timers = manualTimers();
    const g = gate({ concurrency: 1, queueTimeoutMs: 30, timers });
    const blocker = submit(g, "blocker", false);
    const late = submit(g, "late", false);
    await settle();
    timers.advance(29);
    await settle();
    expect(g.stats()).toMatchObject({ waiting: 1, rejected: 0 });
    timers.advance(1);
    let err: unknown;
    try {
      await late.promise;
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(AppError);
    expect({ status: (err as AppError).status, code: (err as AppError).code }).toEqual({
      status: 503,
      code: "SERVER_BUSY",
    });
    expect((err as AppError).headers["retry-after"]).toBeDefined();
    expect(late.started).toBe(false);
    expect(g.stats()).toMatchObject({ running: 1, waiting: 0, rejected: 1, abandoned: 0 });
    blocker.finish();
    await blocker.promise;
    // The timed-out job never runs later, and the slot is free for new work.
    const next = submit(g, "next", false);
    await settle();
    expect([late.started, next.started]).toEqual([false, true]);
    next.finish();
    await next.promise;
    expect(g.stats()).toMatchObject({ running: 0, waiting: 0 });
  });
});

describe("heavy (lossless) jobs", () => {
  test("with 2 slots, a second heavy job waits while a lossy job arriving later starts at once", async () => {
    const g = gate({ concurrency: 2 });
    const log: string[] = [];
    const h1 = submit(g, "heavy-1", true, log);
    const h2 = submit(g, "heavy-2", true, log);
    await settle();
    expect([h1.started, h2.started]).toEqual([true, false]); // heavy jobs leave one slot free
    const lossy = submit(g, "lossy", false, log);
    await settle();
    // The cap holds heavy-2 back, not a lack of room: the lossy job behind it takes the free slot.
    expect(lossy.started).toBe(true);
    expect(g.stats()).toMatchObject({ running: 2, waiting: 1 });
    lossy.finish();
    h1.finish();
    await settle();
    expect(h2.started).toBe(true);
    h2.finish();
    await Promise.all([h1.promise, h2.promise, lossy.promise]);
    expect(g.stats()).toMatchObject({ running: 0, waiting: 0 });
  });

  test("with 3 slots, heavy jobs take at most 2 and a lossy one still gets the third", async () => {
    const g = gate({ concurrency: 3 });
    const heavy = [1, 2, 3, 4].map((i) => submit(g, `heavy-${i}`, true));
    await settle();
    expect(heavy.map((j) => j.started)).toEqual([true, true, false, false]);
    const lossy = submit(g, "lossy", false);
    await settle();
    expect(lossy.started).toBe(true);
    for (const j of [lossy, ...heavy]) j.finish();
    await Promise.all([lossy, ...heavy].map((j) => j.promise));
    expect(g.stats()).toMatchObject({ running: 0, waiting: 0 });
  });

  test("light jobs pass a heavy job held back by the cap, and share the slot it leaves free", async () => {
    const g = gate({ concurrency: 2 });
    const log: string[] = [];
    const h1 = submit(g, "heavy-1", true, log);
    const h2 = submit(g, "heavy-2", true, log); // held back by the cap
    const small = ["a", "b", "c"].map((n) => submit(g, n, "light", log));
    await settle();
    expect(log).toEqual(["heavy-1", "a", "b"]);
    expect(g.stats()).toMatchObject({ running: 3, slotsBusy: 2, waiting: 2 });
    h1.finish();
    await settle();
    expect(log).toEqual(["heavy-1", "a", "b", "heavy-2"]); // first come, first served: heavy-2 before c
    for (const j of [small[0]!, small[1]!]) j.finish();
    await settle();
    expect(log.at(-1)).toBe("c");
    for (const j of [h2, small[2]!]) j.finish();
    await Promise.all([h1, h2, ...small].map((j) => j.promise));
    expect(g.stats()).toMatchObject({ running: 0, slotsBusy: 0, waiting: 0 });
  });

  test("a heavy job at the head of the queue does not block lossy jobs behind it when a slot frees", async () => {
    const g = gate({ concurrency: 2 });
    const log: string[] = [];
    const h1 = submit(g, "heavy-1", true, log);
    const l1 = submit(g, "lossy-1", false, log);
    await settle();
    const h2 = submit(g, "heavy-2", true, log); // waits: heavy cap (1) reached
    const l2 = submit(g, "lossy-2", false, log); // waits: no free slot
    await settle();
    expect(log).toEqual(["heavy-1", "lossy-1"]);
    l1.finish();
    await settle();
    expect(log).toEqual(["heavy-1", "lossy-1", "lossy-2"]); // heavy-2 still may not start
    h1.finish();
    await settle();
    expect(log).toEqual(["heavy-1", "lossy-1", "lossy-2", "heavy-2"]);
    l2.finish();
    h2.finish();
    await Promise.all([h1.promise, l1.promise, h2.promise, l2.promise]);
  });

  test("with a single slot, a heavy job may use it (lossless still works at concurrency 1)", async () => {
    const g = gate({ concurrency: 1 });
    const h = submit(g, "heavy", true);
    await settle();
    expect(h.started).toBe(true);
    h.finish();
    expect(await h.promise).toBe("heavy");
  });
});

describe("errors", () => {
  test("counts return to zero after failing jobs, and the job's own error comes through", async () => {
    const g = gate({ concurrency: 2, queueSize: 2 });
    const leaves = [g.admit(), g.admit(), g.admit()];
    const jobs = [submit(g, "a", true), submit(g, "b", false), submit(g, "c", false)];
    await settle();
    const boom = new AppError(422, "INVALID_IMAGE", "bad");
    jobs[0]!.fail(boom);
    await expect(jobs[0]!.promise).rejects.toBe(boom);
    await settle();
    jobs[1]!.fail(new Error("sharp exploded"));
    await expect(jobs[1]!.promise).rejects.toThrow("sharp exploded");
    await settle();
    jobs[2]!.finish();
    await jobs[2]!.promise;
    for (const leave of leaves) leave();
    expect(g.stats()).toEqual({
      admitted: 0,
      running: 0,
      slotsBusy: 0,
      waiting: 0,
      rejected: 0,
      abandoned: 0,
      memoryReservedMiB: 0,
      receiving: 0,
      receivingMiB: 0,
    });
  });

  test("a job that throws synchronously frees its slot", async () => {
    const g = gate({ concurrency: 1 });
    await expect(
      g.run("normal", () => {
        throw new Error("sync");
      }),
    ).rejects.toThrow("sync");
    expect(g.stats()).toMatchObject({ running: 0, waiting: 0 });
    expect(await g.run("heavy", async () => 42)).toBe(42);
  });
});

/** A job that gives up at its time limit like withDeadline does: its error carries the work still running. */
function timedOut(g: ConversionGate, weight: JobWeight, stillRunning: Promise<unknown>): Promise<unknown> {
  const run = g.run(weight, async () => {
    throw Object.assign(new AppError(504, "CONVERSION_TIMEOUT", "over the limit"), { stillRunning });
  });
  return run.catch((err: AppError) => err.code);
}

describe("timed-out work the job could not cancel", () => {
  test("keeps its slot until the work stops, then frees it once", async () => {
    const g = gate({ concurrency: 1 });
    let stop!: () => void;
    expect(await timedOut(g, "normal", new Promise<void>((r) => (stop = r)))).toBe("CONVERSION_TIMEOUT");
    expect(g.stats()).toMatchObject({ running: 1, slotsBusy: 1 });
    const next = submit(g, "next", false);
    await settle();
    expect(next.started).toBe(false);
    stop();
    await settle();
    expect(next.started).toBe(true);
    next.finish();
    await next.promise;
    expect(g.stats()).toMatchObject({ running: 0, slotsBusy: 0, abandoned: 0 });
  });

  test("work that never stops loses its slot after abandonAfterMs: counted, reported, and the next job starts", async () => {
    const reported: JobWeight[] = [];
    const timers = manualTimers();
    const g = gate({ concurrency: 1, abandonAfterMs: 40, timers });
    g.onAbandoned((w) => reported.push(w));
    let stop!: () => void;
    expect(await timedOut(g, "heavy", new Promise<void>((r) => (stop = r)))).toBe("CONVERSION_TIMEOUT");
    const next = submit(g, "next", false);
    timers.advance(39);
    await settle();
    expect(next.started).toBe(false);
    timers.advance(1);
    await settle();
    expect(next.started).toBe(true);
    expect(reported).toEqual(["heavy"]);
    expect(g.stats()).toMatchObject({ running: 1, slotsBusy: 1, abandoned: 1 });
    // The hung work ending late must not free the slot a second time.
    stop();
    await settle();
    expect(g.stats()).toMatchObject({ running: 1, slotsBusy: 1 });
    next.finish();
    await next.promise;
    expect(g.stats()).toMatchObject({ running: 0, slotsBusy: 0, abandoned: 1 });
  });

  test("an abandonAfterMs beyond setTimeout's range (a huge IMGPRESS_CONVERT_TIMEOUT_S) never gives the slot up early", async () => {
    const timers = manualTimers();
    const g = gate({ concurrency: 1, abandonAfterMs: 5 * 500_000 * 1000, timers });
    expect(await timedOut(g, "normal", new Promise(() => {}))).toBe("CONVERSION_TIMEOUT");
    // No timer at all: setTimeout would fire a delay past its range at once.
    expect(timers.pending()).toBe(0);
    timers.advance(5 * 500_000 * 1000);
    await settle();
    expect(g.stats()).toMatchObject({ running: 1, slotsBusy: 1, abandoned: 0 });
  });

  test("work that stops before abandonAfterMs is not counted as abandoned", async () => {
    const reported: JobWeight[] = [];
    const timers = manualTimers();
    const g = gate({ concurrency: 1, abandonAfterMs: 40, timers });
    g.onAbandoned((w) => reported.push(w));
    expect(await timedOut(g, "light", Promise.resolve())).toBe("CONVERSION_TIMEOUT");
    await settle();
    // The work stopped, so its abandon timer is gone: moving past it changes nothing.
    expect(timers.pending()).toBe(0);
    timers.advance(80);
    expect(reported).toEqual([]);
    expect(g.stats()).toMatchObject({ running: 0, slotsBusy: 0, abandoned: 0 });
  });
});
