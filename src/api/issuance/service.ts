import { isAllowed, normalizeEmail } from "../../core/email.ts";
import { AppError } from "../../core/errors.ts";
import { isLoopbackHost, rateLimitSubject } from "../../core/ipallow.ts";
import type { Logger } from "../../core/log.ts";
import type { Mailer } from "../../core/mail/mailer.ts";
import { keyIssuedMail, otpMail } from "../../core/mail/templates.ts";
import type { AuditLog } from "../../data/audit/service.ts";
import type { Store } from "../../data/db/index.ts";
import type { otpCodes } from "../../data/db/schema.ts";
import type { IssuedKey, KeyService, RecordIssued } from "../../data/keys/service.ts";
import { otpLimits, RECENT_CODE } from "../../data/otp/limits.ts";
import { OtpEngine } from "../../data/otp/service.ts";
import type { RateLimiter } from "../../data/ratelimit/service.ts";
import { normalizeSiteUrl } from "./site.ts";

/** Lifetime of a one-time code, in seconds (spec 4.2). */
export const OTP_TTL_S = 900;

/** What key issuance needs from the rest of the service. */
export interface IssuanceDeps {
  store: Store;
  keys: KeyService;
  mailer: Mailer;
  limiter: RateLimiter;
  logger: Logger;
  audit: AuditLog;
  /** Keyed-hash pepper for codes; derived from the master key, never stored in the database. */
  pepper: Uint8Array;
  allowedEmails: readonly string[];
  now: () => number;
  /** Runs work after the answer has gone (the key notice mail), so a stop can wait for it. */
  afterAnswer: (work: Promise<void>) => void;
}

function notAllowed(): AppError {
  return new AppError(403, "EMAIL_NOT_ALLOWED", "This address is not allowed to obtain keys on this server.");
}

/** Passwordless credential issuance: e-mail a 6-digit code, exchange it once for a key pair. */
export class KeyIssuance {
  private readonly codes: OtpEngine<typeof otpCodes>;

  constructor(private readonly deps: IssuanceDeps) {
    this.codes = new OtpEngine(deps.store.db, deps.store.tables.otpCodes, deps.pepper, OTP_TTL_S, deps.now, {
      limiter: deps.limiter,
      kind: "otp",
    });
  }

  /** Sends a fresh code to `email`, replacing any pending one. */
  async request(input: { email: string; siteUrl?: string; ip: string }): Promise<void> {
    const email = normalizeEmail(input.email);
    const siteUrl = input.siteUrl === undefined ? null : normalizeSiteUrl(input.siteUrl);
    const perIp = {
      bucket: `otp-ip:${rateLimitSubject(input.ip)}`,
      rules: otpLimits.requestPerIp,
      message: "Too many code requests from this IP address.",
    };
    if (!isAllowed(email, this.deps.allowedEmails)) {
      // Counted against the client's hourly quota like any request, or the 403 would let anyone
      // test addresses against IMGPRESS_ALLOWED_EMAILS at full speed.
      await this.deps.limiter.hit(perIp.bucket, perIp.rules, "RATE_LIMITED", perIp.message);
      throw notAllowed();
    }
    await this.codes.refuseWhenGuessedOut(email);
    // Retries refused for the address (a plugin's retry loop, a shared host's many sites) do not use up the IP's hourly quota.
    await this.deps.limiter.hitBoth(
      { bucket: `otp-email:${email}`, rules: otpLimits.requestPerAddress, message: RECENT_CODE },
      perIp,
    );

    const { code, codeHash, replaced } = await this.codes.create(email, { siteUrl });
    try {
      await this.deps.mailer.send(otpMail(email, code, { kind: "api-key", siteUrl }, OTP_TTL_S / 60));
    } catch (err) {
      // An undelivered code must not stay usable; the one it replaced was delivered and works again.
      await this.codes.discard(email, codeHash, replaced);
      this.deps.logger.warn("otp mail delivery failed", { error: (err as Error).message });
      throw new AppError(
        502,
        "MAIL_DELIVERY_FAILED",
        `The e-mail could not be delivered; no new code was issued${replaced && this.codes.isLive(replaced) ? " (the code sent earlier still works until it expires)" : ""}. Try again later.`,
      );
    }
  }

