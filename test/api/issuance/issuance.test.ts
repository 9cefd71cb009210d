/**
 * The passwordless credential flow (POST /v1/plugin/auth/request-otp and /verify-otp) against the
 * real app, a real libSQL file, the real SMTP mailer and an in-process SMTP sink, with a hand-driven
 * clock. Every rule of issue 2's "decisions" list has a test here; see test/e2e for the same flow
 * over a real HTTPS socket.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { eq } from "drizzle-orm";
import { otpCodes } from "../../../src/data/db/schema.ts";
import { createHarness, expectError, type Harness, type TestResponse, wrongCode } from "../../support/harness.ts";
import { holdsFor } from "../../support/ops.ts";
import { closedPort } from "../../support/ports.ts";
import { extractOtp } from "../../support/smtp.ts";

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;

const REQUEST = "/v1/plugin/auth/request-otp";
const VERIFY = "/v1/plugin/auth/verify-otp";

let h: Harness;
beforeEach(async () => {
  h = await createHarness();
});
afterEach(async () => {
  await h.close();
});

/** A harness with extra environment, closed with the default one. */
async function reharness(env: Record<string, string>): Promise<Harness> {
  await h.close();
  h = await createHarness({ env });
  return h;
}

/** The pending code row of an address, if any (read straight from the database). */
async function pendingCodeRow(email: string) {
  const rows = await h.store.db.select().from(otpCodes).where(eq(otpCodes.email, email));
  return rows[0];
}

/** Sends `count` verify requests with fresh random wrong codes and returns the responses. */
async function verifyMany(count: number, email: string, ip?: string): Promise<TestResponse[]> {
  const out: TestResponse[] = [];
  for (let i = 0; i < count; i++) out.push(await h.verifyOtp({ email, otp: "000000" }, { ip }));
  return out;
}

describe("request-otp → e-mail → verify-otp", () => {
  test("answers 200 with the spec's bodies and e-mails a 6-digit code", async () => {
    const res = await h.requestOtp({ email: "owner@example.com", site_url: "https://blog.example.com" });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ status: "success", message: expect.any(String), expires_in: 900 });

    const mail = await h.smtp.waitFor((m) => m.to === "owner@example.com");
    expect(mail.subject).toBe("Your imgpress sign-in code");
    expect(mail.text).not.toContain("dashboard");
    expect(mail.contentType).toStartWith("multipart/alternative");
    const code = extractOtp(mail);
    expect(code).toMatch(/^\d{6}$/);

    const verified = await h.verifyOtp({ email: "owner@example.com", otp: code, site_url: "https://blog.example.com" });
    expect(verified.status).toBe(200);
    expect(verified.body).toEqual({
      status: "success",
      api_key: expect.any(String),
      secret_key: expect.any(String),
      message: expect.any(String),
    });
    // Recognisable prefixes; at least 256 bits each (43 base64url characters).
    expect(verified.body.api_key).toMatch(/^imp_[A-Za-z0-9_-]{43,}$/);
    expect(verified.body.secret_key).toMatch(/^imps_[A-Za-z0-9_-]{43,}$/);
  });

  test("e-mails the owner a notice naming the key by prefix only", async () => {
    const keys = await h.issueKey("owner@example.com");
    const notice = await h.smtp.waitFor((m) => m.to === "owner@example.com" && !/code/i.test(m.subject));
    const [row] = await h.services.keys.list({ email: "owner@example.com" });
    expect(notice.text).toContain(row!.keyPrefix);
    for (const body of [notice.text, notice.html, notice.raw]) {
      expect(body).not.toContain(keys.api_key);
      expect(body).not.toContain(keys.secret_key);
    }
  });

  test("a code is bound to its address", async () => {
    const { code } = await h.obtainOtp("first@example.com");
    expectError(await h.verifyOtp({ email: "second@example.com", otp: code }), 401, "INVALID_OTP");
    expect((await h.verifyOtp({ email: "first@example.com", otp: code })).status).toBe(200);
  });

  test("an address with no pending code gets the same 401 as a wrong code", async () => {
    expectError(await h.verifyOtp({ email: "nobody@example.com", otp: "123456" }), 401, "INVALID_OTP");
  });

  test("never logs the code, the api_key or the secret_key", async () => {
    const { code } = await h.obtainOtp("owner@example.com");
    await h.verifyOtp({ email: "owner@example.com", otp: wrongCode(code) });
    const res = await h.verifyOtp({ email: "owner@example.com", otp: code });
    expect(res.status).toBe(200);
    const log = h.logs.join("\n");
    expect(h.logs.length).toBeGreaterThan(0);
    expect(log).not.toMatch(new RegExp(`(?<![0-9A-Za-z])${code}(?![0-9A-Za-z])`));
    expect(log).not.toContain(res.body.api_key);
    expect(log).not.toContain(res.body.secret_key);
  });
});

