import { HOUR_MS } from "../core/durations.ts";
import type { Logger } from "../core/log.ts";
import type { Mailer } from "../core/mail/mailer.ts";
import { testMail } from "../core/mail/templates.ts";
import type { AuditLog } from "../data/audit/service.ts";
import type { RateLimiter, RateRule } from "../data/ratelimit/service.ts";
import type { Notice } from "./layout.ts";

/** Test e-mails one staff member may send: enough to fix a setting and try again, too few to spam their own mailbox. */
export const TEST_MAILS_PER_STAFF: readonly RateRule[] = [{ limit: 3, windowMs: HOUR_MS }];

/** What the settings page says after a test e-mail, by the `done` flag its address carries (fixed words only). */
export const TEST_MAIL_NOTICES: Record<string, Notice> = {
  "test-mail-sent": { kind: "info", text: "Test e-mail sent to your address: check your inbox (and the spam folder)." },
  "test-mail-logged": {
    kind: "info",
    text: "No mail server is set (IMGPRESS_SMTP_URL): the test e-mail was written to the server's log instead.",
  },
  "test-mail-auth": {
    kind: "error",
    text: "The mail server refused the user name or password in IMGPRESS_SMTP_URL. Nothing was sent.",
  },
  "test-mail-recipient": {
    kind: "error",
    text: "The mail server refused your address as a recipient. Nothing was sent.",
  },
  "test-mail-message": { kind: "error", text: "The mail server took the connection but refused the message." },
  "test-mail-tls": {
    kind: "error",
    text: "The mail server did not complete STARTTLS, so imgpress did not send the password: enable STARTTLS on it or use smtps://.",
  },
  "test-mail-unreachable": {
    kind: "error",
    text: "imgpress could not reach the mail server: check the host and port in IMGPRESS_SMTP_URL.",
  },
  "test-mail-failed": {
    kind: "error",
    text: "The mail server did not accept the test e-mail; the server's log has its answer.",
  },
};

// nodemailer's error codes, as the plain reason the page gives.
const REASONS: Record<string, string> = {
  EAUTH: "test-mail-auth",
  EENVELOPE: "test-mail-recipient",
  EMESSAGE: "test-mail-message",
  ETLS: "test-mail-tls",
  ECONNECTION: "test-mail-unreachable",
  ESOCKET: "test-mail-unreachable",
  ETIMEDOUT: "test-mail-unreachable",
  EDNS: "test-mail-unreachable",
};

/** What sending a test e-mail needs. */
export interface StaffTestMailDeps {
  mailer: Mailer;
  limiter: RateLimiter;
  audit: AuditLog;
  logger: Logger;
  now: () => number;
}

/** The settings page's "Send a test e-mail": to the signed-in staff member's own address only. */
export class StaffTestMail {
  constructor(private readonly deps: StaffTestMailDeps) {}

  /**
   * Sends the test message to `email` (the session's own address, never one from the form) and
   * returns the key of TEST_MAIL_NOTICES to show; throws 429 past TEST_MAILS_PER_STAFF.
   */
  async send(email: string, ip: string): Promise<string> {
    await this.deps.limiter.hit(
      `staff-test-mail:${email}`,
      TEST_MAILS_PER_STAFF,
      "RATE_LIMITED",
      "Three test e-mails were sent from your address within the hour: wait before sending another.",
    );
    const outcome = await this.deliver(email);
    await this.deps.audit.record({
      type: "settings.test_mail",
      actor: email,
      clientAddress: ip,
      detail: { outcome },
    });
    return outcome;
  }

  private async deliver(email: string): Promise<string> {
    try {
      await this.deps.mailer.send(testMail(email, new Date(this.deps.now())));
      return this.deps.mailer.isDevelopment ? "test-mail-logged" : "test-mail-sent";
    } catch (err) {
      // The mailer scrubs the URL's password from the server's answer before it reaches here.
      this.deps.logger.warn("test e-mail not delivered", { error: (err as Error).message });
      return REASONS[(err as { code?: string }).code ?? ""] ?? "test-mail-failed";
    }
  }
}
