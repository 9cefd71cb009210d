import { scrub } from "../redact.ts";
import type { Transporter } from "nodemailer";

/** One outgoing e-mail with both a plain-text and an HTML body. */
export interface MailMessage {
  to: string;
  subject: string;
  text: string;
  html: string;
}

/** Anything that can deliver a message; throws when the message was not accepted. */
export interface Mailer {
  send(message: MailMessage): Promise<void>;
  /** True for the development transport that only prints messages. */
  readonly isDevelopment: boolean;
}

/**
 * Delivers through an SMTP server (`smtp://user:pass@host:587`, `smtps://…`) with bounded timeouts.
 * nodemailer is loaded with the first message, not at start: it is ~300 KiB of the executable's
 * ~1.8 MiB of JavaScript, 5–15 ms of every start-up (bench/README.md, "Start-up"), against the
 * seconds an SMTP exchange takes anyway.
 */
export function smtpMailer(url: string, from: string): Mailer {
  let transport: Promise<Transporter> | undefined;
  const loadTransport = async () =>
    (await import("nodemailer")).default.createTransport({
      url,
      // A hung SMTP server must not hold a request for minutes.
      connectionTimeout: 10_000,
      greetingTimeout: 10_000,
      socketTimeout: 20_000,
    });
  return {
    isDevelopment: false,
    async send(message) {
      transport ??= loadTransport();
      // The server's reply goes into the log: one that echoes the login (some do, on a failed AUTH) must not put the password there.
      await (await transport).sendMail({ from, ...message }).catch((err: Error) => {
        throw new Error(scrub(err.message, [url]));
      });
    },
  };
}

/** What the server logs at start when it uses logMailer (the CLI's commands send no mail, so they do not say it). */
export const DEVELOPMENT_MAIL_WARNING =
  "IMGPRESS_SMTP_URL is not set: e-mails (including one-time codes) are PRINTED TO THIS LOG instead of being sent. " +
  "This development transport is not for production.";

/** Development transport used when no SMTP server is configured: prints each message to the log. */
export function logMailer(write: (text: string) => void = (t) => console.log(t)): Mailer {
  return {
    isDevelopment: true,
    async send(message) {
      write(`\n----- e-mail (development transport, not sent) -----\nTo: ${message.to}\nSubject: ${message.subject}\n\n${message.text}\n-----\n`);
    },
  };
}

/** Wraps a mailer so an observer (the metrics) learns whether each message was accepted. */
export function observedMailer(inner: Mailer, observe: (outcome: "sent" | "failed") => void): Mailer {
  return {
    isDevelopment: inner.isDevelopment,
    async send(message) {
      try {
        await inner.send(message);
      } catch (err) {
        observe("failed");
        throw err;
      }
      observe("sent");
    },
  };
}