describe("code lifetime", () => {
  test.each([
    { label: "1 s before the end of its 900 s", after: 899 * SECOND, status: 200 },
    { label: "just after 900 s", after: 900 * SECOND + 1, status: 401 },
    { label: "an hour later", after: HOUR, status: 401 },
  ])("verifying $label answers $status", async ({ after, status }) => {
    const { code } = await h.obtainOtp("owner@example.com");
    h.clock.advance(after);
    const res = await h.verifyOtp({ email: "owner@example.com", otp: code });
    if (status === 200) expect(res.status).toBe(200);
    else expectError(res, 401, "INVALID_OTP");
  });

  test("a code works once", async () => {
    const { code } = await h.obtainOtp("owner@example.com");
    expect((await h.verifyOtp({ email: "owner@example.com", otp: code })).status).toBe(200);
    expectError(await h.verifyOtp({ email: "owner@example.com", otp: code }), 401, "INVALID_OTP");
  });

  test("a new request replaces the previous code", async () => {
    const first = await h.obtainOtp("owner@example.com");
    h.clock.advance(61 * SECOND); // past the 1-per-minute limit of one address
    const second = await h.obtainOtp("owner@example.com");
    if (first.code === second.code) return; // one chance in a million: nothing to distinguish
    expectError(await h.verifyOtp({ email: "owner@example.com", otp: first.code }), 401, "INVALID_OTP");
    expect((await h.verifyOtp({ email: "owner@example.com", otp: second.code })).status).toBe(200);
  });

  test("five wrong guesses burn the code: the fifth answers 429, then even the right code is refused", async () => {
    const { code } = await h.obtainOtp("owner@example.com");
    for (let i = 1; i <= 4; i++)
      expectError(await h.verifyOtp({ email: "owner@example.com", otp: wrongCode(code, i) }), 401, "INVALID_OTP");
    expectError(await h.verifyOtp({ email: "owner@example.com", otp: wrongCode(code, 5) }), 429, "TOO_MANY_ATTEMPTS");
    expectError(await h.verifyOtp({ email: "owner@example.com", otp: code }), 401, "INVALID_OTP");
  });

  test("after a burnt code, a new request gives a fresh, working code", async () => {
    const { code } = await h.obtainOtp("owner@example.com");
    for (let i = 1; i <= 5; i++) await h.verifyOtp({ email: "owner@example.com", otp: wrongCode(code, i) });
    h.clock.advance(61 * SECOND);
    const fresh = await h.obtainOtp("owner@example.com");
    expect((await h.verifyOtp({ email: "owner@example.com", otp: fresh.code })).status).toBe(200);
  });

  test("four wrong guesses still leave the right code usable", async () => {
    const { code } = await h.obtainOtp("owner@example.com");
    for (let i = 1; i <= 4; i++)
      expectError(await h.verifyOtp({ email: "owner@example.com", otp: wrongCode(code, i) }), 401, "INVALID_OTP");
    expect((await h.verifyOtp({ email: "owner@example.com", otp: code })).status).toBe(200);
  });

  test("the code is stored only as a keyed hash", async () => {
    const { code } = await h.obtainOtp("owner@example.com");
    const row = await pendingCodeRow("owner@example.com");
    expect(row).toBeDefined();
    expect(row!.codeHash).toMatch(/^[0-9a-f]{64}$/);
    expect(JSON.stringify(row)).not.toContain(code);
    // Not a plain (unkeyed) SHA-256 of the code or of "email\ncode" either.
    const plain = new Bun.CryptoHasher("sha256").update(code).digest("hex");
    const withEmail = new Bun.CryptoHasher("sha256").update(`owner@example.com\n${code}`).digest("hex");
    expect([plain, withEmail]).not.toContain(row!.codeHash);
  });

  test("concurrent verifications of one code: exactly one wins", async () => {
    const { code } = await h.obtainOtp("owner@example.com");
    const results = await Promise.all(
      Array.from({ length: 5 }, () => h.verifyOtp({ email: "owner@example.com", otp: code })),
    );
    const statuses = results.map((r) => r.status).sort();
    expect(statuses).toEqual([200, 401, 401, 401, 401]);
    for (const r of results.filter((r) => r.status !== 200)) expectError(r, 401, "INVALID_OTP");
    expect(await h.services.keys.list({ email: "owner@example.com" })).toHaveLength(1);
  });
});

