/**
 * The dashboard's routes through `app.handle` with real parts: a staff member signed in through the
 * forms, real keys, conversions and usage buckets. Pages, their headers, the forms that change
 * state (revoke, staff add/remove) with their CSRF and Origin checks, assets, and odd query values.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { assetUrl } from "../../../src/staff/assets/index.ts";
import { convertForm, postBearer } from "../../support/convert-helpers.ts";
import { createHarness, type Harness, TEST_MASTER_KEY } from "../../support/harness.ts";
import * as img from "../../support/images.ts";
import { form, LOOPBACK, type StaffLogin, staffSignIn } from "../../support/staff.ts";

const BOSS = "boss@example.com";
const DB_TOKEN = "db-secret-token-5150";
const METRICS_TOKEN = "metrics-secret-token-8086";
let h: Harness;
let boss: StaffLogin;
let key: { api_key: string; secret_key: string };
let keyId: string;

const page = (path: string, s: StaffLogin | null = boss) =>
  h.request("GET", path, { ip: LOOPBACK, headers: s ? { cookie: s.cookie } : {} });
const post = (
  path: string,
  fields: Record<string, string>,
  s: StaffLogin = boss,
  headers: Record<string, string> = {},
) => h.request("POST", path, form(fields, { headers: { cookie: s.cookie, ...headers } }));

beforeAll(async () => {
  h = await createHarness({
    env: { IMGPRESS_STAFF_EMAILS: BOSS, IMGPRESS_DATABASE_AUTH_TOKEN: DB_TOKEN, IMGPRESS_METRICS_TOKEN: METRICS_TOKEN },
  });
  boss = await staffSignIn(h, BOSS);
  key = await h.issueKey("o'neil&co@example.com", "https://shop.example/blog");
  keyId = (await h.services.keys.list()).find((k) => k.email === "o'neil&co@example.com")!.id;
  const body = await convertForm(await img.photo(64, 48), { format: "webp" });
  for (let i = 0; i < 3; i++) expect((await postBearer(h, key, body)).status).toBe(200);
  await h.services.usage.flush();
});

afterAll(async () => {
  await h.close();
});

describe("pages", () => {
  test.each([
    ["/internal/", "Overview"],
    ["/internal/?range=365d", "Overview"],
    ["/internal/keys", "Keys"],
    ["/internal/activity", "Activity"],
    ["/internal/settings", "Staff &amp; settings"],
  ])("%s is a signed-in page with the strict headers", async (path, title) => {
    const res = await page(path);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("text/html; charset=utf-8");
    expect(res.headers.get("cache-control")).toBe("no-store");
    expect(res.headers.get("content-security-policy")).toContain("default-src 'self'");
    expect(res.headers.get("x-frame-options")).toBe("DENY");
    expect(res.text).toContain(`<title>${title} · imgpress</title>`);
    expect(res.text).toContain(`<span class="email" title="${BOSS}">${BOSS}</span>`);
    expect(res.text).toContain(`name="csrf" value="${boss.csrf}"`);
  });

  test("the overview counts the conversions made", async () => {
    const res = await page("/internal/");
    expect(res.text).toMatch(/data-figure="conversions">3</);
    expect(res.text).toMatch(/id="overview-conversions"[\s\S]*?data-peak="3"/);
  });

  test("without a session a page redirects to the sign-in form, remembering where it was", async () => {
    const res = await page("/internal/keys?q=x", null);
    expect(res.status).toBe(303);
    expect(res.headers.get("location")).toBe(`/internal/login?next=${encodeURIComponent("/internal/keys?q=x")}`);
  });

  test("odd query values fall back instead of failing", async () => {
    expect((await page("/internal/?range=forever")).text).toContain('aria-current="true">24 h');
    const keys = await page("/internal/keys?page=-3&sort=drop%20table&order=sideways&status=zombie");
    expect(keys.status).toBe(200);
    // The address wraps only after its @ and dots, never inside a word (.address).
    expect(keys.text).toContain(
      '<td data-label="E-mail" class="email"><span class="address">o&#39;neil&amp;co@<wbr>example.<wbr>com</span></td>',
    );
    const activity = await page("/internal/activity?from=yesterday&type=nope");
    expect(activity.status).toBe(200);
    expect(activity.text).toContain("is not a date (YYYY-MM-DD)");
    // A day that does not exist is refused, not rolled over into the next month.
    const impossible = await page("/internal/activity?from=2026-02-31&to=2026-04-31");
    expect(impossible.text).toContain("“2026-02-31” is not a date (YYYY-MM-DD); the from filter is ignored.");
    expect(impossible.text).toContain("“2026-04-31” is not a date (YYYY-MM-DD); the to filter is ignored.");
    expect((await page("/internal/activity?from=2028-02-29")).text).not.toContain("is not a date");
  });

  test("a keys page past the end shows the last page; one key is 'key'", async () => {
    const total = (await h.services.keys.list()).length;
    const past = await page("/internal/keys?page=7");
    expect(past.status).toBe(200);
    expect(past.text.replaceAll("<wbr>", "")).toContain("o&#39;neil&amp;co@example.com");
    expect(past.text).toContain(`<span class="num">Page 1 of 1</span>`);
    expect(past.text).toContain(total === 1 ? "1–1 of 1 key</span>" : `1–${total} of ${total} keys</span>`);
  });

  test("an unknown key is a 404 page", async () => {
    const res = await page("/internal/keys/nope");
    expect(res.status).toBe(404);
    expect(res.text).toContain("No such key");
  });

  test("an unknown page is a 404 page that leads back (signed out: sign in first); an unknown API path stays JSON", async () => {
    for (const path of ["/internal/nope", "/internal/keys/x/y", "/internal/activity/2026"]) {
      const res = await page(path);
      expect(res.status).toBe(404);
      expect(res.headers.get("content-type")).toBe("text/html; charset=utf-8");
      expect(res.text).toContain("<h1>Page not found</h1>");
      expect(res.text).toContain('<a href="/internal/">Overview</a>');
    }
    const signedOut = await page("/internal/nope", null);
    expect(signedOut.status).toBe(303);
    expect(signedOut.headers.get("location")).toBe("/internal/login?next=%2Finternal%2Fnope");
    for (const s of [boss, null]) {
      const api = await page("/internal/api/nope", s);
      expect(api.status).toBe(404);
      expect(JSON.parse(api.text)).toMatchObject({ code: "NOT_FOUND" });
    }
  });

  test("the settings page shows no secret", async () => {
    const text = (await page("/internal/settings")).text;
    // Names and values may wrap between their parts (<wbr>), which is no character of the text.
    const shown = text.replaceAll("<wbr>", "");
    expect(shown).not.toContain(TEST_MASTER_KEY);
    expect(shown).not.toContain(DB_TOKEN);
    expect(shown).not.toContain(METRICS_TOKEN);
    expect(shown).toContain("IMGPRESS_METRICS_TOKEN");
    expect(shown).toContain("IMGPRESS_DATABASE_AUTH_TOKEN");
    expect(text).toContain(h.dir);
  });

  test("the settings page warns first, one line each with what to do: here anyone may get a key (mail, *, 0.0.0.0)", async () => {
    const text = (await page("/internal/settings")).text;
    const warnings = text.match(/<section class="warnings" aria-label="Warnings">(.*?)<\/section>/)?.[1];
    expect(warnings).toBe(
      '<p class="notice warn"><strong>Warning:</strong> Anyone who can reach this server may get an API key (IMGPRESS_ALLOWED_EMAILS is * and it listens on 0.0.0.0): limit IMGPRESS_ALLOWED_EMAILS to your addresses or @domains.</p>',
    );
    // At the top: before the staff table.
    expect(text.indexOf('aria-label="Warnings"')).toBeLessThan(text.indexOf('<h2 id="staff">'));
  });

  test("without IMGPRESS_SMTP_URL the settings page says codes go to the log; on loopback nobody else may get a key", async () => {
    const quiet = await createHarness({ env: { IMGPRESS_SMTP_URL: "", IMGPRESS_HOST: "127.0.0.1" } });
    try {
      const view = await quiet.services.dashboard.settings({ email: BOSS, csrfToken: "x" }, "ses_1");
      expect(view.warnings).toEqual([
        "Sign-in codes are printed to the server's log, not mailed: set IMGPRESS_SMTP_URL so that codes go out by e-mail.",
      ]);
    } finally {
      await quiet.close();
    }
  });
});

describe("assets", () => {
  test("served with a content type and a one-year immutable cache, to allowlisted clients only", async () => {
    const url = assetUrl("dashboard.css");
    const res = await h.request("GET", url, { ip: LOOPBACK });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("text/css; charset=utf-8");
    expect(res.headers.get("cache-control")).toBe("public, max-age=31536000, immutable");
    expect(res.text).toContain("prefers-color-scheme");
    expect((await h.request("GET", url.replace(/\.[0-9a-f]{10}\./, ".0000000000."), { ip: LOOPBACK })).status).toBe(
      404,
    );
    expect((await h.request("GET", url, { ip: "203.0.113.9" })).status).toBe(404);
  });
});

describe("revoke from the key page", () => {
  test("refused without the CSRF token or from another origin; nothing changes", async () => {
    const noToken = await post(`/internal/keys/${keyId}/revoke`, {});
    expect(noToken.status).toBe(403);
    const foreign = await post(`/internal/keys/${keyId}/revoke`, { csrf: boss.csrf }, boss, {
      origin: "https://evil.example",
    });
    expect(foreign.status).toBe(403);
    expect((await h.services.keys.findActive(key.api_key)) !== null).toBe(true);
  });

  test("revokes, audits, and the key's next conversion gets 401", async () => {
    const res = await post(`/internal/keys/${keyId}/revoke`, { csrf: boss.csrf });
    expect(res.status).toBe(303);
    expect(res.headers.get("location")).toBe(`/internal/keys/${keyId}?done=revoked`);
    const after = await page(res.headers.get("location")!);
    expect(after.text).toContain("Key revoked: its next request is refused.");
    expect(after.text).toContain('<span class="badge revoked">revoked</span>');
    const [event] = await h.services.audit.list({ type: "key.revoked" });
    expect(event).toMatchObject({ actor: BOSS, subject: keyId });
    expect((await page("/internal/activity?type=key.revoked")).text).toContain(
      `href="/internal/keys/${keyId}">${keyId}</a>`,
    );
    const body = await convertForm(await img.photo(32, 24), { format: "webp" });
    expect((await postBearer(h, key, body)).status).toBe(401);
  });

  test("viewed over 7 days, the page comes back over 7 days; its form says so", async () => {
    const other = await h.issueKey("ranged@example.com");
    const id = (await h.services.keys.list()).find((k) => k.email === "ranged@example.com")!.id;
    expect((await page(`/internal/keys/${id}?range=7d`)).text).toContain(
      `action="/internal/keys/${id}/revoke?range=7d"`,
    );
    const res = await post(`/internal/keys/${id}/revoke?range=7d`, { csrf: boss.csrf });
    expect(res.headers.get("location")).toBe(`/internal/keys/${id}?range=7d&done=revoked`);
    expect((await h.services.keys.findActive(other.api_key)) === null).toBe(true);
    // An unknown range is the default, left out.
    expect((await post(`/internal/keys/${id}/revoke?range=forever`, { csrf: boss.csrf })).headers.get("location")).toBe(
      `/internal/keys/${id}`,
    );
  });
});

describe("staff from the settings page", () => {
  test("add, then remove: the colleague's sessions end at once", async () => {
    const added = await post("/internal/settings/staff/add", { csrf: boss.csrf, email: "Colleague@Example.com" });
    expect(added.status).toBe(303);
    // To the top of the page, where the notice is (a #staff fragment scrolled it out of sight).
    expect(added.headers.get("location")).toBe("/internal/settings?done=staff-added");
    expect((await page(added.headers.get("location")!)).text).toContain(
      'role="status" tabindex="-1" data-notice id="notice">Staff member added',
    );
    expect((await page(added.headers.get("location")!)).text).toContain("colleague@example.com");
    const colleague = await staffSignIn(h, "colleague@example.com");
    expect((await page("/internal/", colleague)).status).toBe(200);
    const removed = await post("/internal/settings/staff/remove", { csrf: boss.csrf, email: "colleague@example.com" });
    expect(removed.status).toBe(303);
    expect((await page("/internal/", colleague)).status).toBe(303);
    const types = (await h.services.audit.list({ actor: BOSS })).map((e) => e.type);
    expect(types).toContain("staff.added");
    expect(types).toContain("staff.removed");
  });

  test("a refusal shows the page with the reason at its status", async () => {
    const res = await post("/internal/settings/staff/remove", { csrf: boss.csrf, email: BOSS });
    expect(res.status).toBe(409);
    expect(res.text).toContain("IMGPRESS_STAFF_EMAILS: remove it there");
    const bad = await post("/internal/settings/staff/add", { csrf: boss.csrf, email: "not an address" });
    expect(bad.status).toBe(400);
    expect(bad.text).toContain('class="notice error" role="alert"');
    // What was typed is back in the field, to be corrected rather than typed again.
    expect(bad.text).toContain('name="email" value="not an address" required');
  });
});

describe("the way back to the keys list", () => {
  const filter = "q=back%40example.com&status=active&sort=email&order=asc";
  const inPage = filter.replaceAll("&", "&amp;");

  test("a key's link in the list carries the list's filter; its page's '← All keys' and revoke form keep it", async () => {
    await h.issueKey("back@example.com");
    const id = (await h.services.keys.list()).find((k) => k.email === "back@example.com")!.id;
    expect((await page(`/internal/keys?${filter}`)).text).toContain(`href="/internal/keys/${id}?${inPage}"`);
    const keyPage = (await page(`/internal/keys/${id}?${filter}`)).text;
    expect(keyPage).toContain(`<a class="back" href="/internal/keys?${inPage}">← All keys</a>`);
    expect(keyPage).toContain(`href="/internal/keys/${id}?range=7d&amp;${inPage}"`);
    expect(keyPage).toContain(`action="/internal/keys/${id}/revoke?${inPage}"`);
    const res = await post(`/internal/keys/${id}/revoke?range=30d&${filter}`, { csrf: boss.csrf });
    expect(res.headers.get("location")).toBe(`/internal/keys/${id}?range=30d&${filter}&done=revoked`);
  });

  test("values the list would not accept are not carried back: only the list's own defaults", async () => {
    const id = (await h.services.keys.list()).find((k) => k.email === "back@example.com")!.id;
    const odd = "status=%3Cb%3E&sort=javascript%3Aalert(1)&order=up&page=-2";
    const text = (await page(`/internal/keys/${id}?${odd}`)).text;
    expect(text).toContain('<a class="back" href="/internal/keys">← All keys</a>');
    expect(text).not.toContain("javascript");
    const res = await post(`/internal/keys/${id}/revoke?${odd}`, { csrf: boss.csrf });
    expect(res.headers.get("location")).toBe(`/internal/keys/${id}`);
  });
});

describe("revoke all keys of an address from a key's page", () => {
  const OWNER = "many@example.com";
  const owned = async () => (await h.services.keys.list({ email: OWNER })).map((k) => k.id);

  test("refused without the CSRF token; not ticked, nothing is revoked and the page says why", async () => {
    // Two sites, two active keys (the second as `imgpress keys create` makes it: one code a minute per address).
    await h.issueKey(OWNER, "https://one.example");
    await h.services.issuance.issueForOperator({ email: OWNER, siteUrl: "https://two.example", by: "cli" });
    const [id] = await owned();
    expect((await post(`/internal/keys/${id}/revoke-all`, { confirm: "yes" })).status).toBe(403);
    const unticked = await post(`/internal/keys/${id}/revoke-all?range=7d`, { csrf: boss.csrf });
    expect(unticked.headers.get("location")).toBe(`/internal/keys/${id}?range=7d&done=revoke-all-unconfirmed`);
    expect((await page(unticked.headers.get("location")!)).text).toContain("Nothing was revoked: tick the box");
    expect((await h.services.keys.list({ email: OWNER, activeOnly: true })).length).toBe(2);
  });

  test("ticked: every active key of the address is revoked and audited as the CLI's revoke-email; others stay", async () => {
    const bystander = await h.issueKey("bystander@example.com");
    const [id, other] = await owned();
    const keyPage = (await page(`/internal/keys/${id}?q=many`)).text;
    expect(keyPage).toContain(`action="/internal/keys/${id}/revoke-all?q=many"`);
    expect(keyPage).toContain('name="confirm" value="yes" required');
    const res = await post(`/internal/keys/${id}/revoke-all?q=many`, { csrf: boss.csrf, confirm: "yes" });
    expect(res.status).toBe(303);
    expect(res.headers.get("location")).toBe(`/internal/keys/${id}?q=many&done=revoked-all&revoked=2`);
    expect((await page(res.headers.get("location")!)).text).toContain("2 keys of many@example.com revoked.");
    expect(await h.services.keys.list({ email: OWNER, activeOnly: true })).toEqual([]);
    const events = await h.services.audit.list({ type: "key.revoked", actor: BOSS });
    expect(events.filter((e) => e.subject === id || e.subject === other).length).toBe(2);
    expect((await h.services.keys.findActive(bystander.api_key)) !== null).toBe(true);
  });

  test("the notice is worded by the page: a count that is not a number shows nothing", async () => {
    const [id] = await owned();
    const text = (await page(`/internal/keys/${id}?done=revoked-all&revoked=%3Cb%3Eevil`)).text;
    expect(text).not.toContain("evil");
    expect(text).not.toContain("revoked.</");
  });
});

describe("a key pasted into the keys search", () => {
  test("a whole API key is searched by its key prefix, the key itself never shown", async () => {
    const pasted = await h.issueKey("pasted@example.com");
    const prefix = pasted.api_key.slice(0, 12);
    const res = await page(`/internal/keys?q=${encodeURIComponent(` ${pasted.api_key} `)}&status=active&page=3`);
    expect(res.status).toBe(303);
    expect(res.headers.get("location")).toBe(`/internal/keys?q=${prefix}&status=active&done=api-key-by-prefix`);
    const list = (await page(res.headers.get("location")!)).text;
    expect(list).toContain("pasted@<wbr>example.<wbr>com");
    expect(list).toContain("searched for by its key prefix");
    expect(list).not.toContain(pasted.api_key);
  });

  test("a secret key, whole or in part, is not searched for, and neither the page nor the URL shows it", async () => {
    const pasted = await h.issueKey("secret@example.com");
    for (const typed of [pasted.secret_key, `key: ${pasted.secret_key.slice(0, 30)}`]) {
      const res = await page(`/internal/keys?q=${encodeURIComponent(typed)}&sort=email`);
      expect(res.status).toBe(303);
      expect(res.headers.get("location")).toBe("/internal/keys?sort=email&done=secret-not-searched");
      const list = (await page(res.headers.get("location")!)).text;
      expect(list).toContain("That looked like a secret key: it was not searched for, and it is not shown.");
      expect(list).not.toContain(pasted.secret_key.slice(5, 20));
    }
  });

  test("a key page's link back to the list never carries a pasted key either", async () => {
    const pasted = await h.issueKey("carried@example.com");
    const text = (await page(`/internal/keys/${keyId}?q=${encodeURIComponent(pasted.secret_key)}&status=active`)).text;
    expect(text).toContain('<a class="back" href="/internal/keys?status=active">← All keys</a>');
    expect(text).not.toContain(pasted.secret_key.slice(5, 20));
    const byKey = (await page(`/internal/keys/${keyId}?q=${pasted.api_key}`)).text;
    expect(byKey).toContain(`<a class="back" href="/internal/keys?q=${pasted.api_key.slice(0, 12)}">← All keys</a>`);
  });

  test("a key prefix, or a key of the wrong length, is searched as typed", async () => {
    for (const typed of ["imp_abcdefgh", `imp_${"a".repeat(42)}`, "imps_short"]) {
      const res = await page(`/internal/keys?q=${encodeURIComponent(typed)}`);
      expect(res.status).toBe(200);
      expect(res.text).toContain(`value="${typed}"`);
    }
  });
});

describe("a key rotated by a new code", () => {
  test("its key.revoked event names why and its successor; both pages link to each other", async () => {
    const ROTATED = "rotated@example.com";
    await h.issueKey(ROTATED, "https://rotated.example");
    const [old] = await h.services.keys.list({ email: ROTATED });
    h.clock.advance(61_000);
    await h.issueKey(ROTATED, "https://rotated.example");
    const current = (await h.services.keys.list({ email: ROTATED, activeOnly: true }))[0]!;
    const [revoked] = await h.services.audit.list({ type: "key.revoked", subject: old!.id });
    expect(revoked).toMatchObject({ actor: ROTATED, detail: { reason: "rotated", replacedBy: current.id } });
    const [issued] = await h.services.audit.list({ type: "key.issued", subject: current.id });
    expect(issued!.detail).toMatchObject({ keyPrefix: current.keyPrefix, replaces: [old!.id] });
    const link = (id: string) => `<a class="mono" href="/internal/keys/${id}">${id}</a>`;
    expect((await page(`/internal/keys/${old!.id}`)).text).toContain(
      `<dt>Replaced by</dt><dd data-fact="replaced-by">${link(current.id)}</dd>`,
    );
    expect((await page(`/internal/keys/${current.id}`)).text).toContain(
      `<dt>Replaces</dt><dd data-fact="replaces">${link(old!.id)}</dd>`,
    );
  });

  test("a key revoked by hand or never rotated shows neither", async () => {
    const text = (await page(`/internal/keys/${keyId}`)).text;
    expect(text).not.toContain("Replaced by");
    expect(text).not.toContain("<dt>Replaces</dt>");
  });
});
describe("Send a test e-mail", () => {
  const testMails = () => h.smtp.messages.filter((m) => m.subject === "imgpress test e-mail");

  test("sends to the signed-in address only (a field naming another is ignored), audited, and says so on the page", async () => {
    const before = testMails().length;
    const sent = await post("/internal/settings/test-mail", { csrf: boss.csrf, email: "other@example.com" });
    expect(sent.status).toBe(303);
    expect(sent.headers.get("location")).toBe("/internal/settings?done=test-mail-sent");
    const mail = await h.smtp.waitFor((m) => m.subject === "imgpress test e-mail");
    expect(testMails().length).toBe(before + 1);
    expect(mail.envelopeTo).toEqual([BOSS]);
    expect(mail.text).toContain(`sent to ${BOSS}`);
    const shown = (await page(sent.headers.get("location")!)).text;
    expect(shown).toContain("Test e-mail sent to your address: check your inbox (and the spam folder).");
    expect(shown).toContain('<form class="inline-form" method="post" action="/internal/settings/test-mail">');
    const events = await h.services.audit.list({ actor: BOSS });
    expect(events.find((e) => e.type === "settings.test_mail")?.detail).toEqual({ outcome: "test-mail-sent" });
  });

  test("refused without the CSRF token: nothing is sent", async () => {
    const before = testMails().length;
    const res = await post("/internal/settings/test-mail", {});
    expect(res.status).toBe(403);
    await h.services.lifecycle.settled();
    expect(testMails().length).toBe(before);
  });

  test("the mail server's refusal is told in plain words, with its answer in the log only", async () => {
    h.smtp.setReject("rcpt");
    try {
      const res = await post("/internal/settings/test-mail", { csrf: boss.csrf });
      expect(res.headers.get("location")).toBe("/internal/settings?done=test-mail-recipient");
      const shown = (await page(res.headers.get("location")!)).text;
      expect(shown).toContain("The mail server refused your address as a recipient. Nothing was sent.");
      expect(shown).not.toContain("Mailbox unavailable");
      expect(h.logs.some((l) => l.includes("test e-mail not delivered") && l.includes("Mailbox unavailable"))).toBe(
        true,
      );
    } finally {
      h.smtp.setReject(false);
    }
  });

  test("three an hour per staff member: the fourth is refused on the page, an hour later it goes", async () => {
    const fresh = await createHarness({ env: { IMGPRESS_STAFF_EMAILS: BOSS } });
    try {
      const s = await staffSignIn(fresh, BOSS);
      const send = () =>
        fresh.request(
          "POST",
          "/internal/settings/test-mail",
          form({ csrf: s.csrf }, { headers: { cookie: s.cookie } }),
        );
      for (let i = 0; i < 3; i++) expect((await send()).status).toBe(303);
      const refused = await send();
      expect(refused.status).toBe(429);
      expect(refused.text).toContain("Three test e-mails were sent from your address within the hour");
      fresh.clock.advance(60 * 60_000 + 1);
      const s2 = await staffSignIn(fresh, BOSS);
      const later = await fresh.request(
        "POST",
        "/internal/settings/test-mail",
        form({ csrf: s2.csrf }, { headers: { cookie: s2.cookie } }),
      );
      expect(later.headers.get("location")).toBe("/internal/settings?done=test-mail-sent");
    } finally {
      await fresh.close();
    }
  });

  test("a refused SMTP login: plain words, and the password is in neither the page nor the log", async () => {
    const password = "hunter2-smtp-secret";
    const locked = await createHarness({
      env: { IMGPRESS_STAFF_EMAILS: BOSS, IMGPRESS_SMTP_URL: `smtp://mailer:${password}@127.0.0.1:${h.smtp.port}` },
    });
    try {
      const outcome = await locked.services.staffTestMail.send(BOSS, LOOPBACK);
      expect(outcome).toBe("test-mail-auth");
      const view = await locked.services.dashboard.settings({ email: BOSS, csrfToken: "x" }, "ses_1");
      expect(view.mailServer).not.toContain(password);
      expect(locked.logs.some((l) => l.includes("test e-mail not delivered"))).toBe(true);
      expect(locked.logs.join("\n")).not.toContain(password);
    } finally {
      await locked.close();
    }
  });

  test("without IMGPRESS_SMTP_URL the test e-mail goes to the log, and the page says so", async () => {
    const quiet = await createHarness({ env: { IMGPRESS_SMTP_URL: "" } });
    try {
      expect(await quiet.services.staffTestMail.send(BOSS, LOOPBACK)).toBe("test-mail-logged");
      expect(quiet.logs.join("\n")).toContain("imgpress test e-mail");
    } finally {
      await quiet.close();
    }
  });
});
