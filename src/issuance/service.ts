import { and, eq, gt, lt, sql } from "drizzle-orm";
import { hmacSha256Hex, randomDigits, timingSafeEqual } from "../crypto.ts";
import type { Database } from "../db/index.ts";
import { otpCodes } from "../db/schema.ts";
import { AppError } from "../errors.ts";
import type { KeyService } from "../keys/service.ts";
import type { Logger } from "../log.ts";
import type { Mailer } from "../mail/mailer.ts";
import { keyIssuedMail, otpMail } from "../mail/templates.ts";
import type { RateLimiter } from "../ratelimit/service.ts";
import { isAllowed, normalizeEmail, normalizeSiteUrl } from "./email.ts";

/** Lifetime of a one-time code, in seconds (spec 4.2). */
export const OTP_TTL_S = 900;
/** Wrong guesses after which a code is burnt. */
export const OTP_MAX_ATTEMPTS = 5;

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;

/** The rate limits of the two credential endpoints (documented in docs/api.md). */
export const otpLimits = {
  requestPerAddress: [
    { limit: 1, windowMs: MINUTE },
    { limit: 5, windowMs: HOUR },
  ],
  requestPerIp: [{ limit: 20, windowMs: HOUR }],
  verifyPerIp: [{ limit: 30, windowMs: 5 * MINUTE }],
} as const;

/** What the OTP flow needs from the rest of the service. */
export interface OtpDeps {
  db: Database;
  keys: KeyService;
  mailer: Mailer;
  limiter: RateLimiter;
  logger: Logger;
  /** Keyed-hash pepper for codes; derived from the master key, never stored in the database. */
  pepper: Uint8Array;
  allowedEmails: readonly string[];
  now: () => number;
}

/** Passwordless credential issuance: e-mail a 6-digit code, exchange it once for a key pair. */
export class OtpService {
  constructor(private readonly d: OtpDeps) {}

  /** Sends a fresh code to `email`, replacing any pending one. */
  async request(input: { email: string; siteUrl?: string; ip: string }): Promise<void> {
    const email = normalizeEmail(input.email);
    const siteUrl = input.siteUrl === undefined ? null : normalizeSiteUrl(input.siteUrl);
    if (!isAllowed(email, this.d.allowedEmails)) {
      throw new AppError(403, "EMAIL_NOT_ALLOWED", "This address is not allowed to obtain keys on this server.");
    }
    await this.d.limiter.hit(`otp-ip:${input.ip}`, otpLimits.requestPerIp, "RATE_LIMITED", "Too many code requests from this address.");
    await this.d.limiter.hit(`otp-email:${email}`, otpLimits.requestPerAddress, "RATE_LIMITED", "A code was requested for this e-mail address recently.");

    const code = randomDigits(6);
    const codeHash = await this.hash(email, code);
    const now = this.d.now();
    const row = { email, codeHash, siteUrl, attempts: 0, createdAt: now, expiresAt: now + OTP_TTL_S * 1000 };
    await this.d.db.insert(otpCodes).values(row).onConflictDoUpdate({ target: otpCodes.email, set: row });
    try {
      await this.d.mailer.send(otpMail(email, code, siteUrl, OTP_TTL_S / 60));
    } catch (err) {
      // An undelivered code must not stay usable; delete it unless a newer request already replaced it.
      await this.d.db.delete(otpCodes).where(and(eq(otpCodes.email, email), eq(otpCodes.codeHash, codeHash)));
      this.d.logger.warn("otp mail delivery failed", { error: (err as Error).message });
      throw new AppError(502, "MAIL_DELIVERY_FAILED", "The e-mail could not be delivered; no code was issued. Try again later.");
    }
  }

  /**
   * Exchanges a code for a new key pair. Wrong, expired, used and burnt codes all answer the same
   * 401 INVALID_OTP; the guess that burns a code answers 429 TOO_MANY_ATTEMPTS.
   */
  async verify(input: { email: string; otp: string; siteUrl?: string; ip: string }) {
    await this.d.limiter.hit(`verify-ip:${input.ip}`, otpLimits.verifyPerIp, "RATE_LIMITED", "Too many verification attempts from this address.");
    const email = normalizeEmail(input.email);
    const siteUrlGiven = input.siteUrl === undefined ? undefined : normalizeSiteUrl(input.siteUrl);
    const invalid = new AppError(401, "INVALID_OTP", "The code is wrong, expired or already used. Request a new one.");
    // Hash before the lookup so an unknown address and a wrong code take the same time.
    const guess = await this.hash(email, input.otp);
    const now = this.d.now();
    const usable = and(eq(otpCodes.email, email), gt(otpCodes.expiresAt, now), lt(otpCodes.attempts, OTP_MAX_ATTEMPTS));
    const [pending] = await this.d.db.select().from(otpCodes).where(usable);
    if (!pending) throw invalid;

    if (!timingSafeEqual(guess, pending.codeHash)) {
      await this.countWrongGuess(email, pending.codeHash);
      if (pending.attempts + 1 >= OTP_MAX_ATTEMPTS) {
        throw new AppError(429, "TOO_MANY_ATTEMPTS", "Too many wrong codes: this code is no longer valid. Request a new one.");
      }
      throw invalid;
    }
    // Consuming is one DELETE … RETURNING: of two concurrent verifications of one code, exactly one gets the row.
    const [consumed] = await this.d.db
      .delete(otpCodes)
      .where(and(usable, eq(otpCodes.codeHash, pending.codeHash)))
      .returning({ siteUrl: otpCodes.siteUrl });
    if (!consumed) throw invalid;

    const siteUrl = siteUrlGiven ?? consumed.siteUrl ?? "";
    const issued = await this.d.keys.issue(email, siteUrl);
    await this.d.mailer
      .send(keyIssuedMail(email, issued.keyPrefix, siteUrl, new Date(now)))
      .catch((err: Error) => this.d.logger.warn("key notice mail failed", { keyId: issued.id, error: err.message }));
    this.d.logger.info("key issued", { keyId: issued.id, keyPrefix: issued.keyPrefix });
    return issued;
  }

  /** Deletes expired and burnt codes. */
  async prune(): Promise<void> {
    await this.d.db.delete(otpCodes).where(sql`${otpCodes.expiresAt} <= ${this.d.now()} OR ${otpCodes.attempts} >= ${OTP_MAX_ATTEMPTS}`);
  }

  private async countWrongGuess(email: string, codeHash: string): Promise<void> {
    await this.d.db
      .update(otpCodes)
      .set({ attempts: sql`${otpCodes.attempts} + 1` })
      .where(and(eq(otpCodes.email, email), eq(otpCodes.codeHash, codeHash)));
  }

  private hash(email: string, code: string): Promise<string> {
    return hmacSha256Hex(this.d.pepper, `${email}\n${code}`);
  }
}