describe("rate limits", () => {
  test("one request per address per 60 s, with Retry-After", async () => {
    expect((await h.requestOtp({ email: "owner@example.com" })).status).toBe(200);
    h.clock.advance(10 * SECOND);
    const limited = await h.requestOtp({ email: "owner@example.com" });
    expectError(limited, 429, "RATE_LIMITED");
    expect(limited.headers.get("retry-after")).toBe("50");
    h.clock.advance(50 * SECOND + 1);
    expect((await h.requestOtp({ email: "owner@example.com" })).status).toBe(200);
  });

  test("concurrent requests for one address: exactly one is let through", async () => {
    const results = await Promise.all(Array.from({ length: 5 }, () => h.requestOtp({ email: "owner@example.com" })));
    expect(results.map((r) => r.status).sort()).toEqual([200, 429, 429, 429, 429]);
    expect(h.smtp.messages).toHaveLength(1);
  });

  test("a refused request neither sends a mail nor replaces the pending code", async () => {
    const { code } = await h.obtainOtp("owner@example.com");
    expectError(await h.requestOtp({ email: "owner@example.com" }), 429, "RATE_LIMITED");
    expect(h.smtp.messages).toHaveLength(1);
    expect((await h.verifyOtp({ email: "owner@example.com", otp: code })).status).toBe(200);
  });

  test("the per-address limit does not touch other addresses", async () => {
    expect((await h.requestOtp({ email: "one@example.com" })).status).toBe(200);
    expect((await h.requestOtp({ email: "two@example.com" })).status).toBe(200);
  });

  test("five requests per address per hour, with Retry-After", async () => {
    for (let i = 0; i < 5; i++) {
      expect((await h.requestOtp({ email: "owner@example.com" })).status).toBe(200);
      h.clock.advance(61 * SECOND);
    }
    // Now 305 s after the first request: the hour holds five.
    const limited = await h.requestOtp({ email: "owner@example.com" });
    expectError(limited, 429, "RATE_LIMITED");
    expect(limited.headers.get("retry-after")).toBe(String(3600 - 305));
    h.clock.advance((3600 - 305) * SECOND + 1);
    expect((await h.requestOtp({ email: "owner@example.com" })).status).toBe(200);
  });

  test("twenty requests per client IP per hour", async () => {
    for (let i = 0; i < 20; i++)
      expect((await h.requestOtp({ email: `user${i}@example.com` }, { ip: "198.51.100.7" })).status).toBe(200);
    const limited = await h.requestOtp({ email: "user20@example.com" }, { ip: "198.51.100.7" });
    expectError(limited, 429, "RATE_LIMITED");
    expect(limited.headers.get("retry-after")).toBe("3600");
    // Another client is not affected.
    expect((await h.requestOtp({ email: "user21@example.com" }, { ip: "198.51.100.8" })).status).toBe(200);
  });

  test("an IPv6 client counts by its /64: changing the address within it does not renew the quota", async () => {
    for (let i = 0; i < 20; i++)
      expect(
        (await h.requestOtp({ email: `v6-${i}@example.com` }, { ip: `2001:db8:1:2::${(i + 1).toString(16)}` })).status,
      ).toBe(200);
    expectError(
      await h.requestOtp({ email: "v6-20@example.com" }, { ip: "2001:db8:1:2:ffff:ffff:ffff:ffff" }),
      429,
      "RATE_LIMITED",
    );
    // The next /64 is another network.
    expect((await h.requestOtp({ email: "v6-21@example.com" }, { ip: "2001:db8:1:3::1" })).status).toBe(200);
  });

  test("requests refused for the e-mail address do not use up the IP address's quota", async () => {
    const ip = { ip: "198.51.100.9" };
    expect((await h.requestOtp({ email: "retry@example.com" }, ip)).status).toBe(200);
    // A client retrying in a loop: every retry is refused by the per-address limit…
    for (let i = 0; i < 25; i++)
      expectError(await h.requestOtp({ email: "retry@example.com" }, ip), 429, "RATE_LIMITED");
    // …and the IP address still has 19 requests of its 20 for other addresses.
    for (let i = 0; i < 19; i++) expect((await h.requestOtp({ email: `site${i}@example.com` }, ip)).status).toBe(200);
    const limited = await h.requestOtp({ email: "site19@example.com" }, ip);
    expectError(limited, 429, "RATE_LIMITED");
    expect(limited.body.message).toContain("IP address");
  });

  test("thirty verifications per client IP per 5 minutes", async () => {
    for (const res of await verifyMany(30, "owner@example.com", "198.51.100.7")) expectError(res, 401, "INVALID_OTP");
    const limited = await h.verifyOtp({ email: "owner@example.com", otp: "000000" }, { ip: "198.51.100.7" });
    expectError(limited, 429, "RATE_LIMITED");
    expect(limited.headers.get("retry-after")).toBe("300");
    expectError(
      await h.verifyOtp({ email: "owner@example.com", otp: "000000" }, { ip: "198.51.100.8" }),
      401,
      "INVALID_OTP",
    );
    h.clock.advance(5 * MINUTE + 1);
    expectError(
      await h.verifyOtp({ email: "owner@example.com", otp: "000000" }, { ip: "198.51.100.7" }),
      401,
      "INVALID_OTP",
    );
  });
});

describe("wrong codes per address over a day", () => {
  // Requests 20 codes (12 min 10 s apart, within 5 per hour for the address) and spends each code's 5 guesses wrong.
  async function guessOut(email: string): Promise<void> {
    for (let round = 0; round < 20; round++) {
      h.clock.advance(12 * MINUTE + 10 * SECOND);
      const ip = `198.51.100.${round + 1}`;
      const { code } = await h.obtainOtp(email, undefined, { ip });
      for (let i = 0; i < 5; i++)
        expect((await h.verifyOtp({ email, otp: wrongCode(code, i + 1) }, { ip })).status).toBe(i < 4 ? 401 : 429);
    }
  }

  test("after 100 wrong codes in 24 hours, no code of that address is checked nor sent until they age out; other addresses are not affected", async () => {
    const email = "target@example.com";
    await guessOut(email);
    h.clock.advance(13 * MINUTE);
    const refused = await h.requestOtp({ email }, { ip: "203.0.113.70" });
    expectError(refused, 429, "RATE_LIMITED");
    expect(refused.body.message).toStartWith(
      "Too many wrong codes were tried for this e-mail address in the last 24 hours",
    );
    // The first wrong codes are a day old 24 h after the first round: Retry-After says when.
    const wait = Number(refused.headers.get("retry-after"));
    expect(wait).toBeGreaterThan(19 * 3600);
    expect(wait).toBeLessThanOrEqual(20 * 3600);
    // Not TOO_MANY_ATTEMPTS, whose advice (request a new code) would only be refused: wait, as Retry-After says.
    const checked = await h.verifyOtp({ email, otp: "123456" }, { ip: "203.0.113.70" });
    expectError(checked, 429, "RATE_LIMITED");
    expect(Number(checked.headers.get("retry-after"))).toBe(wait);
    expect((await h.requestOtp({ email: "bystander@example.com" }, { ip: "203.0.113.71" })).status).toBe(200);
    // The minute's maintenance keeps these events for the day (other buckets for an hour).
    await h.services.limiter.prune(HOUR, { prefix: "wrong-code:", windowMs: 24 * HOUR });
    expectError(await h.requestOtp({ email }, { ip: "203.0.113.72" }), 429, "RATE_LIMITED");
    h.clock.advance(wait * SECOND);
    const { code } = await h.obtainOtp(email, undefined, { ip: "203.0.113.73" });
    expect((await h.verifyOtp({ email, otp: code }, { ip: "203.0.113.73" })).status).toBe(200);
  }, 60_000);

  test("guesses at an address with no pending code are not counted: they cannot lock it out", async () => {
    const email = "nocode@example.com";
    for (let i = 0; i < 120; i++) {
      if (i % 30 === 0) h.clock.advance(5 * MINUTE + SECOND);
      expect((await h.verifyOtp({ email, otp: "123456" }, { ip: "203.0.113.80" })).status).toBe(401);
    }
    const { code } = await h.obtainOtp(email);
    expect((await h.verifyOtp({ email, otp: code })).status).toBe(200);
  });

  test("staff sign-in has the same day's budget, counted apart from key issuance", async () => {
    await reharness({ IMGPRESS_STAFF_EMAILS: "boss@example.com" });
    const email = "boss@example.com";
    for (let round = 0; round < 20; round++) {
      h.clock.advance(12 * MINUTE + 10 * SECOND);
      const ip = `198.51.100.${round + 1}`;
      await h.services.staffSignIn.requestCode(email, ip);
      await h.smtp.waitFor(
        (m) =>
          m.envelopeTo.includes(email) &&
          h.smtp.messages.filter((x) => x.envelopeTo.includes(email)).length === round + 1,
      );
      for (let i = 0; i < 5; i++)
        await h.services.staffSignIn.verify({ email, code: "000000", ip, userAgent: "test" }).catch(() => {});
    }
    h.clock.advance(13 * MINUTE);
    await expect(h.services.staffSignIn.requestCode(email, "203.0.113.90")).rejects.toThrow(
      "Too many wrong codes were tried for this e-mail address",
    );
    // Key issuance for the same address has its own budget.
    expect((await h.requestOtp({ email }, { ip: "203.0.113.91" })).status).toBe(200);
  }, 60_000);
});

