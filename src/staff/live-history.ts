import type { ConversionObserver } from "../conversion/service.ts";
import type { ResponseObserver } from "../core/http/serve.ts";
import { isRefusal } from "../data/usage/refusals.ts";

/** What one second held: counts, and the highest load seen in it. */
interface Second {
  second: number;
  requests: number;
  refused: number;
  converted: number;
  failed: number;
  mailFailed: number;
  slotsBusy: number;
  waiting: number;
  rssMiB: number;
}

/** Load figures read at each sample. */
export interface LoadSample {
  slotsBusy: number;
  waiting: number;
  rssBytes: number;
}

/** Sums of a recent window. */
export interface RecentCounts {
  requests: number;
  refused: number;
  converted: number;
  failed: number;
  mailFailed: number;
}

/** One point of the sparklines: the mean rates and the highest load of its step. */
export interface SparkPoint {
  /** Start of the step, Unix ms. */
  t: number;
  requestsPerS: number;
  refusedPerS: number;
  slotsBusy: number;
  waiting: number;
  rssMiB: number;
}

/** Seconds kept: the health line's 15 minutes (the sparkline shows the last 10). */
const KEPT_S = 15 * 60;

/**
 * The last 15 minutes of the live panel's figures, one slot per second, in memory (lost on restart):
 * requests, refusals, conversions and mail failures counted as they happen, load sampled every
 * second and at each request, so a burst shorter than the page's poll still shows.
 */
export class LiveHistory {
  private readonly ring: Second[] = Array.from({ length: KEPT_S }, () => blank(-1));

  constructor(
    private readonly load: () => LoadSample,
    private readonly now: () => number = Date.now,
  ) {}

  /** Counts every answered request (and a refusal of the public routes); samples the load. */
  readonly observer: ResponseObserver = (request, response) => {
    const slot = this.slot();
    slot.requests++;
    if (isRefusal(request, response)) slot.refused++;
    this.sampleInto(slot);
  };

  /** Counts conversion attempts, failed ones apart. */
  readonly conversions: ConversionObserver = (event) => {
    const slot = this.slot();
    if (event.outcome === "ok") slot.converted++;
    else slot.failed++;
  };

  /** Counts a mail the transport refused. */
  mailFailed(): void {
    this.slot().mailFailed++;
  }

  /** Records the load now (called every second by `start`, and whenever the figures are read). */
  sample(): void {
    this.sampleInto(this.slot());
  }

  /** Samples every second until the returned stopper is called. */
  start(): () => void {
    const timer = setInterval(() => this.sample(), 1000);
    timer.unref?.();
    return () => clearInterval(timer);
  }

  /** Sums of the last `seconds` (at most 15 minutes), the current second included. */
  recent(seconds: number): RecentCounts {
    const current = Math.floor(this.now() / 1000);
    const sums: RecentCounts = { requests: 0, refused: 0, converted: 0, failed: 0, mailFailed: 0 };
    for (const s of this.ring) {
      if (s.second < 0 || current - s.second >= seconds) continue;
      for (const k of Object.keys(sums) as (keyof RecentCounts)[]) sums[k] += s[k];
    }
    return sums;
  }

  /** The last `spanS` seconds in `points` steps, oldest first; seconds without a sample count as idle. */
  sparkline(spanS = 600, points = 60): SparkPoint[] {
    this.sample();
    const stepS = spanS / points;
    const current = Math.floor(this.now() / 1000);
    const first = current - spanS + 1;
    const out: SparkPoint[] = Array.from({ length: points }, (_, i) => ({
      t: (first + i * stepS) * 1000,
      requestsPerS: 0,
      refusedPerS: 0,
      slotsBusy: 0,
      waiting: 0,
      rssMiB: 0,
    }));
    for (const s of this.ring) {
      if (s.second < first || s.second > current) continue;
      const p = out[Math.floor((s.second - first) / stepS)]!;
      p.requestsPerS += s.requests / stepS;
      p.refusedPerS += s.refused / stepS;
      p.slotsBusy = Math.max(p.slotsBusy, s.slotsBusy);
      p.waiting = Math.max(p.waiting, s.waiting);
      p.rssMiB = Math.max(p.rssMiB, s.rssMiB);
    }
    return out;
  }

  private slot(): Second {
    const second = Math.floor(this.now() / 1000);
    const i = second % KEPT_S;
    if (this.ring[i]!.second !== second) this.ring[i] = blank(second);
    return this.ring[i]!;
  }

  private sampleInto(slot: Second): void {
    const l = this.load();
    slot.slotsBusy = Math.max(slot.slotsBusy, l.slotsBusy);
    slot.waiting = Math.max(slot.waiting, l.waiting);
    slot.rssMiB = Math.max(slot.rssMiB, Math.round(l.rssBytes / 2 ** 20));
  }
}

function blank(second: number): Second {
  return {
    second,
    requests: 0,
    refused: 0,
    converted: 0,
    failed: 0,
    mailFailed: 0,
    slotsBusy: 0,
    waiting: 0,
    rssMiB: 0,
  };
}
