/**
 * An in-process SMTP sink for tests: a real `smtp-server` on 127.0.0.1 (any free port) that the
 * service's nodemailer transport really talks to. It records every accepted message, decoded far
 * enough to assert on: envelope and header recipients, subject, the text part and the HTML part.
 *
 * Refusal modes make it answer with a permanent 5xx, so the service's 502 MAIL_DELIVERY_FAILED
 * path can be exercised: "rcpt" refuses every recipient, "data" takes the whole message and then
 * refuses it (the refused message is kept in `rejected`, so a test can still see the code it carried).
 * "hold" takes each message in full and leaves the sender waiting for the answer until the mode
 * changes, as a stalled mail server does.
 */
import { SMTPServer, type SMTPServerDataStream, type SMTPServerSession } from "smtp-server";

/** How the sink answers: accept everything, refuse at RCPT TO or after DATA with a 5xx, or hold the answer to DATA. */
export type RejectMode = false | "rcpt" | "data" | "hold";

/** One message as the sink received it. */
export interface SinkMessage {
  /** Envelope recipients (RCPT TO), lower-cased. */
  envelopeTo: string[];
  /** Envelope sender (MAIL FROM). */
  envelopeFrom: string;
  /** Decoded `To:` header. */
  to: string;
  /** Decoded `From:` header. */
  from: string;
  /** Decoded `Subject:` header. */
  subject: string;
  /** The decoded text/plain part ("" when there is none). */
  text: string;
  /** The decoded text/html part ("" when there is none). */
  html: string;
  /** Top-level Content-Type, e.g. `multipart/alternative; boundary=…`. */
  contentType: string;
  /** The message exactly as transmitted (latin1 view of the bytes). */
  raw: string;
}

/** A running sink: its address, what it received, and control of its refusals. */
export interface SmtpSink {
  /** `smtp://127.0.0.1:<port>`, ready for IMGPRESS_SMTP_URL. */
  url: string;
  port: number;
  /** Accepted messages, oldest first. */
  messages: SinkMessage[];
  /** Messages refused in "data" mode (received in full, then answered with 554). */
  rejected: SinkMessage[];
  /** How many messages "hold" mode is holding unanswered. */
  held(): number;
  /** Resolves with the first accepted message (already received or arriving later) matching `predicate`. */
  waitFor(predicate: (m: SinkMessage) => boolean, timeoutMs?: number): Promise<SinkMessage>;
  /** Switches refusal on or off (`true` means "rcpt"); leaving "hold" accepts the held messages. */
  setReject(mode: RejectMode | boolean): void;
  close(): Promise<void>;
}