describe("allowlist (IMGPRESS_ALLOWED_EMAILS)", () => {
  test.each([
    { email: "boss@corp.example", allowed: true },
    { email: "Boss@CORP.example", allowed: true },
    { email: "dev@team.example", allowed: true },
    { email: "other@team.example", allowed: true },
    { email: "other@corp.example", allowed: false },
    { email: "dev@sub.team.example", allowed: false },
    { email: "dev@team.example.evil.test", allowed: false },
    { email: "dev@notteam.example", allowed: false },
  ])("$email → allowed: $allowed", async ({ email, allowed }) => {
    await reharness({ IMGPRESS_ALLOWED_EMAILS: "boss@corp.example, @team.example" });
    const res = await h.requestOtp({ email });
    if (allowed) {
      expect(res.status).toBe(200);
      expect(h.smtp.messages).toHaveLength(1);
    } else {
      expectError(res, 403, "EMAIL_NOT_ALLOWED");
      expect(h.smtp.messages).toHaveLength(0);
    }
  });
});

describe("allowlist: probing it", () => {
  test("refused addresses count against the client's hourly quota: the list cannot be tested at full speed", async () => {
    await reharness({ IMGPRESS_ALLOWED_EMAILS: "boss@corp.example" });
    const ip = "203.0.113.50";
    for (let i = 0; i < 20; i++)
      expectError(await h.requestOtp({ email: `guess${i}@corp.example` }, { ip }), 403, "EMAIL_NOT_ALLOWED");
    const limited = await h.requestOtp({ email: "boss@corp.example" }, { ip });
    expectError(limited, 429, "RATE_LIMITED");
    expect(limited.body.message).toStartWith("Too many code requests from this IP address.");
    // Another client is not affected.
    expect((await h.requestOtp({ email: "boss@corp.example" }, { ip: "198.51.100.60" })).status).toBe(200);
  });

  test("verify-otp answers an address off the list without a code as a wrong code for a listed one: it tells nothing of the list", async () => {
    await reharness({ IMGPRESS_ALLOWED_EMAILS: "boss@corp.example" });
    const listed = await h.verifyOtp({ email: "boss@corp.example", otp: "123456" });
    const unlisted = await h.verifyOtp({ email: "guess@corp.example", otp: "123456" });
    expectError(listed, 401, "INVALID_OTP");
    expect({ status: unlisted.status, body: unlisted.body }).toEqual({ status: listed.status, body: listed.body });
  });
});

