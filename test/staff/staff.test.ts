/**
 * The staff door under /internal/ against the real app (app.handle), a real libSQL file, the real
 * SMTP mailer and an in-process SMTP sink, with a hand-driven clock: allowlist, sign-in, sessions,
 * CSRF, the two code worlds, the JSON API and the audit trail. test/e2e/staff.e2e.test.ts runs the
 * same door over real HTTPS.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { eq } from "drizzle-orm";
import { runAuditCommand, runKeysCommand, runSettingsCommand, runStaffCommand } from "../../src/cli/index.ts";
import { attachMeta } from "../../src/core/http/meta.ts";
import { auditEvents, staffCodes, staffSessions } from "../../src/data/db/schema.ts";
import { WRONG_CODE_BUCKETS, WRONG_CODES_PER_ADDRESS } from "../../src/data/otp/service.ts";
import { describeSettings } from "../../src/staff/settings-view.ts";
import { convertForm, postBearer } from "../support/convert-helpers.ts";
import { createHarness, expectError, type Harness, TEST_MASTER_KEY, wrongCode } from "../support/harness.ts";
import { photo } from "../support/images.ts";
import { until } from "../support/ops.ts";
import {
  form,
  LOOPBACK,
  nextCode,
  OWN_ORIGIN,
  type StaffLogin,
  staffCodeFlow,
  staffJson,
  staffSignIn,
} from "../support/staff.ts";

const STAFF = "boss@example.com";
const MINUTE = 60_000;

let h: Harness;
beforeEach(async () => {
  h = await createHarness({ env: { IMGPRESS_STAFF_EMAILS: STAFF } });
});
afterEach(async () => {
  await h.close();
});

async function reharness(env: Record<string, string>): Promise<Harness> {
  await h.close();
  h = await createHarness({ env });
  return h;
}

const page = (path: string, cookie?: string) =>
  h.request("GET", path, { ip: LOOPBACK, headers: cookie ? { cookie } : {} });
const auditTypes = async () => (await h.store.db.select().from(auditEvents)).map((e) => e.type);

describe("the network allowlist", () => {
  const tricks = [
    "/internal/login",
    "/INTERNAL/login",
    "/%69nternal/login",
    "/v1/../internal/login",
    "//internal//login",
    "/./internal/login",
    "/Internal",
    "/internal",
    "/%2569nternal/x",
    "/internal/status%2f..%2f..",
    "/internal/keys/x%2f..%2f..%2f..",
  ];

  test.each(tricks)("%s from outside answers exactly what an unknown route answers", async (path) => {
    for (const method of ["GET", "POST", "DELETE"]) {
      const hidden = await h.request(method, path, { ip: "203.0.113.9" });
      const unknown = await h.request(method, "/no/such/route", { ip: "203.0.113.9" });
      expectError(hidden, 404, "NOT_FOUND");
      expect(hidden.text).toBe(unknown.text);
      expect([...hidden.headers.keys()].sort()).toEqual([...unknown.headers.keys()].sort());
    }
  });

  test.each([
    { allow: "192.168.1.0/24", ip: "192.168.1.77", open: true },
    { allow: "192.168.1.0/24", ip: "192.168.2.1", open: false },
    { allow: "192.168.1.0/24", ip: "::ffff:192.168.1.5", open: true },
    { allow: "fd00::/8", ip: "fd12:3456::1", open: true },
    { allow: "fd00::/8", ip: "fe80::1", open: false },
    { allow: "10.0.0.1, ::1", ip: "::1", open: true },
    { allow: "10.0.0.1, ::1", ip: "10.0.0.2", open: false },
  ])("$allow lets $ip in: $open", async ({ allow, ip, open }) => {
    await reharness({ IMGPRESS_INTERNAL_ALLOW: allow, IMGPRESS_STAFF_EMAILS: STAFF });
    const res = await h.request("GET", "/internal/login", { ip });
    expect(res.status).toBe(open ? 200 : 404);
  });

  test("behind a proxy only the right-most X-Forwarded-For address counts", async () => {
    await reharness({ IMGPRESS_BEHIND_PROXY: "true", IMGPRESS_STAFF_EMAILS: STAFF });
    const via = (xff: string) =>
      h.request("GET", "/internal/login", {
        ip: "127.0.0.1",
        headers: { "x-forwarded-proto": "https", "x-forwarded-for": xff },
      });
    expect((await via("127.0.0.1, 203.0.113.9")).status).toBe(404);
    expect((await via("203.0.113.9, 127.0.0.1")).status).toBe(200);
  });

  // Walking left past trusted entries (as for a CDN chain) would let a client inside a trusted
  // range write the allowed address itself; chains are resolved by the balancer (docs/scaling.md).
  test("behind a proxy entries left of the right-most are never believed, even after a trusted proxy's address", async () => {
    await reharness({
      IMGPRESS_BEHIND_PROXY: "true",
      IMGPRESS_STAFF_EMAILS: STAFF,
      IMGPRESS_TRUSTED_PROXIES: "10.0.0.0/8",
      IMGPRESS_INTERNAL_ALLOW: "192.0.2.10",
    });
    const via = (xff: string) =>
      h.request("GET", "/internal/login", {
        ip: "10.0.0.5",
        headers: { "x-forwarded-proto": "https", "x-forwarded-for": xff },
      });
    expect((await via("192.0.2.10, 10.0.0.9")).status).toBe(404);
    expect((await via("10.0.0.9, 192.0.2.10")).status).toBe(200);
  });

  test("behind a proxy a request without X-Forwarded-For is outside, though the proxy itself is loopback", async () => {
    await reharness({ IMGPRESS_BEHIND_PROXY: "true", IMGPRESS_STAFF_EMAILS: STAFF });
    const res = await h.request("GET", "/internal/login", {
      ip: "127.0.0.1",
      headers: { "x-forwarded-proto": "https" },
    });
    expect(res.status).toBe(404);
  });

  test("behind a proxy a peer that is not a trusted proxy is refused, whatever it forwards", async () => {
    await reharness({
      IMGPRESS_BEHIND_PROXY: "true",
      IMGPRESS_STAFF_EMAILS: STAFF,
      IMGPRESS_TRUSTED_PROXIES: "10.0.0.5, fd00::/8",
    });
    const forged = { "x-forwarded-proto": "https", "x-forwarded-for": "127.0.0.1" };
    for (const ip of ["203.0.113.9", "10.0.0.6", "::ffff:10.0.0.6"]) {
      for (const path of ["/internal/login", "/health"]) {
        const res = await h.request("GET", path, { ip, headers: forged });
        expect({ ip, path, status: res.status, code: (res.body as { code?: string }).code }).toEqual({
          ip,
          path,
          status: 403,
          code: "HTTPS_REQUIRED",
        });
      }
    }
    // Loopback stays trusted (imgpress health on the instance's machine): its health probe passes.
    expect(
      (await h.request("GET", "/health", { ip: "127.0.0.1", headers: { "x-forwarded-proto": "https" } })).status,
    ).toBe(200);
    // So does the listen address when the server listens on one alone (imgpress health probes from it).
    await reharness({
      IMGPRESS_BEHIND_PROXY: "true",
      IMGPRESS_TRUSTED_PROXIES: "10.0.0.5",
      IMGPRESS_HOST: "192.0.2.2",
    });
    expect(
      (await h.request("GET", "/health", { ip: "192.0.2.2", headers: { "x-forwarded-proto": "https" } })).status,
    ).toBe(200);
    expect(
      (await h.request("GET", "/health", { ip: "192.0.2.3", headers: { "x-forwarded-proto": "https" } })).status,
    ).toBe(403);
    await reharness({
      IMGPRESS_BEHIND_PROXY: "true",
      IMGPRESS_STAFF_EMAILS: STAFF,
      IMGPRESS_TRUSTED_PROXIES: "10.0.0.5, fd00::/8",
    });
    // The proxy itself (also as a mapped IPv4 peer, or inside a range) is believed.
    for (const ip of ["10.0.0.5", "::ffff:10.0.0.5", "fd00::7"])
      expect((await h.request("GET", "/internal/login", { ip, headers: forged })).status).toBe(200);
  });

  test("without proxy mode X-Forwarded-For is ignored", async () => {
    const res = await h.request("GET", "/internal/login", {
      ip: "203.0.113.9",
      headers: { "x-forwarded-for": "127.0.0.1" },
    });
    expect(res.status).toBe(404);
  });

  test("a bad entry stops start-up naming it", async () => {
    await expect(reharness({ IMGPRESS_INTERNAL_ALLOW: "127.0.0.1, 10.0.0.0/33" })).rejects.toThrow(
      /IMGPRESS_INTERNAL_ALLOW.*10\.0\.0\.0\/33/,
    );
    h = await createHarness();
  });
});

describe("sign-in", () => {
  test("form fields, code by mail, cookie attributes, landing page, audit", async () => {
    const login = await page("/internal/login");
    expect(login.text).toContain('<input id="email" name="email" type="email" autocomplete="email"');
    expect(login.headers.get("cache-control")).toBe("no-store");
    expect(login.headers.get("x-frame-options")).toBe("DENY");
    expect(login.headers.get("referrer-policy")).toBe("same-origin");
    expect(login.headers.get("content-security-policy")).toContain("frame-ancestors 'none'");
    expect(login.headers.get("content-security-policy")).toContain("default-src 'self'");
    // A path the router sends to /internal/* by way of `%2f..` carries the same headers.
    const dotted = await page("/internal/nope%2f..%2f..");
    expect({
      status: dotted.status,
      cache: dotted.headers.get("cache-control"),
      frames: dotted.headers.get("x-frame-options"),
    }).toEqual({ status: 303, cache: "no-store", frames: "DENY" });
    expect(dotted.headers.get("content-security-policy")).toContain("frame-ancestors 'none'");
    const before = h.smtp.messages.length;
    const asked = await h.request("POST", "/internal/login", form({ email: STAFF }));
    expect(asked.text).toContain('inputmode="numeric" autocomplete="one-time-code"');
    await nextCode(h, STAFF, before);
    // The mail says what the code opens, unlike a client's code for an API key.
    const mail = h.smtp.messages.slice(before).find((m) => m.envelopeTo.includes(STAFF))!;
    expect(mail.subject).toBe("Your imgpress staff sign-in code");
    for (const body of [mail.text, mail.html]) expect(body).toContain("It signs you in to the imgpress dashboard");
    h.clock.advance(MINUTE + 1);
    const { res } = await staffCodeFlow(h, STAFF);
    expect(res.status).toBe(303);
    expect(res.headers.get("location")).toBe("/internal/");
    const cookie = res.headers.get("set-cookie")!;
    expect(cookie).toMatch(/^__Host-imgpress_session=[A-Za-z0-9_-]{43}; /);
    for (const attr of ["Path=/", "Secure", "HttpOnly", "SameSite=Lax"]) expect(cookie).toContain(attr);
    expect(cookie.toLowerCase()).not.toContain("domain");
    const home = await page("/internal/", cookie.split(";")[0]);
    expect(home.status).toBe(200);
    expect(home.text).toContain(STAFF);
    expect(await auditTypes()).toEqual(["staff.sign_in"]);
    // Only the hash of the token is stored.
    const [row] = await h.store.db.select().from(staffSessions).limit(1);
    expect(row!.tokenHash).toMatch(/^[0-9a-f]{64}$/);
    expect(cookie).not.toContain(row!.tokenHash);
  });

  test("Send a new code: within the minute it is refused on the code form and the first code still works; later the new code replaces it", async () => {
    h.clock.advance(10 * MINUTE);
    const before = h.smtp.messages.length;
    const asked = await h.request("POST", "/internal/login", form({ email: STAFF, next: "/internal/keys" }));
    expect(asked.text).toContain('<input type="hidden" name="resend" value="1">');
    const first = await nextCode(h, STAFF, before);
    const soon = await h.request(
      "POST",
      "/internal/login",
      form({ email: STAFF, next: "/internal/keys", resend: "1" }),
    );
    expect(soon.status).toBe(429);
    expect(soon.headers.get("retry-after")).toMatch(/^\d+$/);
    expect(soon.text).toContain('autocomplete="one-time-code"');
    // A status about no field: the code field is not marked invalid, since nothing typed was wrong.
    // The wait counts down on the page (dashboard.js), outside the alert's live announcements.
    const wait = soon.headers.get("retry-after");
    expect(soon.text).toContain(
      `<p class="notice error" role="alert">A new code can be sent <span data-countdown="${wait}" aria-live="off">in ${wait} s</span>; until then the code already sent still works, unless 5 wrong tries ended it.</p>`,
    );
    expect(soon.text).not.toContain("aria-invalid");
    h.clock.advance(MINUTE + 1);
    const again = h.smtp.messages.length;
    const resent = await h.request(
      "POST",
      "/internal/login",
      form({ email: STAFF, next: "/internal/keys", resend: "1" }),
    );
    expect(resent.status).toBe(200);
    expect(resent.text).toContain('<input type="hidden" name="next" value="/internal/keys">');
    expect(resent.text).toContain(
      `<p class="notice info" role="status">If ${STAFF} belongs to a staff member, a new code is on its way; the code sent before no longer works.</p>`,
    );
    const second = await nextCode(h, STAFF, again);
    if (second !== first) {
      const old = await h.request("POST", "/internal/login/code", form({ email: STAFF, code: first }));
      expect(old.status).toBe(401);
    }
    const res = await h.request(
      "POST",
      "/internal/login/code",
      form({ email: STAFF, code: second, next: "/internal/keys" }),
    );
    expect(res.status).toBe(303);
    expect(res.headers.get("location")).toBe("/internal/keys");
  });

  test("Send a new code after five within the hour: the wait may outlast the code, so the page does not say it still works", async () => {
    const email = "hourly@example.com";
    for (let i = 0; i < 5; i++) {
      expect((await h.request("POST", "/internal/login", form({ email }))).status).toBe(200);
      h.clock.advance(MINUTE + 1);
    }
    const refused = await h.request("POST", "/internal/login", form({ email, resend: "1" }));
    expect(refused.status).toBe(429);
    const wait = Number(refused.headers.get("retry-after"));
    expect(wait).toBeGreaterThan(60 * 50);
    expect(refused.text).toContain(
      `<p class="notice error" role="alert">5 codes were requested for this address within the hour: a new one can be sent <span data-countdown="${wait}" aria-live="off">in ${wait} s</span>.</p>`,
    );
    expect(refused.text).not.toContain("still works");
  });

  test("Send a new code after the day's wrong codes are used up: the page gives that reason, not that the code sent still works", async () => {
    const email = "guessed-out@example.com";
    for (let i = 0; i < 100; i++)
      await h.services.limiter.hit(`${WRONG_CODE_BUCKETS}staff:${email}`, WRONG_CODES_PER_ADDRESS);
    const refused = await h.request("POST", "/internal/login", form({ email, resend: "1" }));
    expect(refused.status).toBe(429);
    const wait = refused.headers.get("retry-after");
    expect(refused.text).toContain(
      `<p class="notice error" role="alert">Too many wrong codes were tried for this e-mail address in the last 24 hours: no code is checked for it, nor a new one sent, until some of them are a day old. Retry <span data-countdown="${wait}" aria-live="off">in ${wait} s</span>.</p>`,
    );
    expect(refused.text).not.toContain("still works");
  });

  test("staff and non-staff get byte-identical answers; only staff get mail", async () => {
    const before = h.smtp.messages.length;
    const a = await h.request("POST", "/internal/login", form({ email: STAFF }));
    const b = await h.request("POST", "/internal/login", form({ email: "nobody@example.com" }));
    expect(a.status).toBe(b.status);
    expect(a.text.replaceAll(STAFF, "X")).toBe(b.text.replaceAll("nobody@example.com", "X"));
    expect([...a.headers].filter(([k]) => k !== "x-request-id")).toEqual(
      [...b.headers].filter(([k]) => k !== "x-request-id"),
    );
    await h.smtp.waitFor((m) => m.envelopeTo.includes(STAFF));
    // Every mail sent after an answer is tracked until the server has handed it over.
    await h.services.lifecycle.settled();
    expect(h.smtp.messages.slice(before).map((m) => m.envelopeTo[0])).toEqual([STAFF]);
    const wrongA = await h.request("POST", "/internal/login/code", form({ email: STAFF, code: "000000" }));
    const wrongB = await h.request(
      "POST",
      "/internal/login/code",
      form({ email: "nobody@example.com", code: "000000" }),
    );
    expect(wrongA.status).toBe(401);
    expect(wrongA.text.replaceAll(STAFF, "X")).toBe(wrongB.text.replaceAll("nobody@example.com", "X"));
  });

  test("a wrong code says how many tries are left and offers no new code until the tries are used up or the code expired, alike for any address", async () => {
    const wrongTwice = async (email: string) => {
      expect((await h.request("POST", "/internal/login", form({ email }))).status).toBe(200);
      await until(
        async () => (await h.store.db.select().from(staffCodes).where(eq(staffCodes.email, email))).length === 1,
        5_000,
        `the code row of ${email}`,
      );
      const first = await h.request("POST", "/internal/login/code", form({ email, code: "000000" }));
      const second = await h.request("POST", "/internal/login/code", form({ email, code: "000001" }));
      return [first, second];
    };
    const [first, second] = await wrongTwice(STAFF);
    expect(first!.status).toBe(401);
    expect(first!.text).toContain(
      '<p class="notice error" role="alert" id="form-error">That code is not right. 4 tries left.</p>',
    );
    expect(second!.text).toContain("That code is not right. 3 tries left.");
    for (const res of [first!, second!]) {
      expect(res.text).not.toContain("Send a new code");
      expect(res.text).not.toContain('name="resend"');
      expect(res.text).toContain('<a href="/internal/login">Use another address</a>');
    }
    const others = await wrongTwice("nobody@example.com");
    expect(others.map((r) => r.text.replaceAll("nobody@example.com", "X"))).toEqual(
      [first!, second!].map((r) => r.text.replaceAll(STAFF, "X")),
    );
    h.clock.advance(10 * MINUTE + 1);
    const expired = await h.request("POST", "/internal/login/code", form({ email: STAFF, code: "000002" }));
    expect(expired.text).toContain("That code has expired or was already used. Send a new code.");
    expect(expired.text).toContain('<input type="hidden" name="resend" value="1">');
  });

  test("wrong guesses burn a requested code for non-staff too: the fifth answer does not tell staff from others", async () => {
    const burn = async (email: string) => {
      expect((await h.request("POST", "/internal/login", form({ email }))).status).toBe(200);
      // The code is stored (and mailed to staff) after the answer: guesses must not overtake it.
      await until(
        async () => (await h.store.db.select().from(staffCodes).where(eq(staffCodes.email, email))).length === 1,
        5_000,
        `the code row of ${email}`,
      );
      await h.smtp.waitFor((m) => m.envelopeTo.includes(STAFF));
      const answers: string[] = [];
      for (let i = 0; i < 5; i++) {
        const res = await h.request("POST", "/internal/login/code", form({ email, code: `00000${i}` }));
        answers.push(`${res.status} ${res.text.replaceAll(email, "X")}`);
      }
      return answers;
    };
    const staff = await burn(STAFF);
    expect(staff.at(-1)).toStartWith("429");
    expect(await burn("nobody@example.com")).toEqual(staff);
    expect(h.smtp.messages.map((m) => m.envelopeTo[0])).toEqual([STAFF]);
  });

  test("a code is single use, expires after 10 minutes and burns after 5 wrong guesses", async () => {
    const { code } = await staffCodeFlow(h, STAFF);
    expect((await h.request("POST", "/internal/login/code", form({ email: STAFF, code }))).status).toBe(401);

    h.clock.advance(MINUTE + 1);
    let before = h.smtp.messages.length;
    await h.request("POST", "/internal/login", form({ email: STAFF }));
    const late = await nextCode(h, STAFF, before);
    h.clock.advance(10 * MINUTE + 1);
    expect((await h.request("POST", "/internal/login/code", form({ email: STAFF, code: late }))).status).toBe(401);

    h.clock.advance(MINUTE + 1);
    before = h.smtp.messages.length;
    await h.request("POST", "/internal/login", form({ email: STAFF }));
    const burnt = await nextCode(h, STAFF, before);
    const statuses = [];
    for (let i = 1; i <= 5; i++)
      statuses.push(
        (await h.request("POST", "/internal/login/code", form({ email: STAFF, code: wrongCode(burnt, i) }))).status,
      );
    expect(statuses).toEqual([401, 401, 401, 401, 429]);
    expect((await h.request("POST", "/internal/login/code", form({ email: STAFF, code: burnt }))).status).toBe(401);
    const failed = (await auditTypes()).filter((t) => t === "staff.sign_in_failed");
    expect(failed.length).toBe(8);
  });

  test("code requests are rate-limited per address like the public flow", async () => {
    expect((await h.request("POST", "/internal/login", form({ email: STAFF }))).status).toBe(200);
    const again = await h.request("POST", "/internal/login", form({ email: STAFF }));
    expect(again.status).toBe(429);
    const wait = again.headers.get("retry-after");
    expect(wait).toMatch(/^\d+$/);
    // The form's reason ends "Retry in N s.", N counting down on the page.
    expect(again.text).toContain(`Retry <span data-countdown="${wait}" aria-live="off">in ${wait} s</span>.</p>`);
  });

  test("redirects to the page first asked for, never off-site", async () => {
    const away = await page("/internal/?x=1");
    expect(away.status).toBe(303);
    expect(away.headers.get("location")).toBe("/internal/login?next=%2Finternal%2F%3Fx%3D1");
    const { res } = await staffCodeFlow(h, STAFF, "/internal/keys?page=2");
    expect(res.headers.get("location")).toBe("/internal/keys?page=2");
    for (const next of [
      "https://evil.example/",
      "//evil.example/internal/",
      "/\\evil.example",
      "/v1/docs",
      "/internal/../v1/docs",
      "javascript:alert(1)",
    ]) {
      // Refused on the login page itself (a form, not JSON), which then returns to the overview.
      const res = await h.request("GET", `/internal/login?next=${encodeURIComponent(next)}`, { ip: LOOPBACK });
      expect({ next, status: res.status }).toEqual({ next, status: 400 });
      expect(res.text).toContain("The page to return to must be a path on this service under /internal/.");
      expect(res.text).toContain('<input type="hidden" name="next" value="/internal/">');
      const posted = await h.request("POST", "/internal/login", form({ email: STAFF, next }));
      expect(posted.status).toBe(400);
      expect(posted.text).toContain('<form method="post" action="/internal/login">');
    }
    expect(h.smtp.messages.filter((m) => m.envelopeTo.includes(STAFF)).length).toBe(1);
  });

  test("a form sent once the session has ended returns, after sign-in, to the page it was on (its Referer), never off-site", async () => {
    const sent = async (path: string, referer?: string) => {
      const res = await h.request(
        "POST",
        path,
        form({ email: "new@example.com", csrf: "stale" }, { headers: referer ? { referer } : {} }),
      );
      expect(res.status).toBe(303);
      return res.headers.get("location");
    };
    expect(await sent("/internal/settings/staff/add", `${OWN_ORIGIN}/internal/settings`)).toBe(
      "/internal/login?next=%2Finternal%2Fsettings",
    );
    expect(await sent("/internal/keys/key_1/revoke", `${OWN_ORIGIN}/internal/keys/key_1?range=7d`)).toBe(
      "/internal/login?next=%2Finternal%2Fkeys%2Fkey_1%3Frange%3D7d",
    );
    // No Referer, or one outside /internal/: the overview, never the form's own address (no page there).
    for (const referer of [undefined, "https://evil.example/internal/x", `${OWN_ORIGIN}/v1/docs`, "not a url"]) {
      expect({ referer, location: await sent("/internal/logout", referer) }).toEqual({
        referer,
        location:
          referer === "https://evil.example/internal/x"
            ? "/internal/login?next=%2Finternal%2Fx"
            : "/internal/login?next=%2Finternal%2F",
      });
    }
    // The login page then says why it is shown, and a refused address stays in the field.
    const login = await page("/internal/login?next=%2Finternal%2Fsettings");
    expect(login.text).toContain("Sign in to go on: you are not signed in, or your session has ended.");
    // The overview too: where the live panel sends a visitor whose session ended.
    expect((await page("/internal/login?next=%2Finternal%2F")).text).toContain("Sign in to go on");
    expect((await page("/internal/login")).text).not.toContain("Sign in to go on");
    const refused = await h.request(
      "POST",
      "/internal/login",
      form({ email: "someone@localhost", next: "/internal/settings" }),
    );
    expect(refused.status).toBe(400);
    expect(refused.text).toContain('value="someone@localhost"');
  });

  test("with no staff configured the door explains how to add one", async () => {
    await reharness({});
    const res = await page("/internal/login");
    expect(res.text).toContain("imgpress staff add you@example.com");
    expect(res.text).toContain("IMGPRESS_STAFF_EMAILS");
    expect((await page("/internal/")).headers.get("location")).toStartWith("/internal/login");
  });
});

describe("nothing tells staff from other addresses", () => {
  test("while mail fails, five wrong guesses answer alike for staff and others (401 × 4, then 429)", async () => {
    h.smtp.setReject("rcpt");
    const answers: Record<string, number[]> = {};
    for (const email of [STAFF, "nobody@example.com"]) {
      const rejected = h.smtp.rejected.length;
      expect((await h.request("POST", "/internal/login", form({ email }))).status).toBe(200);
      // The code is stored and mailed after the answer: wait until that is over.
      if (email === STAFF)
        await until(
          () => h.smtp.rejected.length > rejected || h.logs.some((l) => l.includes("staff code mail delivery failed")),
          5000,
          "the refused mail",
        );
      await until(
        async () => (await h.store.db.select().from(staffCodes).where(eq(staffCodes.email, email))).length === 1,
        5000,
        "the stored code",
      );
      answers[email] = [];
      for (let i = 0; i < 5; i++)
        answers[email]!.push((await h.request("POST", "/internal/login/code", form({ email, code: "000000" }))).status);
    }
    expect(answers[STAFF]).toEqual([401, 401, 401, 401, 429]);
    expect(answers["nobody@example.com"]).toEqual(answers[STAFF]!);
  });

  test("imgpress_mail_total counts key codes, not staff sign-in codes (readable without a session, it would name staff)", async () => {
    const metric = async () =>
      (await h.request("GET", "/internal/metrics", { ip: LOOPBACK })).text.match(
        /^imgpress_mail_total\{outcome="sent"\} (\d+)$/m,
      )?.[1] ?? "0";
    const before = h.smtp.messages.length;
    await h.request("POST", "/internal/login", form({ email: STAFF }));
    await nextCode(h, STAFF, before);
    expect(await metric()).toBe("0");
    await h.obtainOtp("client@example.com");
    expect(await metric()).toBe("1");
  });
});

describe("two code worlds", () => {
  test("a staff code cannot be exchanged for API keys", async () => {
    const before = h.smtp.messages.length;
    await h.request("POST", "/internal/login", form({ email: STAFF }));
    const code = await nextCode(h, STAFF, before);
    expectError(await h.verifyOtp({ email: STAFF, otp: code }), 401, "INVALID_OTP");
    // …and it still opens the staff door it was made for.
    expect((await h.request("POST", "/internal/login/code", form({ email: STAFF, code }))).status).toBe(303);
  });

  test("an issuance code cannot open a staff session", async () => {
    const { code } = await h.obtainOtp(STAFF);
    const res = await h.request("POST", "/internal/login/code", form({ email: STAFF, code }));
    expect(res.status).toBe(401);
    expect(res.headers.get("set-cookie")).toBeNull();
    expect((await h.verifyOtp({ email: STAFF, otp: code })).status).toBe(200);
  });
});

describe("sessions", () => {
  let s: StaffLogin;
  beforeEach(async () => {
    s = await staffSignIn(h, STAFF);
  });

  test("idle timeout (30 min) and absolute lifetime (12 h)", async () => {
    h.clock.advance(29 * MINUTE);
    expect((await page("/internal/", s.cookie)).status).toBe(200);
    h.clock.advance(31 * MINUTE);
    const res = await page("/internal/", s.cookie);
    expect(res.status).toBe(303);
    expect((await h.request("GET", "/internal/api/me", { ip: LOOPBACK, headers: { cookie: s.cookie } })).status).toBe(
      401,
    );

    h.clock.advance(MINUTE + 1);
    const fresh = await staffSignIn(h, STAFF);
    for (let i = 0; i < 25; i++) {
      h.clock.advance(29 * MINUTE);
      expect((await page("/internal/", fresh.cookie)).status).toBe(i < 24 ? 200 : 303);
    }
  });

  test("tampered, unknown and signed-out cookies open nothing", async () => {
    const tampered = s.cookie.slice(0, -1) + (s.cookie.endsWith("A") ? "B" : "A");
    for (const cookie of [
      tampered,
      "__Host-imgpress_session=",
      "__Host-imgpress_session=../../etc",
      `imgpress_session=${s.cookie.split("=")[1]}`,
    ]) {
      expectError(
        await h.request("GET", "/internal/api/me", { ip: LOOPBACK, headers: { cookie } }),
        401,
        "SIGN_IN_REQUIRED",
      );
    }
    const out = await h.request("POST", "/internal/logout", form({ csrf: s.csrf }, { headers: { cookie: s.cookie } }));
    expect(out.status).toBe(303);
    expect(out.headers.get("set-cookie")).toContain("Max-Age=0");
    expect(out.headers.get("location")).toBe("/internal/login?signed_out=1");
    expect((await page("/internal/", s.cookie)).status).toBe(303);
    expect(await auditTypes()).toContain("staff.sign_out");
  });

  test("a new token at each sign-in; sign out everywhere ends them all", async () => {
    h.clock.advance(MINUTE + 1);
    const other = await staffSignIn(h, STAFF);
    expect(other.cookie).not.toBe(s.cookie);
    const list = await h.request("GET", "/internal/api/sessions", staffJson(s));
    expect(list.body.sessions.length).toBe(2);
    expect(JSON.stringify(list.body)).not.toContain(s.cookie.split("=")[1]);
    const out = await h.request("POST", "/internal/api/sessions/sign-out-everywhere", staffJson(other));
    expect(out.body).toEqual({ ended: 2 });
    expect((await page("/internal/", s.cookie)).status).toBe(303);
    expect((await page("/internal/", other.cookie)).status).toBe(303);
    expect(await auditTypes()).toContain("staff.sign_out_everywhere");
  });

  test("the login page confirms a sign-out, from here or everywhere, with fixed words (nothing from the address is shown)", async () => {
    const out = await h.request(
      "POST",
      "/internal/logout/everywhere",
      form({ csrf: s.csrf }, { headers: { cookie: s.cookie } }),
    );
    expect(out.status).toBe(303);
    expect(out.headers.get("location")).toBe("/internal/login?signed_out=1");
    const confirmed = await page(out.headers.get("location")!);
    expect(confirmed.text).toContain('<p class="notice" role="status">You are signed out.</p>');
    expect(confirmed.text).not.toContain("Sign in to go on");
    for (const path of ["/internal/login", "/internal/login?signed_out=%3Cb%3Ehi", "/internal/login?signed_out=0"]) {
      const res = await page(path);
      expect({ path, status: res.status }).toEqual({ path, status: 200 });
      expect(res.text).not.toContain("signed out");
      expect(res.text).not.toContain("<b>hi");
    }
  });

  test("removing a staff member ends their sessions at once", async () => {
    const added = await h.request("POST", "/internal/api/staff", staffJson(s, { email: "colleague@example.com" }));
    expect(added.body).toEqual({ email: "colleague@example.com", added: true });
    const colleague = await staffSignIn(h, "colleague@example.com");
    expect((await page("/internal/", colleague.cookie)).status).toBe(200);
    const removed = await h.request("DELETE", "/internal/api/staff/colleague%40example.com", staffJson(s));
    expect(removed.body).toEqual({ email: "colleague@example.com", removed: true });
    expect((await page("/internal/", colleague.cookie)).status).toBe(303);
    expectError(
      await h.request("DELETE", `/internal/api/staff/${encodeURIComponent(STAFF)}`, staffJson(s)),
      409,
      "STAFF_IN_CONFIG",
    );
    const types = await auditTypes();
    expect(types).toContain("staff.added");
    expect(types).toContain("staff.removed");
  });

  test("unauthenticated: pages redirect, JSON gets 401", async () => {
    expect((await page("/internal/")).headers.get("location")).toBe("/internal/login?next=%2Finternal%2F");
    expectError(await h.request("GET", "/internal/api/live", { ip: LOOPBACK }), 401, "SIGN_IN_REQUIRED");
  });
});

describe("CSRF", () => {
  let s: StaffLogin;
  beforeEach(async () => {
    s = await staffSignIn(h, STAFF);
  });

  const cases: { name: string; headers: Record<string, string>; code: string }[] = [
    { name: "no Origin, no Sec-Fetch-Site", headers: { origin: "" }, code: "FOREIGN_ORIGIN" },
    { name: "foreign Origin", headers: { origin: "https://evil.example" }, code: "FOREIGN_ORIGIN" },
    {
      name: "cross-site Sec-Fetch-Site",
      headers: { origin: "", "sec-fetch-site": "cross-site" },
      code: "FOREIGN_ORIGIN",
    },
    { name: "no token", headers: { "x-csrf-token": "" }, code: "CSRF_TOKEN_INVALID" },
    { name: "another session's token", headers: { "x-csrf-token": "0".repeat(64) }, code: "CSRF_TOKEN_INVALID" },
  ];
  test.each(cases)("$name → 403 $code, nothing changed", async ({ headers, code }) => {
    const { api_key } = await h.issueKey("owner@example.com");
    const [key] = await h.services.keys.list();
    const opts = staffJson(s);
    const merged: Record<string, string> = { ...(opts.headers as Record<string, string>), ...headers };
    for (const k of Object.keys(merged)) if (merged[k] === "") delete merged[k];
    expectError(
      await h.request("POST", `/internal/api/keys/${key!.id}/revoke`, { ...opts, headers: merged }),
      403,
      code,
    );
    expect((await h.services.keys.findActive(api_key)) !== null).toBe(true);
    const { "x-csrf-token": _sent, ...formHeaders } = merged;
    const token = headers["x-csrf-token"] ?? s.csrf;
    const body = new URLSearchParams(token ? { csrf: token } : {}).toString();
    const headersOut = { ...formHeaders, "content-type": "application/x-www-form-urlencoded" };
    expectError(await h.request("POST", "/internal/logout", { ip: LOOPBACK, body, headers: headersOut }), 403, code);
    expect((await page("/internal/", s.cookie)).status).toBe(200);
  });

  test("Sec-Fetch-Site: same-origin stands in for a missing Origin", async () => {
    const opts = staffJson(s);
    const { origin: _o, ...headers } = opts.headers as Record<string, string>;
    const res = await h.request("POST", "/internal/api/sessions/sign-out-everywhere", {
      ...opts,
      headers: { ...headers, "sec-fetch-site": "same-origin" },
    });
    expect(res.status).toBe(200);
  });

  test("the login forms refuse a foreign or missing Origin on the form's page, sending no code", async () => {
    const before = h.smtp.messages.length;
    for (const headers of [{ origin: "https://evil.example" }, { origin: "null" }]) {
      const login = await h.request("POST", "/internal/login", form({ email: STAFF }, { headers }));
      expect(login.status).toBe(403);
      expect(login.headers.get("content-type")).toStartWith("text/html");
      expect(login.text).toContain("did not come from this service&#39;s own pages");
      expect(login.text).toContain('<form method="post" action="/internal/login">');
      const code = await h.request("POST", "/internal/login/code", form({ email: STAFF, code: "123456" }, { headers }));
      expect(code.status).toBe(403);
      expect(code.text).toContain('<form method="post" action="/internal/login/code">');
    }
    await h.services.lifecycle.settled();
    expect(h.smtp.messages.length).toBe(before);
  });

  test("a refused sign-in form is counted in the metrics by its code, as a JSON refusal is", async () => {
    await h.request("POST", "/internal/login", form({ email: STAFF }));
    const request = new Request("http://localhost/internal/login/code", {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", origin: "http://localhost" },
      body: new URLSearchParams({ email: STAFF, code: "000000" }).toString(),
    });
    const meta = attachMeta(request, LOOPBACK);
    expect((await h.app.handle(request)).status).toBe(401);
    expect(meta.errorCode).toBe("INVALID_CODE");
  });
});

describe("the JSON API", () => {
  test("revoke → that key gets 401 on its very next conversion; audited with the staff member", async () => {
    const s = await staffSignIn(h, STAFF);
    const keys = await h.issueKey("owner@example.com");
    const image = await photo(64, 48);
    expect((await postBearer(h, keys, await convertForm(image))).status).toBe(200);
    const [key] = await h.services.keys.list();
    const res = await h.request("POST", `/internal/api/keys/${key!.id}/revoke`, staffJson(s));
    expect(res.body).toEqual({ revoked: key!.id });
    expect((await postBearer(h, keys, await convertForm(image))).status).toBe(401);
    expectError(await h.request("POST", `/internal/api/keys/${key!.id}/revoke`, staffJson(s)), 404, "KEY_NOT_FOUND");
    const events = await h.request("GET", "/internal/api/audit?type=key.revoked", staffJson(s));
    expect(events.body.events.map((e: { actor: string; subject: string }) => [e.actor, e.subject])).toEqual([
      [STAFF, key!.id],
    ]);
    const issued = await h.request("GET", "/internal/api/audit?type=key.issued", staffJson(s));
    expect(issued.body.events[0].actor).toBe("owner@example.com");
    expect(JSON.stringify(issued.body)).not.toContain(keys.api_key);
  });

  test("usage: overview, series, keys and key detail after a flush", async () => {
    const s = await staffSignIn(h, STAFF);
    const keys = await h.issueKey("owner@example.com", "https://blog.example.com");
    const image = await photo(64, 48);
    for (let i = 0; i < 2; i++) expect((await postBearer(h, keys, await convertForm(image))).status).toBe(200);
    await h.services.usage.flush();
    const overview = await h.request("GET", "/internal/api/overview?from=1d", staffJson(s));
    expect(overview.body.totals.conversions).toBe(2);
    const series = await h.request("GET", "/internal/api/usage/series?from=6h&step=hour", staffJson(s));
    expect(series.body.points.reduce((n: number, p: { conversions: number }) => n + p.conversions, 0)).toBe(2);
    const list = await h.request("GET", "/internal/api/keys?search=blog&page_size=10", staffJson(s));
    expect(list.body.total).toBe(1);
    const id = list.body.rows[0].id;
    expect(list.body.rows[0].conversions).toBe(2);
    const detail = await h.request("GET", `/internal/api/keys/${id}?from=1d`, staffJson(s));
    expect(detail.body.usage.totals.conversions).toBe(2);
    expect(detail.text).not.toContain(keys.api_key);
    expectError(await h.request("GET", "/internal/api/keys/key_nope", staffJson(s)), 404, "KEY_NOT_FOUND");
    // An address with a Unicode domain is found as typed: it is stored (and audited) in ASCII form.
    await h.issueKey("Ünï@Bücher.example", "https://bücher.example");
    for (const search of ["bücher", "ünï@bücher.example", "xn--bcher-kva"]) {
      const found = await h.request("GET", `/internal/api/keys?search=${encodeURIComponent(search)}`, staffJson(s));
      expect({ search, emails: found.body.rows.map((r: { email: string }) => r.email) }).toEqual({
        search,
        emails: ["ünï@xn--bcher-kva.example"],
      });
    }
    const audited = await h.request(
      "GET",
      `/internal/api/audit?staff=${encodeURIComponent("ÜNÏ@bücher.example")}`,
      staffJson(s),
    );
    expect(audited.body.events.map((e: { type: string }) => e.type)).toContain("key.issued");
    expectError(await h.request("GET", "/internal/api/overview?from=whenever", staffJson(s)), 400, "VALIDATION_ERROR");
    expectError(await h.request("GET", "/internal/api/keys?sort=secret", staffJson(s)), 400, "VALIDATION_ERROR");
    expectError(await h.request("GET", "/internal/api/overview", { ip: LOOPBACK }), 401, "SIGN_IN_REQUIRED");
  });

  test("audit paging and filters", async () => {
    const s = await staffSignIn(h, STAFF);
    for (let i = 0; i < 5; i++)
      await h.request("POST", "/internal/api/staff", staffJson(s, { email: `p${i}@example.com` }));
    const first = await h.request("GET", "/internal/api/audit?type=staff.added&limit=2", staffJson(s));
    expect(first.body.events.map((e: { subject: string }) => e.subject)).toEqual(["p4@example.com", "p3@example.com"]);
    const second = await h.request(
      "GET",
      `/internal/api/audit?type=staff.added&limit=2&before=${first.body.next_before}`,
      staffJson(s),
    );
    expect(second.body.events.map((e: { subject: string }) => e.subject)).toEqual(["p2@example.com", "p1@example.com"]);
    const last = await h.request(
      "GET",
      `/internal/api/audit?type=staff.added&limit=2&before=${second.body.next_before}`,
      staffJson(s),
    );
    expect(last.body.events.map((e: { subject: string }) => e.subject)).toEqual(["p0@example.com"]);
    expect(last.body.next_before).toBeNull();
    // A page that ends exactly on the oldest match says there is nothing older.
    const exact = await h.request("GET", `/internal/api/audit?type=staff.added&limit=5`, staffJson(s));
    expect(exact.body.events).toHaveLength(5);
    expect(exact.body.next_before).toBeNull();
    const byStaff = await h.request("GET", `/internal/api/audit?staff=${STAFF}&since=1h`, staffJson(s));
    expect(byStaff.body.events.length).toBe(6);
    const future = await h.request("GET", "/internal/api/audit?since=2031-01-01T00:00:00Z", staffJson(s));
    expect(future.body.events).toEqual([]);
    expectError(await h.request("GET", "/internal/api/audit?type=nope", staffJson(s)), 400, "VALIDATION_ERROR");
    expectError(await h.request("GET", "/internal/api/audit?since=yesterday", staffJson(s)), 400, "VALIDATION_ERROR");
    // A day that does not exist is refused, not rolled over into the next month.
    for (const since of ["2026-02-31", "2026-13-01", "2026-04-31T10:00:00Z"])
      expectError(await h.request("GET", `/internal/api/audit?since=${since}`, staffJson(s)), 400, "VALIDATION_ERROR");
    expect((await h.request("GET", "/internal/api/audit?since=2028-02-29T00:00:00Z", staffJson(s))).status).toBe(200);
    // Paging takes whole numbers (a fraction reached SQL's LIMIT and answered 500).
    for (const q of ["limit=2.5", "before=1.5", "before=abc"]) {
      const fraction = await h.request("GET", `/internal/api/audit?${q}`, staffJson(s));
      expectError(fraction, 400, "VALIDATION_ERROR");
      // Said plainly, not as the union Elysia coerces a query number through ("one of: 'integer', 'integer'").
      expect(fraction.body.message).toBe(`${q.split("=")[0]}: must be a whole number`);
    }
    // The usage API's numbers too, named as the client sent them (utc_offset_minutes=1.5 was refused as "utcOffsetMinutes").
    for (const q of ["usage/series?step=day&utc_offset_minutes=1.5", "keys?page=2.5", "keys?page_size=abc"]) {
      const fraction = await h.request("GET", `/internal/api/${q}`, staffJson(s));
      expectError(fraction, 400, "VALIDATION_ERROR");
      expect(fraction.body.message).toBe(
        `${q.split("?")[1]!.split("&").at(-1)!.split("=")[0]}: must be a whole number`,
      );
    }
    // The message names the query parameter (a coerced number out of bounds comes without a path) and a union's literals.
    const tooMany = await h.request("GET", "/internal/api/audit?limit=9999", staffJson(s));
    expectError(tooMany, 400, "VALIDATION_ERROR");
    expect(tooMany.body.message).toStartWith("limit: ");
    // Written another way, or beside a valid parameter with the same number: still that parameter.
    expect((await h.request("GET", "/internal/api/audit?limit=1e4", staffJson(s))).body.message).toStartWith("limit: ");
    expect(
      (await h.request("GET", "/internal/api/audit?before=9999&limit=9999", staffJson(s))).body.message,
    ).toStartWith("query: ");
    const sorted = await h.request("GET", "/internal/api/keys?sort=secret", staffJson(s));
    expect(sorted.body.message).toMatch(/^sort: must be one of "/);
  });

  test("staff list and live state", async () => {
    const s = await staffSignIn(h, STAFF);
    const list = await h.request("GET", "/internal/api/staff", staffJson(s));
    expect(list.body.staff).toEqual([{ email: STAFF, source: "config", addedAt: null, addedBy: null }]);
    const live = await h.request("GET", "/internal/api/live", staffJson(s));
    expect(Object.keys(live.body).sort()).toEqual([
      "conversions",
      "memory",
      "requests_per_second",
      "uptime_s",
      "version",
    ]);
    expect(live.body.conversions).toEqual({
      admitted: 0,
      running: 0,
      slotsBusy: 0,
      waiting: 0,
      rejected: 0,
      abandoned: 0,
      memoryReservedMiB: 0,
      receiving: 0,
      receivingMiB: 0,
    });
  });

  test("no code, token or key ever reaches the audit trail or the log", async () => {
    const { res, code } = await staffCodeFlow(h, STAFF);
    const token = res.headers.get("set-cookie")!.split(";")[0]!.split("=")[1]!;
    const keys = await h.issueKey("owner@example.com");
    const everything = JSON.stringify(await h.store.db.select().from(auditEvents)) + h.logs.join("\n");
    for (const secret of [code, token, keys.api_key, keys.secret_key]) expect(everything).not.toContain(secret);
  });

  test("settings: the metrics token is a secret too (masked unless revealed)", () => {
    const config = { ...h.config, metricsToken: "scrape-token-42" };
    const token = (reveal: boolean) =>
      describeSettings(config, { reveal }).find((x) => x.env === "IMGPRESS_METRICS_TOKEN")!.value;
    expect(token(false)).toBe("(set)");
    expect(token(true)).toBe("scrape-token-42");
  });

  test("settings: secrets masked in the API; revealed only on the CLI with --secrets, audited", async () => {
    const s = await staffSignIn(h, STAFF);
    const res = await h.request("GET", "/internal/api/settings", staffJson(s));
    const master = res.body.settings.find((x: { env: string }) => x.env === "IMGPRESS_MASTER_KEY");
    expect(master.value).toBe("(set)");
    expect(res.text).not.toContain(TEST_MASTER_KEY);
    const masked: string[] = [];
    await runSettingsCommand({}, h.config, h.services, (l) => masked.push(l));
    expect(masked).toContain("IMGPRESS_MASTER_KEY=(set)");
    expect(await auditTypes()).not.toContain("settings.secrets_read");
    const shown: string[] = [];
    await runSettingsCommand({ secrets: "true" }, h.config, h.services, (l) => shown.push(l));
    expect(shown).toContain(`IMGPRESS_MASTER_KEY=${TEST_MASTER_KEY}`);
    const [event] = await h.services.audit.list({ type: "settings.secrets_read" });
    expect(event).toMatchObject({ actor: "cli", detail: {} });
    expect(JSON.stringify(event)).not.toContain(TEST_MASTER_KEY);
  });

  test("CLI: revoking a key and changing staff are audited with actor cli", async () => {
    await h.issueKey("owner@example.com");
    const [key] = await h.services.keys.list();
    const out: string[] = [];
    const io = { out: (l: string) => out.push(l), err: (l: string) => out.push(l) };
    expect(await runKeysCommand(["revoke", key!.id], {}, h.services, io)).toBe(0);
    expect(
      await runKeysCommand(
        ["create"],
        { email: "Made@Example.com", site: "https://Blog.example.com/" },
        h.services,
        io,
      ),
    ).toBe(0);
    const [made] = await h.services.keys.list({ email: "made@example.com" });
    expect(await runStaffCommand(["add", "Helper@Example.com"], {}, h.services, io)).toBe(0);
    expect(await runStaffCommand(["remove", "helper@example.com"], {}, h.services, io)).toBe(0);
    await expect(runStaffCommand(["remove", STAFF], {}, h.services, io)).rejects.toThrow("IMGPRESS_STAFF_EMAILS");
    const events = await h.services.audit.list({ actor: "cli" });
    expect(events.map((e) => `${e.type} ${e.subject}`).reverse()).toEqual([
      `key.revoked ${key!.id}`,
      `key.issued ${made!.id}`,
      "staff.added helper@example.com",
      "staff.removed helper@example.com",
    ]);
    expect(events.find((e) => e.type === "key.issued")?.detail).toEqual({
      keyPrefix: made!.keyPrefix,
      siteUrl: "https://blog.example.com",
      owner: "made@example.com",
    });
    const printed: string[] = [];
    expect(await runAuditCommand({ since: "1h" }, h.services, h.clock.now(), (l) => printed.push(l))).toBe(0);
    expect(printed.join("\n")).toContain("key.revoked");
    await expect(runAuditCommand({ since: "soon" }, h.services, h.clock.now(), (l) => printed.push(l))).rejects.toThrow(
      "usage: imgpress audit",
    );
  });

  test("nothing under /internal in the public OpenAPI document", async () => {
    const doc = await h.request("GET", "/v1/docs/json");
    expect(Object.keys(doc.body.paths).filter((p) => p.toLowerCase().includes("internal"))).toEqual([]);
  });
});
