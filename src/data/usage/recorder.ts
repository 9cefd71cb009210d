import { lt } from "drizzle-orm";
import type { ConversionEvent, ConversionObserver } from "../../conversion/service.ts";
import { DAY_MS, HOUR_MS } from "../../core/durations.ts";
import type { Logger } from "../../core/log.ts";
import type { BatchOptions, Store } from "../db/index.ts";
import { addInto, type Bucket, bucketId, flushStatements } from "./buckets.ts";
import { LATENCY_BINS, latencyBin } from "./latency.ts";
import { MAX_RANGE_DAYS } from "./model.ts";

/**
 * How long a flush waits for a lock another process holds: it runs on a timer and a failed one
 * keeps its counts for the next, so it gives up long before a client request would.
 */
export const FLUSH_LOCK_WAIT_MS = 1000;

/** How long usage buckets are kept (usage queries span at most as long). */
const USAGE_RETENTION_DAYS = MAX_RANGE_DAYS;

/** Limits of the in-memory buffer. */
export interface RecorderLimits {
  /** Distinct buckets that start a flush at once (default 1,000). */
  flushAt?: number;
  /** Distinct buckets kept while the database is unreachable; later new buckets are dropped (default 100,000). */
  maxBuckets?: number;
}

/**
 * Aggregates conversion attempts into hourly buckets in memory and writes them in one
 * transaction per flush, together with the keys' cumulative counters: the conversion path never
 * waits for the database. A failed flush puts its buckets back, to be retried by the next one.
 */
export class UsageRecorder {
  private pending = new Map<string, Bucket>();
  private chain: Promise<void> = Promise.resolve();
  private flushing = false;
  private lastFailure = -Infinity;
  private failures = 0;
  private inFlight = 0;
  private droppedSince = 0;
  private readonly flushAt: number;
  private readonly maxBuckets: number;

  constructor(
    private readonly store: Store,
    private readonly logger: Logger,
    limits: RecorderLimits = {},
    private readonly now: () => number = Date.now,
  ) {
    this.flushAt = limits.flushAt ?? 1_000;
    this.maxBuckets = limits.maxBuckets ?? 100_000;
  }

  /** The observer to register with `ConvertService.observe`. */
  readonly observer: ConversionObserver = (event) => this.record(event);

  /** Adds one attempt to its bucket; synchronous, never touches the database. */
  record(event: ConversionEvent): void {
    const hour = Math.floor(event.at / HOUR_MS) * HOUR_MS;
    const format = event.format ?? "";
    const quality = event.quality ?? "";
    const id = bucketId({ hour, keyId: event.keyId, format, quality, outcome: event.outcome });
    let bucket = this.pending.get(id);
    if (!bucket) {
      // Buckets of a flush in progress count too: they come back if it fails.
      if (this.pending.size + this.inFlight >= this.maxBuckets) {
        if (this.droppedSince++ === 0)
          this.logger.error("usage buffer full: dropping new buckets until a flush succeeds", {
            buckets: this.pending.size,
          });
        return;
      }
      bucket = {
        hour,
        keyId: event.keyId,
        format,
        quality,
        outcome: event.outcome,
        count: 0,
        bytesIn: 0,
        bytesOut: 0,
        convertMs: 0,
        guardEncodes: 0,
        lat: new Array(LATENCY_BINS).fill(0),
        lastAt: 0,
        lastAddress: "",
      };
      this.pending.set(id, bucket);
    }
    bucket.count++;
    bucket.bytesIn += event.bytesIn;
    bucket.bytesOut += event.bytesOut;
    bucket.convertMs += event.convertMs;
    bucket.guardEncodes += event.guardEncodes;
    bucket.lat[latencyBin(event.convertMs)]!++;
    if (event.at >= bucket.lastAt) bucket.lastAddress = event.address ?? "";
    bucket.lastAt = Math.max(bucket.lastAt, event.at);
    // A large buffer flushes early, but not in a loop against a database that just failed.
    if (this.pending.size >= this.flushAt && !this.flushing && performance.now() - this.lastFailure > 1_000) {
      this.flushing = true;
      this.flush().catch(() => {});
    }
  }

  /** Distinct buckets waiting for a flush. */
  get pendingBuckets(): number {
    return this.pending.size;
  }