describe("allowlist: an address taken off it after its code was sent", () => {
  test("gets no key for that code (403 EMAIL_NOT_ALLOWED, the code left as it was); put back, the code still works", async () => {
    const dir = await mkdtemp(join(tmpdir(), "imgpress-allowlist-"));
    const database = { IMGPRESS_DATABASE_URL: `file:${join(dir, "imgpress.db")}` };
    try {
      await reharness({ ...database, IMGPRESS_ALLOWED_EMAILS: "@team.example" });
      expect((await h.requestOtp({ email: "dev@team.example" })).status).toBe(200);
      const otp = extractOtp(await h.smtp.waitFor((m) => m.envelopeTo.includes("dev@team.example")));
      await reharness({ ...database, IMGPRESS_ALLOWED_EMAILS: "boss@corp.example" });
      expectError(await h.verifyOtp({ email: "dev@team.example", otp }), 403, "EMAIL_NOT_ALLOWED");
      await reharness({ ...database, IMGPRESS_ALLOWED_EMAILS: "@team.example" });
      const verified = await h.verifyOtp({ email: "dev@team.example", otp });
      expect(verified.status).toBe(200);
      expect(verified.body.api_key).toStartWith("imp_");
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe("allowlist with an internationalised domain", () => {
  // The address is normalised to punycode before the allowlist check, so the allowlist entry must
  // be compared in the same form; an operator naturally writes the domain as people read it.
  test.each([
    { entry: "@bücher.de", email: "owner@bücher.de" },
    { entry: "@bücher.de", email: "owner@xn--bcher-kva.de" },
    { entry: "@xn--bcher-kva.de", email: "owner@bücher.de" },
    { entry: "owner@bücher.de", email: "Owner@BÜCHER.de" },
  ])("entry $entry admits $email", async ({ entry, email }) => {
    await reharness({ IMGPRESS_ALLOWED_EMAILS: entry });
    expect((await h.requestOtp({ email })).status).toBe(200);
  });
});

describe("mail delivery failures → 502 MAIL_DELIVERY_FAILED, and no usable code", () => {
  test.each(["rcpt", "data"] as const)("the SMTP server refuses at %s", async (mode) => {
    h.smtp.setReject(mode);
    expectError(await h.requestOtp({ email: "owner@example.com" }), 502, "MAIL_DELIVERY_FAILED");
    expect(await pendingCodeRow("owner@example.com")).toBeUndefined();
    if (mode === "data") {
      // The sink saw the message before refusing it: the code it carried must not work.
      const code = extractOtp(h.smtp.rejected[0]!);
      h.smtp.setReject(false);
      expectError(await h.verifyOtp({ email: "owner@example.com", otp: code }), 401, "INVALID_OTP");
    }
  });

  test("a new code whose mail fails leaves the code mailed before working, and says so", async () => {
    const { code: first } = await h.obtainOtp("owner@example.com");
    h.clock.advance(61 * SECOND);
    h.smtp.setReject("data");
    const refused = await h.requestOtp({ email: "owner@example.com" });
    expectError(refused, 502, "MAIL_DELIVERY_FAILED");
    expect(refused.body.message).toContain("the code sent earlier still works");
    const second = extractOtp(h.smtp.rejected[0]!);
    h.smtp.setReject(false);
    expectError(await h.verifyOtp({ email: "owner@example.com", otp: second }), 401, "INVALID_OTP");
    expect((await h.verifyOtp({ email: "owner@example.com", otp: first })).status).toBe(200);
  });

  test("a code mailed before that has expired is not promised", async () => {
    await h.obtainOtp("owner@example.com");
    h.clock.advance(16 * 60 * SECOND);
    h.smtp.setReject("rcpt");
    const refused = await h.requestOtp({ email: "owner@example.com" });
    expectError(refused, 502, "MAIL_DELIVERY_FAILED");
    expect(refused.body.message).not.toContain("earlier");
  });

  test("the SMTP server is down (nothing listens on the port)", async () => {
    await reharness({ IMGPRESS_SMTP_URL: `smtp://127.0.0.1:${await closedPort()}` });
    expectError(await h.requestOtp({ email: "owner@example.com" }), 502, "MAIL_DELIVERY_FAILED");
    expect(await pendingCodeRow("owner@example.com")).toBeUndefined();
  });

  test("a failing key-issued notice does not fail the verification", async () => {
    const { code } = await h.obtainOtp("owner@example.com");
    h.smtp.setReject("rcpt");
    expect((await h.verifyOtp({ email: "owner@example.com", otp: code })).status).toBe(200);
  });

  test("the keys do not wait for the notice: a stalled mail server holds only the notice, which a stop waits for", async () => {
    const { code } = await h.obtainOtp("owner@example.com");
    h.smtp.setReject("hold");
    const verified = await h.verifyOtp({ email: "owner@example.com", otp: code });
    expect(verified.status).toBe(200);
    // Logged and audited with the answer: before, both came after the mail, and never when it hung.
    expect(h.logs.some((l) => JSON.parse(l).msg === "key issued")).toBe(true);
    expect((await h.services.audit.page({ type: "key.issued" })).events.map((e) => e.actor)).toEqual([
      "owner@example.com",
    ]);
    for (let i = 0; i < 200 && h.smtp.held() === 0; i++) await Bun.sleep(20);
    expect(h.smtp.held()).toBe(1);
    let settled = false;
    const stop = h.services.lifecycle.settled().then(() => void (settled = true));
    await holdsFor(() => !settled, 200, "a stop waiting for the held notice mail");
    h.smtp.setReject(false);
    await stop;
    expect(h.smtp.messages.filter((m) => m.to === "owner@example.com" && !/code/i.test(m.subject))).toHaveLength(1);
  });
});

describe("request bodies", () => {
  const endpoints = [REQUEST, VERIFY];
  const validFor = (path: string) =>
    path === REQUEST ? { email: "owner@example.com" } : { email: "owner@example.com", otp: "123456" };

  test.each(endpoints)("%s: malformed JSON → 400 VALIDATION_ERROR", async (path) => {
    for (const body of ['{"email":', "{email: 'a@b.co'}", "", "nul"]) {
      expectError(
        await h.request("POST", path, { body, headers: { "content-type": "application/json" } }),
        400,
        "VALIDATION_ERROR",
      );
    }
  });

  test.each(endpoints)(
    "%s: valid JSON nested thousands deep → 400 VALIDATION_ERROR saying so, not that it is invalid",
    async (path) => {
      const res = await h.request("POST", path, {
        body: `${"[".repeat(5000)}${"]".repeat(5000)}`,
        headers: { "content-type": "application/json" },
      });
      expectError(res, 400, "VALIDATION_ERROR");
      expect(res.body.message).toBe("The JSON body is nested too deeply.");
    },
  );

  test.each(endpoints)("%s: JSON that is not an object → 400 VALIDATION_ERROR", async (path) => {
    for (const json of [[], "owner@example.com", null, 42]) {
      expectError(
        await h.request("POST", path, { body: JSON.stringify(json), headers: { "content-type": "application/json" } }),
        400,
        "VALIDATION_ERROR",
      );
    }
  });

  test.each(endpoints)(
    "%s: an object with its own toString or valueOf where a string belongs → 400 VALIDATION_ERROR, not 500",
    async (path) => {
      // Elysia writes a refused value into its message with a template string, which calls these.
      for (const field of path === REQUEST ? ["email", "site_url"] : ["email", "site_url", "otp"]) {
        for (const value of [{ toString: "a" }, { toString: 1, valueOf: 2 }, [{ toString: "x" }]]) {
          const res = await h.request("POST", path, {
            body: JSON.stringify({ ...validFor(path), [field]: value }),
            headers: { "content-type": "application/json" },
          });
          expect({ field, value, status: res.status }).toEqual({ field, value, status: 400 });
          expectError(res, 400, "VALIDATION_ERROR");
        }
      }
      expect((await h.request("GET", "/health")).status).toBe(200);
    },
  );

  test.each(endpoints)("%s: invalid UTF-8 → 400 VALIDATION_ERROR", async (path) => {
    const body = new Uint8Array([0x7b, 0x22, 0x65, 0xff, 0xfe, 0x22, 0x7d]);
    expectError(
      await h.request("POST", path, { body, headers: { "content-type": "application/json" } }),
      400,
      "VALIDATION_ERROR",
    );
  });

  test.each(
    endpoints.flatMap((path) =>
      [
        { type: "text/plain", note: "text/plain" },
        { type: "application/x-www-form-urlencoded", note: "a form" },
        { type: "multipart/form-data; boundary=x", note: "multipart" },
        { type: "application/jsonp", note: "a look-alike type" },
        { type: null, note: "no Content-Type" },
      ].map((c) => ({ path, ...c })),
    ),
  )("$path: $note → 415 UNSUPPORTED_MEDIA_TYPE", async ({ path, type }) => {
    const body = new TextEncoder().encode(JSON.stringify(validFor(path))); // bytes: no implicit text/plain type
    const headers: Record<string, string> = type ? { "content-type": type } : {};
    expectError(await h.request("POST", path, { body, headers }), 415, "UNSUPPORTED_MEDIA_TYPE");
  });

  test("application/json with a charset parameter is accepted", async () => {
    const res = await h.request("POST", REQUEST, {
      body: JSON.stringify(validFor(REQUEST)),
      headers: { "content-type": "Application/JSON; charset=utf-8" },
    });
    expect(res.status).toBe(200);
  });

  test.each(endpoints)(
    "%s: a JSON body over 16 KiB → 413 PAYLOAD_TOO_LARGE (with and without Content-Length)",
    async (path) => {
      const json = JSON.stringify({ ...validFor(path), padding: "x".repeat(17 * 1024) });
      expectError(
        await h.request("POST", path, { body: json, headers: { "content-type": "application/json" } }),
        413,
        "PAYLOAD_TOO_LARGE",
      );
      const stream = new ReadableStream<Uint8Array>({
        start(controller) {
          const bytes = new TextEncoder().encode(json);
          for (let i = 0; i < bytes.length; i += 1024) controller.enqueue(bytes.subarray(i, i + 1024));
          controller.close();
        },
      });
      expectError(
        await h.request("POST", path, { body: stream, headers: { "content-type": "application/json" } }),
        413,
        "PAYLOAD_TOO_LARGE",
      );
    },
  );

  test.each([
    { path: REQUEST, json: {}, field: "email", note: "request-otp {}" },
    { path: REQUEST, json: { email: 5 }, field: "email", note: "request-otp { email: 5 }" },
    { path: REQUEST, json: { email: null }, field: "email", note: "request-otp { email: null }" },
    {
      path: REQUEST,
      json: { email: ["owner@example.com"] },
      field: "email",
      note: "request-otp { email: ['owner@example.com'] }",
    },
    { path: REQUEST, json: { email: "x".repeat(321) }, field: "email", note: "request-otp { email: <321 chars> }" },
    {
      path: REQUEST,
      json: { email: "owner@example.com", site_url: 5 },
      field: "site_url",
      note: "request-otp { email: 'owner@example.com', site_url: 5 }",
    },
    {
      path: REQUEST,
      json: { email: "owner@example.com", site_url: null },
      field: "site_url",
      note: "request-otp { email: 'owner@example.com', site_url: null }",
    },
    { path: VERIFY, json: { otp: "123456" }, field: "email", note: "verify-otp { otp: '123456' }" },
    {
      path: VERIFY,
      json: { email: "owner@example.com" },
      field: "otp",
      note: "verify-otp { email: 'owner@example.com' }",
    },
    {
      path: VERIFY,
      json: { email: "owner@example.com", otp: "123456", site_url: {} },
      field: "site_url",
      note: "verify-otp { email: 'owner@example.com', otp: '123456', site_url: {} }",
    },
    {
      path: REQUEST,
      json: { email: ["owner@example.com"] },
      field: "email: expected a string, got an array",
      note: "request-otp { email: [ 'owner@example.com' ] }",
    },
  ])("$note → 400 VALIDATION_ERROR naming $field", async ({ path, json, field }) => {
    const res = await h.request("POST", path, { json });
    expectError(res, 400, "VALIDATION_ERROR");
    expect(res.body.message).toContain(field);
  });

  test.each([
    { otp: "12345", note: "5 digits" },
    { otp: "1234567", note: "7 digits" },
    { otp: "", note: "empty" },
    { otp: "abcdef", note: "letters" },
    { otp: "12 345", note: "a space" },
    { otp: " 123456", note: "a leading space" },
    { otp: "123456\n", note: "a trailing newline" },
    { otp: "١٢٣٤٥٦", note: "Arabic-Indic digits" },
    { otp: "１２３４５６", note: "full-width digits" },
    { otp: 123456, note: "a number, not a string" },
  ])("otp with $note → 400 VALIDATION_ERROR naming otp", async ({ otp }) => {
    const res = await h.verifyOtp({ email: "owner@example.com", otp });
    expectError(res, 400, "VALIDATION_ERROR");
    expect(res.body.message).toContain("otp");
  });
});

describe("e-mail addresses", () => {
  test.each([
    { input: "owner@bücher.de", normalised: "owner@xn--bcher-kva.de", note: "IDN domain → punycode" },
    { input: "owner@MAIL.Bücher.DE", normalised: "owner@mail.xn--bcher-kva.de", note: "mixed-case IDN subdomain" },
    {
      input: "Owner.Name+tag@Example.COM",
      normalised: "owner.name+tag@example.com",
      note: "case folded, plus tag kept",
    },
    { input: "  owner@example.com  ", normalised: "owner@example.com", note: "surrounding spaces trimmed" },
    { input: "o'brien@example.com", normalised: "o'brien@example.com", note: "apostrophe" },
  ])("$note: $input is accepted as $normalised", async ({ input, normalised }) => {
    const res = await h.requestOtp({ email: input });
    expect(res.status).toBe(200);
    const mail = await h.smtp.waitFor(() => true);
    expect(mail.to).toBe(normalised);
    // The same address written either way reaches the same code and the same owner.
    const code = extractOtp(mail);
    expect((await h.verifyOtp({ email: normalised, otp: code })).status).toBe(200);
    expect(await h.services.keys.list({ email: normalised })).toHaveLength(1);
  });

  test.each([
    { email: "", note: "empty" },
    { email: "owner example.com", note: "missing @" },
    { email: "@example.com", note: "nothing before @" },
    { email: "owner@", note: "nothing after @" },
    { email: "ow ner@example.com", note: "space in the local part" },
    { email: "owner@exa mple.com", note: "space in the domain" },
    { email: "owner..name@example.com", note: "double dot in the local part" },
    { email: ".owner@example.com", note: "leading dot" },
    { email: "owner.@example.com", note: "trailing dot before @" },
    { email: "owner@example..com", note: "double dot in the domain" },
    { email: "owner@example.com.", note: "trailing dot in the domain" },
    { email: "owner@@example.com", note: "two @" },
    { email: "a@b@example.com", note: "@ in the local part" },
    { email: '"owner"@example.com', note: "quoted local part" },
    { email: '"own er"@example.com', note: "quoted local part with a space" },
    { email: "owner@localhost", note: "single-label domain" },
    { email: "owner@[127.0.0.1]", note: "IP literal" },
    { email: "owner@127.0.0.1", note: "numeric domain" },
    { email: "owner@-example.com", note: "label starting with a hyphen" },
    { email: "owner@exa_mple.com", note: "underscore in the domain" },
    { email: `${"a".repeat(288)}@example.com`, note: "300 characters" },
    { email: `${"a".repeat(65)}@example.com`, note: "local part over 64 characters" },
    { email: "own\u0000er@example.com", note: "NUL" },
    { email: "owner\r\n@example.com", note: "CR LF" },
    { email: "owner@example.com\r\nBcc: victim@example.org", note: "header injection" },
    { email: "own\u0007er@example.com", note: "a control character" },
    { email: "own\u200Ber@example.com", note: "a zero-width space" },
    { email: "owner<x>@example.com", note: "angle brackets" },
    { email: "owner,other@example.com", note: "a comma" },
    // Source routes: a relay that honours them delivers to evil.example whatever the allowlist said.
    { email: "someone%evil.example@example.com", note: "a percent route" },
    { email: "evil.example!someone@example.com", note: "a bang path" },
    // What follows a host, dropped by the URL parser, was let through after a domain with an xn-- label.
    { email: "owner@xn--tda.example/ has spaces", note: "a path after an IDN domain" },
    { email: "owner@xn--tda.example:25", note: "a port after an IDN domain" },
    { email: "owner@xn--tda.example\u0000", note: "NUL after an IDN domain" },
    { email: "owner@ＥＸＡＭＰＬＥ.xn--tda.example", note: "full-width letters beside an IDN label" },
    {
      email: `${"a".repeat(60)}@${Array.from({ length: 7 }, () => "日本語日本語日本語日本語").join(".")}.example`,
      note: "over 254 once the domain is ASCII",
    },
  ])("$note → 400 INVALID_EMAIL", async ({ email }) => {
    expectError(await h.requestOtp({ email }), 400, "INVALID_EMAIL");
    expectError(await h.verifyOtp({ email, otp: "123456" }), 400, "INVALID_EMAIL");
    expect(h.smtp.messages).toHaveLength(0);
  });
});

describe("site_url", () => {
  test.each([
    { site_url: "ftp://example.com/", note: "ftp scheme" },
    { site_url: "javascript:alert(1)", note: "javascript: URL" },
    { site_url: "data:text/html,<script>alert(1)</script>", note: "data: URL" },
    { site_url: "file:///etc/passwd", note: "file: URL" },
    { site_url: "https://user:pass@example.com/", note: "credentials" },
    { site_url: "https://user@example.com/", note: "a user name" },
    { site_url: "example.com", note: "no scheme" },
    { site_url: "not a url", note: "not a URL" },
    { site_url: "", note: "empty" },
    { site_url: `https://example.com/${"a".repeat(2048)}`, note: "over 2048 characters" },
  ])("$note → 400 VALIDATION_ERROR naming site_url", async ({ site_url }) => {
    for (const res of [
      await h.requestOtp({ email: "owner@example.com", site_url }),
      await h.verifyOtp({ email: "owner@example.com", otp: "123456", site_url }),
    ]) {
      expectError(res, 400, "VALIDATION_ERROR");
      expect(res.body.message).toContain("site_url");
    }
    expect(h.smtp.messages).toHaveLength(0);
  });
});

describe("issued keys", () => {
  test("verifying again rotates the pair: the old api_key stops working", async () => {
    const first = await h.issueKey("owner@example.com", "https://blog.example.com");
    h.clock.advance(61 * SECOND);
    const second = await h.issueKey("owner@example.com", "https://blog.example.com");
    expect(second.api_key).not.toBe(first.api_key);
    expect(await h.services.keys.findActive(first.api_key)).toBeNull();
    const active = await h.services.keys.findActive(second.api_key);
    expect(active).not.toBeNull();
    expect(await active!.secret()).toBe(second.secret_key);
    const all = await h.services.keys.list({ email: "owner@example.com" });
    expect(all.filter((k) => k.revokedAt === null)).toHaveLength(1);
    expect(all.filter((k) => k.revokedAt !== null)).toHaveLength(1);
  });

  test("one active pair per (email, site_url): other sites keep theirs", async () => {
    const blog = await h.issueKey("owner@example.com", "https://blog.example.com");
    h.clock.advance(61 * SECOND);
    const shop = await h.issueKey("owner@example.com", "https://shop.example.com");
    h.clock.advance(61 * SECOND);
    const none = await h.issueKey("owner@example.com");
    for (const k of [blog, shop, none]) expect(await h.services.keys.findActive(k.api_key)).not.toBeNull();
    expect(await h.services.keys.list({ email: "owner@example.com", activeOnly: true })).toHaveLength(3);
  });

  test("site URLs naming the same site share one slot", async () => {
    const first = await h.issueKey("owner@example.com", "https://Blog.Example.com/news/");
    h.clock.advance(61 * SECOND);
    await h.issueKey("OWNER@example.com", "https://blog.example.com/news?utm=1");
    expect(await h.services.keys.findActive(first.api_key)).toBeNull();
    const [active] = await h.services.keys.list({ email: "owner@example.com", activeOnly: true });
    expect(active!.siteUrl).toBe("https://blog.example.com/news");
  });

  test("the site_url of the request is used when verify-otp omits it", async () => {
    const { code } = await h.obtainOtp("owner@example.com", "https://blog.example.com");
    expect((await h.verifyOtp({ email: "owner@example.com", otp: code })).status).toBe(200);
    const [row] = await h.services.keys.list({ email: "owner@example.com" });
    expect(row!.siteUrl).toBe("https://blog.example.com");
  });
});

describe("every error body is exactly {error, message, code}", () => {
  test.each([
    { name: "unknown route", send: () => h.request("GET", "/v1/nope"), status: 404, code: "NOT_FOUND" },
    {
      name: "another method on a route",
      send: () => h.request("GET", REQUEST),
      status: 405,
      code: "METHOD_NOT_ALLOWED",
    },
    {
      name: "/internal from an unknown client",
      send: () => h.request("GET", "/internal/status"),
      status: 404,
      code: "NOT_FOUND",
    },
    {
      name: "bad JSON",
      send: () => h.request("POST", REQUEST, { body: "{", headers: { "content-type": "application/json" } }),
      status: 400,
      code: "VALIDATION_ERROR",
    },
    { name: "missing field", send: () => h.requestOtp({}), status: 400, code: "VALIDATION_ERROR" },
    { name: "bad address", send: () => h.requestOtp({ email: "nope" }), status: 400, code: "INVALID_EMAIL" },
    {
      name: "wrong code",
      send: () => h.verifyOtp({ email: "owner@example.com", otp: "123456" }),
      status: 401,
      code: "INVALID_OTP",
    },
    {
      name: "wrong type",
      send: () => h.request("POST", VERIFY, { body: "x", headers: { "content-type": "text/plain" } }),
      status: 415,
      code: "UNSUPPORTED_MEDIA_TYPE",
    },
    {
      name: "huge body",
      send: () =>
        h.request("POST", VERIFY, { body: "x".repeat(20_000), headers: { "content-type": "application/json" } }),
      status: 413,
      code: "PAYLOAD_TOO_LARGE",
    },
  ])("$name → $status $code", async ({ send, status, code }) => {
    expectError(await send(), status, code);
  });

  test("405 names the methods the route answers, in the message and in Allow; paths with parameters and /internal/ stay 404", async () => {
    for (const [method, path, allow] of [
      ["GET", "/v1/plugin/convert", "POST"],
      ["OPTIONS", "/v1/plugin/convert", "POST"],
      ["PUT", "/v1/plugin/auth/verify-otp", "POST"],
      ["POST", "/health", "GET, HEAD"],
      ["DELETE", "/v1/docs", "GET, HEAD"],
    ] as const) {
      const res = await h.request(method, path);
      expectError(res, 405, "METHOD_NOT_ALLOWED");
      expect([method, path, res.headers.get("allow"), res.body.message]).toEqual([
        method,
        path,
        allow,
        `${path} answers ${allow} only. See /v1/docs for the API.`,
      ]);
    }
    // HEAD on a POST route: the same status and Allow, without a body.
    const head = await h.request("HEAD", "/v1/plugin/convert");
    expect([head.status, head.headers.get("allow")]).toEqual([405, "POST"]);
    for (const [method, path] of [
      ["GET", "/v1/plugin/convert/"],
      ["PUT", "/internal/login"],
      ["DELETE", "/internal/keys/abc/revoke"],
    ] as const) {
      // From loopback, inside the /internal/ allowlist.
      expectError(await h.request(method, path, { ip: "127.0.0.1" }), 404, "NOT_FOUND");
    }
    // A page address under /internal/ that is no page (a form's address opened in the browser) is
    // the dashboard's "Page not found", for staff: sign in first.
    expectError(await h.request("GET", "/internal/keys/abc/revoke", { ip: "127.0.0.1" }), 303, "SIGN_IN_REQUIRED");
  });
});
