import { normalizeEmail } from "../core/email.ts";
import { AppError } from "../core/errors.ts";
import { rateLimitSubject } from "../core/ipallow.ts";
import type { Logger } from "../core/log.ts";
import type { Mailer } from "../core/mail/mailer.ts";
import { otpMail } from "../core/mail/templates.ts";
import type { AuditLog } from "../data/audit/service.ts";
import type { Store } from "../data/db/index.ts";
import type { staffCodes } from "../data/db/schema.ts";
import { otpLimits, RECENT_CODE } from "../data/otp/limits.ts";
import { type Consumed, OtpEngine } from "../data/otp/service.ts";
import type { RateLimiter } from "../data/ratelimit/service.ts";
import type { StaffDirectory } from "./directory.ts";
import type { SessionService } from "./sessions.ts";

/**
 * A refused sign-in code. `offerNewCode`: the code is gone (expired, used, burnt), so the page
 * offers to send another; while tries remain it does not, since a new code would replace the one
 * in the mail.
 */
export class CodeRefused extends AppError {
  constructor(status: number, code: string, message: string, options: { offerNewCode: boolean }) {
    super(status, code, message);
    this.offerNewCode = options.offerNewCode;
  }

  readonly offerNewCode: boolean;
}

// Why a code was refused. Every address has a stored code after asking for one (see `sendCode`),
// so the count of tries left is the same for staff and others.
function codeRefusal(guess: { wellFormed: boolean; burnt: boolean; triesLeft?: number }): CodeRefused {
  if (guess.burnt)
    return new CodeRefused(
      429,
      "TOO_MANY_ATTEMPTS",
      "Too many wrong codes: this code is no longer valid. Send a new code.",
      { offerNewCode: true },
    );
  if (!guess.wellFormed)
    return new CodeRefused(401, "INVALID_CODE", "A sign-in code is 6 digits: type it as it is in the mail.", {
      offerNewCode: false,
    });
  if (guess.triesLeft !== undefined)
    return new CodeRefused(401, "INVALID_CODE", `That code is not right. ${triesLeftText(guess.triesLeft)}`, {
      offerNewCode: false,
    });
  return new CodeRefused(401, "INVALID_CODE", "That code has expired or was already used. Send a new code.", {
    offerNewCode: true,
  });
}

function triesLeftText(tries: number): string {
  return tries === 1 ? "1 try left." : `${tries} tries left.`;
}

/** Lifetime of a staff sign-in code, in seconds. */
export const STAFF_CODE_TTL_S = 600;

/** What staff sign-in needs from the rest of the service. */
export interface StaffSignInDeps {
  store: Store;
  staff: StaffDirectory;
  sessions: SessionService;
  mailer: Mailer;
  limiter: RateLimiter;
  audit: AuditLog;
  logger: Logger;
  /** Pepper of staff codes, derived for this purpose only (key issuance has another). */
  pepper: Uint8Array;
  now: () => number;
  /** Runs work after the answer has gone (the code and its mail), so a stop can wait for it. */
  afterAnswer: (work: Promise<void>) => void;
}

/** Staff sign-in by e-mailed code; every answer is the same whether or not the address is staff. */
export class StaffSignIn {
  private readonly codes: OtpEngine<typeof staffCodes>;

  constructor(private readonly deps: StaffSignInDeps) {
    this.codes = new OtpEngine(deps.store.db, deps.store.tables.staffCodes, deps.pepper, STAFF_CODE_TTL_S, deps.now, {
      limiter: deps.limiter,
      kind: "staff",
    });
  }

