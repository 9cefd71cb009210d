/**
 * An SMTP server that accepts the TCP connection and then never answers, or drops it, or greets with
 * a refusal: request-otp answers 502 MAIL_DELIVERY_FAILED within a bounded time (the transport's
 * 10 s greeting timeout for the silent one), leaves no usable code, and conversions go on meanwhile.
 * (Refusals at RCPT/DATA and a closed port are in test/api/issuance/issuance.test.ts.)
 */
import { afterEach, describe, expect, test } from "bun:test";
import { createServer, type Server, type Socket } from "node:net";
import { networkInterfaces } from "node:os";
import { clearTextMailWarning, requiresStartTls, smtpMailer } from "../../../src/core/mail/mailer.ts";
import { scrub } from "../../../src/core/redact.ts";
import { otpCodes } from "../../../src/data/db/schema.ts";
import { convertForm, postBearer } from "../../support/convert-helpers.ts";
import { createHarness, expectError, type Harness } from "../../support/harness.ts";
import * as img from "../../support/images.ts";

type Behaviour = "silent" | "drop" | "refuse" | "echo-login" | "trickle";

/** What the "echo-login" server quotes back: the password of a failed AUTH PLAIN, as some servers do. */
const SMTP_PASSWORD = "S3cret-Smtp-Pass";

