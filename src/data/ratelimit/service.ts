import { and, eq, gt, lt, sql } from "drizzle-orm";
import { rateLimited } from "../../core/errors.ts";
import type { Store } from "../db/index.ts";

/** At most `limit` events per `windowMs` milliseconds. */
export interface RateRule {
  limit: number;
  windowMs: number;
}

/** A bucket with its rules and the message of its 429. */
export interface LimitedBucket {
  bucket: string;
  rules: readonly RateRule[];
  message: string;
}

/**
 * Sliding-window rate limiting stored in the database, so every instance sharing it agrees.
 * The check and the record are one SQL statement run under the bucket's exclusive lock, so
 * concurrent requests, on this instance or another, cannot both slip through.
 */
export class RateLimiter {
  constructor(
    private readonly store: Store,
    private readonly now: () => number,
  ) {}

  /** Records one event in `bucket`, or throws 429 `code` (with Retry-After) if any rule is exhausted. */
  async hit(
    bucket: string,
    rules: readonly RateRule[],
    code = "RATE_LIMITED",
    message = "Too many requests.",
  ): Promise<void> {
    const now = this.now();
    const { rateEvents } = this.store.tables;
    const conditions = rules.map(
      (r) =>
        sql`(SELECT count(*) FROM ${rateEvents} WHERE ${rateEvents.bucket} = ${bucket} AND ${rateEvents.at} > ${now - r.windowMs}) < ${r.limit}`,
    );
    // CASTs: PostgreSQL types a bare parameter in a SELECT list as text.
    const inserted = await this.store.runExclusive(
      `rate:${bucket}`,
      sql`INSERT INTO ${rateEvents} (bucket, at) SELECT CAST(${bucket} AS TEXT), CAST(${now} AS BIGINT) WHERE ${sql.join(conditions, sql` AND `)}`,
    );
    if (inserted > 0) return;
    throw rateLimited(code, message, await this.retryAfter(bucket, rules, now));
  }

  /**
   * Throws what `hit` would throw if `bucket` is exhausted, without recording anything: asked
   * before a hit on another bucket, so that a request refused here does not use up that one.
   */
  async check(
    bucket: string,
    rules: readonly RateRule[],
    code = "RATE_LIMITED",
    message = "Too many requests.",
  ): Promise<void> {
    const now = this.now();
    const wait = await this.retryAfter(bucket, rules, now);
    if (wait > 0) throw rateLimited(code, message, wait);
  }

  /**
   * Records one event in `narrow` (e.g. one e-mail address) and one in `wide` (e.g. the client's
   * IP address). `narrow` is asked first, so a request it refuses (a client retrying too soon)
   * costs `wide` nothing; a request `wide` refuses is recorded in neither.
   */
  async hitBoth(narrow: LimitedBucket, wide: LimitedBucket, code = "RATE_LIMITED"): Promise<void> {
    await this.check(narrow.bucket, narrow.rules, code, narrow.message);
    await this.hit(wide.bucket, wide.rules, code, wide.message);
    await this.hit(narrow.bucket, narrow.rules, code, narrow.message);
  }

  /**
   * Deletes events older than any rule can see: `maxWindowMs`, or `longer.windowMs` for the buckets
   * whose names start with `longer.prefix` (a day's budget need not keep every hourly bucket a day).
   * The caller passes the longest window of the rules it uses: a longer rule would lose its events early.
   */
  async prune(maxWindowMs: number, longer?: { prefix: string; windowMs: number }): Promise<void> {
    const { rateEvents } = this.store.tables;
    const now = this.now();
    if (!longer) return void (await this.store.db.delete(rateEvents).where(lt(rateEvents.at, now - maxWindowMs)));
    const kept = sql`${rateEvents.bucket} LIKE ${`${longer.prefix}%`}`;
    await this.store.db.delete(rateEvents).where(sql`${rateEvents.at} < ${now - maxWindowMs} AND NOT (${kept})`);
    await this.store.db.delete(rateEvents).where(and(lt(rateEvents.at, now - longer.windowMs), kept));
  }

  /** How long until every rule of `bucket` admits one more event; 0 when they do now. */
  private async retryAfter(bucket: string, rules: readonly RateRule[], now: number): Promise<number> {
    let wait = 0;
    const { rateEvents } = this.store.tables;
    for (const rule of rules) {
      const recent = await this.store.db
        .select({ at: rateEvents.at })
        .from(rateEvents)
        .where(and(eq(rateEvents.bucket, bucket), gt(rateEvents.at, now - rule.windowMs)))
        .orderBy(sql`${rateEvents.at} DESC`)
        .limit(rule.limit);
      // The window reopens when the oldest of the last `limit` events leaves it.
      if (recent.length >= rule.limit) wait = Math.max(wait, recent[rule.limit - 1]!.at + rule.windowMs - now);
    }
    return wait;
  }
}
