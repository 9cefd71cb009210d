import { and, eq, gt, lt, sql } from "drizzle-orm";
import type { Database } from "../db/index.ts";
import { rateEvents } from "../db/schema.ts";
import { rateLimited } from "../errors.ts";

/** At most `limit` events per `windowMs` milliseconds. */
export interface RateRule {
  limit: number;
  windowMs: number;
}

/**
 * Sliding-window rate limiting stored in the database, so every instance sharing it agrees.
 * The check and the record are one SQL statement, so concurrent requests cannot both slip through.
 */
export class RateLimiter {
  constructor(
    private readonly db: Database,
    private readonly now: () => number,
  ) {}

  /** Records one event in `bucket`, or throws 429 `code` (with Retry-After) if any rule is exhausted. */
  async hit(bucket: string, rules: readonly RateRule[], code = "RATE_LIMITED", what = "Too many requests."): Promise<void> {
    const now = this.now();
    const conditions = rules.map(
      (r) => sql`(SELECT count(*) FROM ${rateEvents} WHERE ${rateEvents.bucket} = ${bucket} AND ${rateEvents.at} > ${now - r.windowMs}) < ${r.limit}`,
    );
    const inserted = await this.db.run(
      sql`INSERT INTO ${rateEvents} (bucket, at) SELECT ${bucket}, ${now} WHERE ${sql.join(conditions, sql` AND `)}`,
    );
    if (inserted.rowsAffected > 0) return;
    throw rateLimited(code, what, await this.retryAfter(bucket, rules, now));
  }

  /** Deletes events older than any rule can see. */
  async prune(maxWindowMs: number): Promise<void> {
    await this.db.delete(rateEvents).where(lt(rateEvents.at, this.now() - maxWindowMs));
  }

  private async retryAfter(bucket: string, rules: readonly RateRule[], now: number): Promise<number> {
    let wait = 1000;
    for (const rule of rules) {
      const recent = await this.db
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