/** A TCP server on `host` (127.0.0.1 by default) that misbehaves as an SMTP server would; `lines` records what clients said. */
async function badSmtp(
  behaviour: Behaviour,
  host = "127.0.0.1",
): Promise<{ url: string; lines: string[]; open: () => number; close: () => Promise<void> }> {
  const sockets = new Set<Socket>();
  const lines: string[] = [];
  const server: Server = createServer((socket) => {
    sockets.add(socket);
    socket.on("error", () => {});
    socket.on("close", () => sockets.delete(socket));
    if (behaviour === "drop") socket.destroy();
    if (behaviour === "refuse") socket.end("554 5.3.2 no service here\r\n");
    if (behaviour === "echo-login") echoLogin(socket, lines);
    if (behaviour === "trickle") trickle(socket);
    // "silent": hold the connection open and say nothing.
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  const port = (server.address() as { port: number }).port;
  return {
    url: behaviour === "echo-login" ? `smtp://mailer:${SMTP_PASSWORD}@${host}:${port}` : `smtp://${host}:${port}`,
    lines,
    open: () => sockets.size,
    close: () => {
      for (const s of sockets) s.destroy();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

// Offers AUTH but no STARTTLS, and refuses the login quoting what it was sent, as sent (base64) and decoded.
function echoLogin(socket: Socket, lines: string[]): void {
  socket.write("220 echo.test ESMTP\r\n");
  let buffered = "";
  socket.on("data", (chunk) => {
    buffered += chunk.toString("latin1");
    for (let end = buffered.indexOf("\r\n"); end >= 0; end = buffered.indexOf("\r\n")) {
      const line = buffered.slice(0, end);
      buffered = buffered.slice(end + 2);
      lines.push(line);
      if (/^(EHLO|HELO)/i.test(line)) socket.write("250-echo.test\r\n250 AUTH PLAIN\r\n");
      else if (/^AUTH PLAIN /i.test(line))
        socket.write(
          `535 5.7.8 login refused for ${line.slice(11)} (${Buffer.from(line.slice(11), "base64").toString("latin1").replaceAll("\0", " ")})\r\n`,
        );
      else if (/^QUIT/i.test(line)) socket.end("221 bye\r\n");
      else socket.write("502 5.5.1 not here\r\n");
    }
  });
}

// Greets, then answers EHLO with a continuation line every 200 ms and never its last line: the
// transport's idle timers restart with each one.
function trickle(socket: Socket): void {
  socket.write("220 trickle.test ESMTP\r\n");
  socket.once("data", () => {
    const timer = setInterval(() => socket.write("250-trickle.test still thinking\r\n"), 200);
    socket.on("close", () => clearInterval(timer));
  });
}

let h: Harness | undefined;
let smtp: Awaited<ReturnType<typeof badSmtp>> | undefined;
afterEach(async () => {
  await h?.close();
  await smtp?.close();
});

describe("an SMTP server that misbehaves", () => {
  test.each(["silent", "drop", "refuse"] as const)(
    "%s: 502 MAIL_DELIVERY_FAILED, no usable code, conversions unaffected",
    async (behaviour) => {
      smtp = await badSmtp(behaviour);
      h = await createHarness({ env: { IMGPRESS_SMTP_URL: smtp.url } });
      const keys = await h.services.keys.issue("known@example.com", "");
      const mail = h.requestOtp({ email: "owner@example.com" });
      // While the code request waits on the mail server, a conversion is answered.
      const converted = await postBearer(h, keys.apiKey, await convertForm(await img.photo(320, 240)));
      expect(converted.status).toBe(200);
      expectError(await mail, 502, "MAIL_DELIVERY_FAILED");
      expect(await h.store.db.select().from(otpCodes)).toEqual([]);
      // Bounded by the test's 30 s limit: the transport gives up on a silent server after its 10 s greeting timeout.
    },
    30_000,
  );
});

describe("a mail server that keeps talking without taking the message", () => {
  test("the send fails at its deadline and the connection is closed", async () => {
    smtp = await badSmtp("trickle");
    const started = Date.now();
    const sent = smtpMailer(smtp.url, "imgpress@test.invalid", 1_500).send({
      to: "owner@example.com",
      subject: "s",
      text: "t",
      html: "<p>t</p>",
    });
    await expect(sent).rejects.toThrow("the SMTP server did not take the message within 1.5 s");
    expect(Date.now() - started).toBeLessThan(5_000);
    // Without the deadline the exchange went on for as long as the server talked (minutes in a review).
    const server = smtp;
    for (let i = 0; i < 100 && server.open() > 0; i++) await Bun.sleep(100);
    expect(server.open()).toBe(0);
  });
});

describe("a mail server whose refusal quotes the login", () => {
  test("the log line names the refusal without the SMTP password", async () => {
    smtp = await badSmtp("echo-login");
    h = await createHarness({ env: { IMGPRESS_SMTP_URL: smtp.url } });
    expectError(await h.requestOtp({ email: "owner@example.com" }), 502, "MAIL_DELIVERY_FAILED");
    const failure = h.logs.map((l) => JSON.parse(l)).find((l) => l.msg === "otp mail delivery failed");
    // The server's words are kept (they say why), its quote of the password is not.
    expect(failure?.error).toContain("login refused for");
    expect(failure?.error).toContain("******");
    expect(h.logs.join("\n")).not.toContain(SMTP_PASSWORD);
    expect(h.logs.join("\n")).not.toContain(Buffer.from(`\0mailer\0${SMTP_PASSWORD}`).toString("base64"));
    expect(smtp.lines.some((l) => l.includes(Buffer.from(`\0mailer\0${SMTP_PASSWORD}`).toString("base64")))).toBe(true);
  });

  test("the password is masked as an SMTP login sends it too (base64: AUTH LOGIN alone, AUTH PLAIN with the user)", () => {
    const url = "smtp://mail%40example.com:p%C3%A4ss%2Fw0rd@mail.example.com:587";
    const b64 = (text: string) => Buffer.from(text).toString("base64");
    const quoted = `535 refused: ${b64("päss/w0rd")} ${b64("\0mail@example.com\0päss/w0rd")} päss/w0rd p%C3%A4ss%2Fw0rd`;
    expect(scrub(quoted, [url])).toBe("535 refused: ****** ****** ****** ******");
  });
});

/** This machine's first address that is not a loopback one, or undefined. */
const lanAddress = Object.values(networkInterfaces())
  .flat()
  .find((a) => a && a.family === "IPv4" && !a.internal)?.address;

describe("smtp:// to another machine requires STARTTLS before the login", () => {
  test("requiresStartTls: not for this machine's loopback, nor smtps://, nor when the URL opts out", () => {
    expect(requiresStartTls("smtp://u:p@mail.example.com:587")).toBe(true);
    expect(requiresStartTls("smtp://u:p@192.168.1.5:25")).toBe(true);
    expect(requiresStartTls("smtp://u:p@127.0.0.1:25")).toBe(false);
    expect(requiresStartTls("smtp://[::1]:25")).toBe(false);
    // A URL of the smtp: scheme keeps its host as written: every spelling of a loopback address counts.
    for (const host of ["127.1", "127.0.0.2", "127.0.0.1.", "[::ffff:127.0.0.1]", "[0:0:0:0:0:0:0:1]"])
      expect({ host, required: requiresStartTls(`smtp://${host}:25`) }).toEqual({ host, required: false });
    // No name does, localhost included: nodemailer may ask DNS for it before the hosts file.
    for (const host of [
      "localhost",
      "LOCALHOST",
      "localhost.",
      "128.0.0.1",
      "localhost.example.com",
      "[::2]",
      "[::ffff:10.0.0.1]",
    ])
      expect({ host, required: requiresStartTls(`smtp://${host}:25`) }).toEqual({ host, required: true });
    // Only requireTLS=false opts out (nodemailer would read any falsy spelling as one).
    for (const value of ["0", "", "no", "off"])
      expect({ value, required: requiresStartTls(`smtp://u:p@192.168.1.5:25?requireTLS=${value}`) }).toEqual({
        value,
        required: true,
      });
    expect(requiresStartTls("smtp://u:p@192.168.1.5:25?requireTLS=FALSE")).toBe(false);
    expect(requiresStartTls("smtps://u:p@mail.example.com:465")).toBe(false);
    expect(requiresStartTls("smtp://u:p@192.168.1.5:25?requireTLS=false")).toBe(false);
    expect(clearTextMailWarning("smtp://u:p@192.168.1.5:25?requireTLS=false")).toContain("cross the network in clear");
    expect(clearTextMailWarning("smtp://u:p@192.168.1.5:25")).toBeNull();
    expect(clearTextMailWarning("smtp://127.0.0.1:25?requireTLS=false")).toBeNull();
  });

  test.skipIf(!lanAddress)(
    "a server that offers no STARTTLS never sees the login: 502, and the log says why and how to fix it",
    async () => {
      smtp = await badSmtp("echo-login", lanAddress);
      h = await createHarness({ env: { IMGPRESS_SMTP_URL: smtp.url } });
      expectError(await h.requestOtp({ email: "owner@example.com" }), 502, "MAIL_DELIVERY_FAILED");
      expect(smtp.lines.some((l) => /^AUTH/i.test(l))).toBe(false);
      expect(smtp.lines.some((l) => /^STARTTLS/i.test(l))).toBe(true);
      const failure = h.logs.map((l) => JSON.parse(l)).find((l) => l.msg === "otp mail delivery failed");
      expect(failure?.error).toContain(
        "imgpress sends the password and the codes only after STARTTLS, which this server did not complete",
      );
      expect(h.logs.join("\n")).not.toContain(SMTP_PASSWORD);
    },
  );

  test.skipIf(!lanAddress)(
    "?requireTLS=0 does not opt out (nodemailer alone would read it so): the login is still not sent",
    async () => {
      smtp = await badSmtp("echo-login", lanAddress);
      h = await createHarness({ env: { IMGPRESS_SMTP_URL: `${smtp.url}?requireTLS=0` } });
      expectError(await h.requestOtp({ email: "owner@example.com" }), 502, "MAIL_DELIVERY_FAILED");
      expect(smtp.lines.some((l) => /^AUTH/i.test(l))).toBe(false);
    },
  );

  test.skipIf(!lanAddress)("with ?requireTLS=false the operator's choice holds: the login is sent", async () => {
    smtp = await badSmtp("echo-login", lanAddress);
    h = await createHarness({ env: { IMGPRESS_SMTP_URL: `${smtp.url}?requireTLS=false` } });
    expectError(await h.requestOtp({ email: "owner@example.com" }), 502, "MAIL_DELIVERY_FAILED");
    expect(smtp.lines.some((l) => /^AUTH PLAIN/i.test(l))).toBe(true);
  });
});
