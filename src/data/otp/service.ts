import { and, eq, gt, lt, sql } from "drizzle-orm";
import { hmacSha256Hex, randomBytes, randomDigits, timingSafeEqual, toHex } from "../../core/crypto.ts";
import { DAY_MS } from "../../core/durations.ts";
import type { Database } from "../db/index.ts";
import type { otpCodes, staffCodes } from "../db/schema.ts";
import type { RateLimiter, RateRule } from "../ratelimit/service.ts";

/** Wrong guesses after which a code is burnt. */
export const OTP_MAX_ATTEMPTS = 5;

/**
 * Wrong codes compared for one address within a day, whatever codes they were for: beyond it no
 * code of that address is checked, nor a new one sent, until the oldest is a day old. Each new
 * code resets its own 5 attempts, so without this a patient guesser could try 25 codes an hour,
 * 600 a day, for good; 100 is NIST SP 800-63B's ceiling for consecutive failures (5.2.2).
 */
export const WRONG_CODES_PER_ADDRESS: readonly RateRule[] = [{ limit: 100, windowMs: DAY_MS }];

/** How long the limiter must keep wrong-code events (the budget's window). */
export const WRONG_CODE_WINDOW_MS = WRONG_CODES_PER_ADDRESS[0]!.windowMs;

const GUESSED_OUT =
  "Too many wrong codes were tried for this e-mail address in the last 24 hours: no code is checked for it, nor a new one sent, until some of them are a day old.";

/** Where an engine counts wrong codes per address: the service's limiter, under `WRONG_CODE_BUCKETS` + its own `kind`. */
export interface WrongCodeBudget {
  limiter: RateLimiter;
  kind: string;
}

/** The prefix of every wrong-code bucket: the limiter keeps their events a day (the others an hour). */
export const WRONG_CODE_BUCKETS = "wrong-code:";

/** A table with the shared code columns (see `codeColumns` in src/data/db/schema.ts). */
export type CodeTable = typeof otpCodes | typeof staffCodes;

/** A code row `create` replaced (either table's columns; the issuance table adds a site URL). */
export type ReplacedCode = Partial<typeof otpCodes.$inferSelect> & typeof staffCodes.$inferSelect;

/**
 * What a guess came to: the consumed row, or why not. `triesLeft`: the guess was compared with a
 * live code and was wrong; that many more may be tried (0 when this guess burnt it).
 */
export type Consumed<T extends CodeTable> =
  | { ok: true; row: T["$inferSelect"] }
  | { ok: false; burnt: boolean; triesLeft?: number };

/**
 * The one-time-code engine shared by key issuance and staff sign-in: 6-digit codes, stored as a
 * keyed hash, single use, a lifetime and a wrong-guess budget. Each use has its own table and its
 * own pepper, so a code of one use matches nothing in the other.
 */
export class OtpEngine<T extends CodeTable> {
  // Drizzle cannot type one query over two tables; every shared column has the same name and type.
  private readonly t: typeof staffCodes;

  constructor(
    private readonly db: Database,
    table: T,
    private readonly pepper: Uint8Array,
    readonly ttlS: number,
    private readonly now: () => number,
    private readonly budget: WrongCodeBudget,
  ) {
    this.t = table as unknown as typeof staffCodes;
  }

  /** Throws 429 RATE_LIMITED (with Retry-After) when `email` has used up its wrong codes of the day: a new code could not be checked. */
  async refuseWhenGuessedOut(email: string): Promise<void> {
    await this.budget.limiter.check(this.bucketOf(email), WRONG_CODES_PER_ADDRESS, "RATE_LIMITED", GUESSED_OUT);
  }

  /**
   * Creates a fresh code for `email` (replacing a pending one); returns the clear code to mail, its
   * hash, and the row it replaced, which `discard` and `spoil` put back if the new code's mail fails.
   */
  async create(email: string, extra: Omit<T["$inferInsert"], keyof typeof staffCodes.$inferInsert> = {} as never) {
    const code = randomDigits(6);
    const codeHash = await this.hash(email, code);
    const now = this.now();
    const row = { ...extra, email, codeHash, attempts: 0, createdAt: now, expiresAt: now + this.ttlS * 1000 };
    const [replaced] = await this.db.select().from(this.t).where(eq(this.t.email, email)).limit(1);
    await this.db.insert(this.t).values(row).onConflictDoUpdate({ target: this.t.email, set: row });
    return { code, codeHash, replaced: replaced as ReplacedCode | undefined };
  }