  /**
   * Mails a code if `raw` is staff and returns the normalised address. The code is stored and
   * mailed after the answer, so that neither the answer nor its timing tells staff from others.
   */
  async requestCode(raw: string, ip: string): Promise<string> {
    const email = normalizeEmail(raw);
    // Any address, staff or not, can use up its wrong codes (every address gets a code): the answer tells nothing.
    await this.codes.refuseWhenGuessedOut(email);
    await this.deps.limiter.hitBoth(
      { bucket: `staff-email:${email}`, rules: otpLimits.requestPerAddress, message: RECENT_CODE },
      {
        bucket: `staff-ip:${rateLimitSubject(ip)}`,
        rules: otpLimits.requestPerIp,
        message: "Too many sign-in requests from this IP address.",
      },
    );
    this.deps.afterAnswer(
      this.sendCode(email).catch((err: Error) =>
        this.deps.logger.warn("staff code mail delivery failed", { error: err.message }),
      ),
    );
    return email;
  }

  /** Exchanges a code for a new session token; wrong, expired, used and burnt codes are refused (and audited). */
  async verify(input: {
    email: string;
    code: string;
    ip: string;
    userAgent: string;
  }): Promise<{ email: string; token: string }> {
    await this.deps.limiter.hit(
      `staff-verify-ip:${rateLimitSubject(input.ip)}`,
      otpLimits.verifyPerIp,
      "RATE_LIMITED",
      "Too many sign-in attempts from this IP address.",
    );
    const email = normalizeEmail(input.email);
    const wellFormed = /^\d{6}$/.test(input.code);
    const result = wellFormed
      ? await this.codes.consume(email, input.code)
      : ({ ok: false, burnt: false } as Consumed<typeof staffCodes>);
    const staff = await this.deps.staff.isStaff(email);
    if (!result.ok || !staff) {
      const burnt = !result.ok && result.burnt;
      // Any address can be typed: only staff addresses get an event per attempt, the rest a count per hour.
      if (staff)
        await this.deps.audit.record({
          type: "staff.sign_in_failed",
          actor: email,
          clientAddress: input.ip,
          detail: { reason: burnt ? "too_many_attempts" : "invalid_code" },
        });
      else await this.deps.audit.countFailedSignIn(email, input.ip);
      throw codeRefusal({ wellFormed, burnt, triesLeft: result.ok ? undefined : result.triesLeft });
    }
    const session = await this.deps.sessions.create(email, input.ip, input.userAgent);
    await this.deps.audit.record({ type: "staff.sign_in", actor: email, subject: session.id, clientAddress: input.ip });
    return { email, token: session.token };
  }

  // Every address gets a stored code, only staff a mail: wrong guesses then count and burn alike,
  // so the fifth answer (429) does not tell staff from others. `verify` still requires staff.
  private async sendCode(email: string): Promise<void> {
    const { code, codeHash, replaced } = await this.codes.create(email);
    if (!(await this.deps.staff.isStaff(email))) return;
    try {
      await this.deps.mailer.send(otpMail(email, code, { kind: "staff" }, STAFF_CODE_TTL_S / 60));
    } catch (err) {
      // An undelivered code must not stay usable; its row stays, so wrong guesses burn it on the
      // fifth as on any other address (deleted, staff would answer 401 where others get 429).
      await this.codes.spoil(email, codeHash, replaced);
      throw err;
    }
  }

  /** Ends one session (its cookie is cleared by the route). */
  async signOut(session: { id: string; email: string }, ip: string): Promise<void> {
    await this.deps.sessions.end(session.email, session.id);
    await this.deps.audit.record({
      type: "staff.sign_out",
      actor: session.email,
      subject: session.id,
      clientAddress: ip,
    });
  }

  /** Ends every session of `email`, in every browser. */
  async signOutEverywhere(email: string, ip: string): Promise<number> {
    const count = await this.deps.sessions.endAll(email);
    await this.deps.audit.record({
      type: "staff.sign_out_everywhere",
      actor: email,
      clientAddress: ip,
      detail: { sessions: count },
    });
    return count;
  }

  /** Deletes expired and burnt codes. */
  prune(): Promise<void> {
    return this.codes.prune();
  }
}
