import type { Transporter } from "nodemailer";
import { isLoopbackAddress } from "../ipallow.ts";
import { scrub } from "../redact.ts";

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

/** How long one message may take from connecting to the server's acceptance, whatever it sends meanwhile. */
const SEND_DEADLINE_MS = 30_000;

/**
 * Delivers through an SMTP server (`smtp://user:pass@host:587`, `smtps://…`) within
 * `deadlineMs` per message. nodemailer is loaded with the first message, not at start: it is
 * ~300 KiB of the executable's ~1.8 MiB of JavaScript, 5–15 ms of every start-up
 * (bench/README.md, "Start-up"), against the seconds an SMTP exchange takes anyway.
 */
export function smtpMailer(url: string, from: string, deadlineMs = SEND_DEADLINE_MS): Mailer {
  let transport: Promise<Transporter> | undefined;
  const tlsRequired = requiresStartTls(url);
  const loadTransport = async () =>
    (await import("nodemailer")).default.createTransport({
      // Without its requireTLS parameter: nodemailer reads any falsy spelling (`=0`, `=`) as an
      // opt-out and lets the URL win over the options; here only `requireTLS=false` opts out.
      url: withoutParameter(url, "requireTLS"),
      // The password and the codes never go in clear: nodemailer would carry on without TLS when
      // the server offers no STARTTLS (or a man in the middle strips it).
      requireTLS: tlsRequired,
      // Silence is given up on early; a server that keeps talking without taking the message is
      // stopped by the deadline below (these timers restart with every line it sends).
      connectionTimeout: 10_000,
      greetingTimeout: 10_000,
      socketTimeout: 20_000,
    });
  return {
    isDevelopment: false,
    async send(message) {
      transport ??= loadTransport();
      // The signal closes the connection when it fires, whatever stage the exchange is at.
      await (await transport)
        .sendMail({ from, ...message, signal: AbortSignal.timeout(deadlineMs) })
        .catch((err: Error & { code?: string }) => {
          const why =
            tlsRequired && err.code === "ETLS"
              ? ` (${NO_STARTTLS})`
              : err.code === "EABORT"
                ? ` (the SMTP server did not take the message within ${deadlineMs / 1000} s)`
                : "";
          // The server's reply goes into the log: one that echoes the login (some do, on a failed AUTH) must not put the password there.
          // nodemailer's code (EAUTH, EENVELOPE…) stays, so a caller can say what failed in plain words.
          throw Object.assign(new Error(scrub(`${err.message}${why}`, [url])), { code: err.code });
        });
    },
  };
}

const NO_STARTTLS =
  "IMGPRESS_SMTP_URL is smtp://, so imgpress sends the password and the codes only after STARTTLS, which this server did not complete: " +
  "enable STARTTLS on it, use smtps://, or on a network you trust add ?requireTLS=false to the URL";

/**
 * Whether mail to `url` must upgrade to TLS before the login: an `smtp://` server other than a
 * loopback address (a local relay often has no certificate, and nothing leaves the machine; not
 * the name `localhost`, which nodemailer may ask DNS for), unless the URL opts out with
 * `requireTLS=false`. `smtps://` is TLS from the first byte.
 */
export function requiresStartTls(url: string): boolean {
  return startTlsPolicy(url) === "required";
}

// What `url` says of STARTTLS: nothing to say (smtps://, a loopback address), required, or opted out.
function startTlsPolicy(url: string): "not-needed" | "required" | "opted-out" {
  const parsed = URL.parse(url);
  if (parsed?.protocol !== "smtp:" || isLoopbackAddress(parsed.hostname)) return "not-needed";
  return parsed.searchParams.get("requireTLS")?.toLowerCase() === "false" ? "opted-out" : "required";
}

// `url` without query parameter `name` (every occurrence); unchanged when it has none.
function withoutParameter(url: string, name: string): string {
  const parsed = URL.parse(url);
  if (!parsed?.searchParams.has(name)) return url;
  parsed.searchParams.delete(name);
  return parsed.href;
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
      write(
        `\n----- e-mail (development transport, not sent) -----\nTo: ${message.to}\nSubject: ${message.subject}\n\n${message.text}\n-----\n`,
      );
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

/** The start-up warning for an `smtp://` URL that opted out of STARTTLS to another machine, or null. */
export function clearTextMailWarning(url: string): string | null {
  if (startTlsPolicy(url) !== "opted-out") return null;
  return "IMGPRESS_SMTP_URL has requireTLS=false: if the mail server offers no STARTTLS, the SMTP password and the one-time codes cross the network in clear";
}