  /**
   * Withdraws the code `create` returned (its mail failed) unless a newer one already replaced it:
   * the code it replaced comes back, as it was (its mail did arrive), or else the row is deleted.
   */
  async discard(email: string, codeHash: string, replaced?: ReplacedCode): Promise<void> {
    const mine = and(eq(this.t.email, email), eq(this.t.codeHash, codeHash));
    if (replaced) await this.db.update(this.t).set(replaced).where(mine);
    else await this.db.delete(this.t).where(mine);
  }

  /** Whether a code row can still be guessed: not expired, not burnt. */
  isLive(row: { expiresAt: number; attempts: number }): boolean {
    return row.expiresAt > this.now() && row.attempts < OTP_MAX_ATTEMPTS;
  }

  /** Whether `email` has a code that can still be guessed (not expired, not burnt). */
  async hasPending(email: string): Promise<boolean> {
    const [row] = await this.db
      .select({ email: this.t.email })
      .from(this.t)
      .where(and(eq(this.t.email, email), gt(this.t.expiresAt, this.now()), lt(this.t.attempts, OTP_MAX_ATTEMPTS)))
      .limit(1);
    return row !== undefined;
  }

  /**
   * Makes the code `create` returned unusable but keeps its row (unless a newer one replaced it):
   * guesses still spend its attempts and burn it, as they do for a code that was mailed. The code
   * it replaced comes back instead, when there was one.
   */
  async spoil(email: string, codeHash: string, replaced?: ReplacedCode): Promise<void> {
    if (replaced) return this.discard(email, codeHash, replaced);
    await this.db
      .update(this.t)
      .set({ codeHash: toHex(randomBytes(32)) })
      .where(and(eq(this.t.email, email), eq(this.t.codeHash, codeHash)));
  }

  /**
   * Checks a guess. Every guess first spends one attempt in a single UPDATE … RETURNING, so however
   * many guesses arrive at once, on however many instances sharing the database, at most
   * OTP_MAX_ATTEMPTS are ever compared. A right one then deletes the code and returns its row (of
   * two concurrent right guesses exactly one wins: the DELETE … RETURNING decides).
   */
  async consume(email: string, guess: string): Promise<Consumed<T>> {
    // RATE_LIMITED, as request-otp answers it: wait for Retry-After. TOO_MANY_ATTEMPTS says "request a new code", which would be refused.
    await this.budget.limiter.check(this.bucketOf(email), WRONG_CODES_PER_ADDRESS, "RATE_LIMITED", GUESSED_OUT);
    // Hash before the lookup so an unknown address and a wrong code take the same time.
    const guessHash = await this.hash(email, guess);
    const [pending] = await this.db
      .update(this.t)
      .set({ attempts: sql`${this.t.attempts} + 1` })
      .where(and(eq(this.t.email, email), gt(this.t.expiresAt, this.now()), lt(this.t.attempts, OTP_MAX_ATTEMPTS)))
      .returning({ codeHash: this.t.codeHash, attempts: this.t.attempts });
    if (!pending) return { ok: false, burnt: false };
    if (!timingSafeEqual(guessHash, pending.codeHash)) {
      // Only guesses compared with a live code count: a guess at an address without one tells nothing.
      await this.budget.limiter.hit(this.bucketOf(email), WRONG_CODES_PER_ADDRESS).catch(() => {});
      const triesLeft = Math.max(0, OTP_MAX_ATTEMPTS - pending.attempts);
      return { ok: false, burnt: triesLeft === 0, triesLeft };
    }
    const [row] = await this.db
      .delete(this.t)
      .where(and(eq(this.t.email, email), eq(this.t.codeHash, pending.codeHash)))
      .returning();
    return row ? { ok: true, row: row as T["$inferSelect"] } : { ok: false, burnt: false };
  }

  /** Deletes expired and burnt codes. */
  async prune(): Promise<void> {
    await this.db
      .delete(this.t)
      .where(sql`${this.t.expiresAt} <= ${this.now()} OR ${this.t.attempts} >= ${OTP_MAX_ATTEMPTS}`);
  }

  private bucketOf(email: string): string {
    return `${WRONG_CODE_BUCKETS}${this.budget.kind}:${email}`;
  }

  private hash(email: string, code: string): Promise<string> {
    return hmacSha256Hex(this.pepper, `${email}\n${code}`);
  }
}