  /**
   * Writes everything recorded before the call; flushes run one after another. Rejects when the
   * database refused the write (the buckets stay in memory for the next flush).
   */
  flush(options: BatchOptions = { lockWaitMs: FLUSH_LOCK_WAIT_MS }): Promise<void> {
    const run = this.chain.then(() => this.flushOnce(options));
    this.chain = run.catch(() => {});
    return run;
  }

  /**
   * The flush of a stop, after the last conversion reported: bounded as a whole (on PostgreSQL by
   * IMGPRESS_DATABASE_TIMEOUT_S), since a frozen database server must not hold the stop past the
   * supervisor's limit, which would kill it without a word. Rejects saying what was lost.
   */
  finalFlush(): Promise<void> {
    return this.store
      .bounded(
        // A stop's flush has no next one: it waits for a lock as long as a client request.
        this.flush({}).catch(async () => {
          // A connection that once failed busy cannot commit again (libsql-client-ts#352); with
          // nothing else in flight, fresh connections are safe: one more try.
          await this.store.reconnect();
          await this.flush({});
        }),
      )
      .catch((err: Error) => {
        // The periodic flush's warning speaks of a next flush; at a stop there is none. A flush
        // still under way when the bound gave up may yet commit: those counts are not called lost.
        const writing = this.inFlight
          ? `; ${this.inFlight} more were being written when it gave up and may have been`
          : "";
        throw new Error(
          `the last usage counts (${this.pending.size} buckets) could not be written and are lost${writing}: ${err.message}`,
        );
      });
  }

  /**
   * Flushes every `intervalS` seconds until the returned stopper is called, then runs `after` (the
   * refused-request counts): one write after the other, since two batches at once on one libSQL
   * connection were seen to stall each other for good.
   */
  start(intervalS: number, after: () => Promise<void> = async () => {}): () => void {
    const timer = setInterval(
      () =>
        this.flush()
          .catch(() => {})
          .then(after)
          .catch(() => {}),
      intervalS * 1000,
    );
    return () => clearInterval(timer);
  }

  /** Deletes buckets older than the retention period; returns how many per-key rows went. */
  async prune(): Promise<number> {
    const cutoff = Math.floor((this.now() - USAGE_RETENTION_DAYS * DAY_MS) / HOUR_MS) * HOUR_MS;
    // A day is kept while any of its hours is.
    const dayCutoff = Math.floor(cutoff / DAY_MS) * DAY_MS;
    const { usageHourly, usageHourlyTotal, usageDailyTotal, usageDaily } = this.store.tables;
    const [perKey] = await this.store.batch((db) => [
      db.delete(usageHourly).where(lt(usageHourly.hour, cutoff)),
      db.delete(usageHourlyTotal).where(lt(usageHourlyTotal.hour, cutoff)),
      db.delete(usageDailyTotal).where(lt(usageDailyTotal.day, dayCutoff)),
      db.delete(usageDaily).where(lt(usageDaily.day, dayCutoff)),
    ]);
    return perKey ?? 0;
  }

  private async flushOnce(options: BatchOptions): Promise<void> {
    const batch = [...this.pending.values()];
    this.pending = new Map();
    this.flushing = true;
    this.inFlight = batch.length;
    try {
      if (batch.length === 0) return;
      await this.store.batch((db) => flushStatements(db, this.store.tables, batch), options);
      if (this.failures > 0) this.logger.info("usage flush succeeded again", { failedFlushes: this.failures });
      if (this.droppedSince > 0) this.logger.warn("usage buffer recovered", { droppedAttempts: this.droppedSince });
      this.failures = 0;
      this.droppedSince = 0;
    } catch (err) {
      this.lastFailure = performance.now();
      this.restore(batch);
      // The first failure of an outage, then one line in sixty: a timer retrying every few seconds must not flood the log.
      if (this.failures++ % 60 === 0) {
        this.logger.warn("usage flush failed; keeping the counts for the next flush", {
          error: (err as Error).message,
          buckets: this.pending.size,
          failedFlushes: this.failures,
        });
      }
      throw err;
    } finally {
      this.flushing = false;
      this.inFlight = 0;
    }
  }

  // Buckets recorded meanwhile merge with the failed ones, so nothing is counted twice or lost.
  private restore(batch: Bucket[]): void {
    const fresh = this.pending;
    this.pending = new Map(batch.map((b) => [bucketId(b), b]));
    for (const [id, b] of fresh) {
      const old = this.pending.get(id);
      if (old) addInto(old, b);
      else this.pending.set(id, b);
    }
  }
}