/** Starts a sink on 127.0.0.1 with a free port. */
export async function startSmtpSink(options: { reject?: RejectMode | boolean } = {}): Promise<SmtpSink> {
  let reject: RejectMode = normaliseMode(options.reject ?? false);
  const messages: SinkMessage[] = [];
  const rejected: SinkMessage[] = [];
  const waiters = new Set<{ predicate: (m: SinkMessage) => boolean; resolve: (m: SinkMessage) => void }>();
  const held: (() => void)[] = [];

  const refusal = (message: string, responseCode: number) => Object.assign(new Error(message), { responseCode });

  const server = new SMTPServer({
    authOptional: true,
    allowInsecureAuth: true,
    disabledCommands: ["STARTTLS"],
    logger: false,
    // A unit test should not wait for reverse DNS of 127.0.0.1.
    disableReverseLookup: true,
    onRcptTo(_address, _session, callback) {
      if (reject === "rcpt") return callback(refusal("5.1.1 Mailbox unavailable (test sink refuses recipients)", 550));
      callback();
    },
    onData(stream: SMTPServerDataStream, session: SMTPServerSession, callback) {
      const chunks: Buffer[] = [];
      stream.on("data", (chunk: Buffer) => chunks.push(chunk));
      stream.on("end", () => {
        let message: SinkMessage;
        try {
          message = parseMessage(Buffer.concat(chunks), session);
        } catch (err) {
          return callback(refusal(`5.6.0 test sink could not parse the message: ${(err as Error).message}`, 554));
        }
        if (reject === "data") {
          rejected.push(message);
          return callback(refusal("5.7.1 Message refused (test sink refuses data)", 554));
        }
        const accept = () => {
          messages.push(message);
          for (const waiter of [...waiters]) {
            if (waiter.predicate(message)) {
              waiters.delete(waiter);
              waiter.resolve(message);
            }
          }
          callback();
        };
        if (reject === "hold") held.push(accept);
        else accept();
      });
    },
  });

  const port = await new Promise<number>((resolve, rejectListen) => {
    server.server.once("error", rejectListen);
    server.listen(0, "127.0.0.1", () => {
      const address = server.server.address();
      if (address && typeof address === "object") resolve(address.port);
      else rejectListen(new Error("smtp sink: no port"));
    });
  });

  return {
    url: `smtp://127.0.0.1:${port}`,
    port,
    messages,
    rejected,
    held: () => held.length,
    waitFor(predicate, timeoutMs = 10_000) {
      const found = messages.find(predicate);
      if (found) return Promise.resolve(found);
      return new Promise<SinkMessage>((resolve, rejectWait) => {
        const waiter = {
          predicate,
          resolve: (m: SinkMessage) => {
            clearTimeout(timer);
            resolve(m);
          },
        };
        const timer = setTimeout(() => {
          waiters.delete(waiter);
          const seen = messages.map((m) => `${m.envelopeTo.join(",")}: ${m.subject}`).join("; ") || "none";
          rejectWait(new Error(`smtp sink: no matching message within ${timeoutMs} ms (received: ${seen})`));
        }, timeoutMs);
        waiters.add(waiter);
      });
    },
    setReject(mode) {
      reject = normaliseMode(mode);
      if (reject !== "hold") for (const accept of held.splice(0)) accept();
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

function normaliseMode(mode: RejectMode | boolean): RejectMode {
  return mode === true ? "rcpt" : mode;
}

/** Every run of exactly six digits (not part of a longer number) in `s`. */
export function sixDigitRuns(s: string): string[] {
  return s.match(/(?<!\d)\d{6}(?!\d)/g) ?? [];
}

/** The one-time code of an OTP mail: the single six-digit run of its text part. Throws otherwise. */
export function extractOtp(message: SinkMessage): string {
  const runs = sixDigitRuns(message.text);
  if (runs.length !== 1)
    throw new Error(`expected exactly one 6-digit code in the mail text, found ${runs.length}: ${message.text}`);
  return runs[0]!;
}

interface Part {
  headers: Map<string, string>;
  /** Body bytes as a latin1 string (one char per byte), still transfer-encoded. */
  body: string;
}

/** Decodes what nodemailer sends: a single part or nested multiparts, 7bit/8bit/quoted-printable/base64. */
export function parseMessage(bytes: Buffer, session?: SMTPServerSession): SinkMessage {
  const raw = bytes.toString("latin1");
  const root = splitPart(raw);
  const leaves: { type: string; text: string }[] = [];
  collectLeaves(root, leaves);
  const first = (type: string) => leaves.find((l) => l.type === type)?.text ?? "";
  const envelope = session?.envelope;
  return {
    envelopeTo: envelope ? envelope.rcptTo.map((a) => a.address.toLowerCase()) : [],
    envelopeFrom: envelope?.mailFrom ? envelope.mailFrom.address : "",
    to: decodeWords(root.headers.get("to") ?? ""),
    from: decodeWords(root.headers.get("from") ?? ""),
    subject: decodeWords(root.headers.get("subject") ?? ""),
    text: first("text/plain"),
    html: first("text/html"),
    contentType: root.headers.get("content-type") ?? "text/plain",
    raw,
  };
}

function splitPart(raw: string): Part {
  const match = /\r?\n\r?\n/.exec(raw);
  const head = match ? raw.slice(0, match.index) : raw;
  const body = match ? raw.slice(match.index + match[0].length) : "";
  const headers = new Map<string, string>();
  // Unfold continuation lines, then read "Name: value".
  for (const line of head.replace(/\r?\n[ \t]+/g, " ").split(/\r?\n/)) {
    const colon = line.indexOf(":");
    if (colon > 0) headers.set(line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim());
  }
  return { headers, body };
}

function collectLeaves(part: Part, out: { type: string; text: string }[]): void {
  const contentType = part.headers.get("content-type") ?? "text/plain";
  const type = contentType.split(";")[0]!.trim().toLowerCase();
  if (type.startsWith("multipart/")) {
    const boundary = param(contentType, "boundary");
    if (!boundary) throw new Error(`multipart without boundary: ${contentType}`);
    for (const child of splitMultipart(part.body, boundary)) collectLeaves(splitPart(child), out);
    return;
  }
  const encoding = (part.headers.get("content-transfer-encoding") ?? "7bit").toLowerCase();
  const charset = (param(contentType, "charset") ?? "utf-8").toLowerCase();
  out.push({ type, text: decodeBody(part.body, encoding, charset) });
}

function splitMultipart(body: string, boundary: string): string[] {
  const delimiter = `--${boundary}`;
  const parts: string[] = [];
  const lines = body.split(/\r?\n/);
  let current: string[] | null = null;
  for (const line of lines) {
    if (line === `${delimiter}--`) break;
    if (line === delimiter) {
      if (current) parts.push(current.join("\r\n"));
      current = [];
    } else if (current) current.push(line);
  }
  if (current) parts.push(current.join("\r\n"));
  return parts;
}

function param(headerValue: string, name: string): string | undefined {
  const match = new RegExp(`;\\s*${name}\\s*=\\s*(?:"([^"]*)"|([^;\\s]*))`, "i").exec(headerValue);
  return match ? (match[1] ?? match[2]) : undefined;
}

function decodeBody(body: string, encoding: string, charset: string): string {
  let bytes: Buffer;
  if (encoding === "base64") bytes = Buffer.from(body.replace(/\s+/g, ""), "base64");
  else if (encoding === "quoted-printable") bytes = decodeQuotedPrintable(body);
  else bytes = Buffer.from(body, "latin1");
  return new TextDecoder(charset).decode(bytes).replace(/\r\n/g, "\n").replace(/\n$/, "");
}

/** RFC 2045 quoted-printable: soft line breaks ("=" at line end) vanish, "=XX" is one byte. */
function decodeQuotedPrintable(body: string): Buffer {
  const joined = body.replace(/=\r?\n/g, "");
  const bytes: number[] = [];
  for (let i = 0; i < joined.length; i++) {
    const c = joined[i]!;
    if (c === "=" && /^[0-9A-Fa-f]{2}$/.test(joined.slice(i + 1, i + 3))) {
      bytes.push(parseInt(joined.slice(i + 1, i + 3), 16));
      i += 2;
    } else bytes.push(c.charCodeAt(0) & 0xff);
  }
  return Buffer.from(bytes);
}

/** RFC 2047 encoded words in headers (`=?UTF-8?Q?…?=`, `=?UTF-8?B?…?=`). */
function decodeWords(value: string): string {
  return value
    .replace(/(\?=)\s+(=\?)/g, "$1$2") // whitespace between adjacent encoded words is not content
    .replace(/=\?([^?]+)\?([QqBb])\?([^?]*)\?=/g, (_all, charset: string, kind: string, data: string) => {
      const bytes =
        kind.toUpperCase() === "B" ? Buffer.from(data, "base64") : decodeQuotedPrintable(data.replace(/_/g, " "));
      return new TextDecoder(charset.toLowerCase()).decode(bytes);
    });
}