  /**
   * Exchanges a code for a new key pair. Wrong, expired, used and burnt codes all answer the same
   * 401 INVALID_OTP; the guess that burns a code answers 429 TOO_MANY_ATTEMPTS.
   */
  async verify(input: { email: string; otp: string; siteUrl?: string; ip: string }) {
    await this.deps.limiter.hit(
      `verify-ip:${rateLimitSubject(input.ip)}`,
      otpLimits.verifyPerIp,
      "RATE_LIMITED",
      "Too many verification attempts from this IP address.",
    );
    const email = normalizeEmail(input.email);
    const siteUrlGiven = input.siteUrl === undefined ? undefined : normalizeSiteUrl(input.siteUrl);
    const invalid = new AppError(
      401,
      "INVALID_OTP",
      "The code is wrong, expired or already used: check it, or request a new one.",
    );
    // Checked again here: an address the operator took off the list since its code was sent gets no
    // key. Said so only to an address that has a code (it was on the list then); any other answers
    // as a wrong code does, or verify-otp would test addresses against the list 30 times in 5 minutes.
    if (!isAllowed(email, this.deps.allowedEmails)) throw (await this.codes.hasPending(email)) ? notAllowed() : invalid;
    const result = await this.codes.consume(email, input.otp);
    if (!result.ok && result.burnt) {
      throw new AppError(
        429,
        "TOO_MANY_ATTEMPTS",
        "Too many wrong codes: this code is no longer valid. Request a new one.",
      );
    }
    if (!result.ok) throw invalid;
    const consumed = result.row;
    const now = this.deps.now();

    const siteUrl = siteUrlGiven ?? consumed.siteUrl ?? "";
    // Its audit event in the same transaction: a crash keeps both or neither.
    const issued = await this.deps.keys.issue(
      email,
      siteUrl,
      this.recordIssued({ actor: email, clientAddress: input.ip, detail: { siteUrl } }),
    );
    this.deps.logger.info("key issued", { keyId: issued.id, keyPrefix: issued.keyPrefix });
    // The answer carries the only copy of the keys, and the previous pair is revoked already: it
    // must not wait on the mail server (a client that gave up waiting would have neither pair).
    this.deps.afterAnswer(
      this.deps.mailer
        .send(keyIssuedMail(email, issued.keyPrefix, siteUrl, new Date(now)))
        .catch((err: Error) =>
          this.deps.logger.warn("key notice mail failed", { keyId: issued.id, error: err.message }),
        ),
    );
    return issued;
  }

  /**
   * Issues a pair at the operator's request (`imgpress keys create`): no code, no mail and no
   * allowlist (the operator may give anyone a key), but the same address and site_url rules, the
   * same revocation of the address's active pair for that site, and the same audit event in the
   * same transaction, with the operator as its actor and the owner in its detail.
   */
  async issueForOperator(input: { email: string; siteUrl?: string; by: string }): Promise<IssuedKey> {
    const email = normalizeEmail(input.email);
    const siteUrl = input.siteUrl ? normalizeSiteUrl(input.siteUrl) : "";
    const issued = await this.deps.keys.issue(
      email,
      siteUrl,
      this.recordIssued({ actor: input.by, clientAddress: "", detail: { siteUrl, owner: email } }),
    );
    this.deps.logger.info("key issued", { keyId: issued.id, keyPrefix: issued.keyPrefix, by: input.by });
    return issued;
  }

  /**
   * The audit events of an issuance, written in its transaction: `key.issued` (with `replaces`, the
   * ids of the pair it rotated out, when there was one) and a `key.revoked` for each replaced key
   * naming why (`reason: "rotated"`) and its successor (`replacedBy`).
   */
  private recordIssued(by: { actor: string; clientAddress: string; detail: Record<string, unknown> }): RecordIssued {
    const { actor, clientAddress } = by;
    return (db, key, replaced) =>
      this.deps.audit.insert(db, [
        {
          type: "key.issued",
          actor,
          subject: key.id,
          clientAddress,
          detail: { keyPrefix: key.keyPrefix, ...by.detail, ...(replaced.length ? { replaces: replaced } : {}) },
        },
        ...replaced.map((id) => ({
          type: "key.revoked" as const,
          actor,
          subject: id,
          clientAddress,
          detail: { reason: "rotated", replacedBy: key.id },
        })),
      ]);
  }

  /** Deletes expired and burnt codes. */
  prune(): Promise<void> {
    return this.codes.prune();
  }
}

/**
 * The start-up warning for open registration on a reachable port, or null: with real mail
 * (`smtpUrl`), `*` in IMGPRESS_ALLOWED_EMAILS and a bind address other than loopback, anyone who
 * can reach the port may obtain a key pair and spend this machine's CPU. Behind a proxy on
 * 127.0.0.1 the proxy's own exposure is the operator's to judge, so it is not warned about.
 */
export function openIssuanceWarning(config: {
  smtpUrl?: string;
  allowedEmails: readonly string[];
  host: string;
}): string | null {
  if (!config.smtpUrl || !config.allowedEmails.includes("*") || isLoopbackHost(config.host)) return null;
  return (
    `IMGPRESS_ALLOWED_EMAILS is * and the service listens on ${config.host} (not loopback): ANYONE who can reach this port may request a code and obtain API keys. ` +
    "Limit it to your addresses or domains (IMGPRESS_ALLOWED_EMAILS=you@example.com,@example.org), or issue keys with `imgpress keys create` and set the list to addresses only you own"
  );
}
