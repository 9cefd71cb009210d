/**
 * Who is using the service now, through `app.handle` with real keys, conversions, refusals and a
 * real libSQL file: the overview's Top keys, the keys table's range switch and range sorts, the
 * last address, and the range surviving sort, search, paging and a key's page.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { convertForm, postSigned } from "../../support/convert-helpers.ts";
import { createHarness, type Harness } from "../../support/harness.ts";
import * as img from "../../support/images.ts";
import { LOOPBACK, type StaffLogin, staffSignIn } from "../../support/staff.ts";

const BOSS = "boss@example.com";
const DAY = 86_400_000;
let h: Harness;
let boss: StaffLogin;
const ids: Record<"old" | "now" | "refused", string> = { old: "", now: "", refused: "" };

const page = (path: string) => h.request("GET", path, { ip: LOOPBACK, headers: { cookie: boss.cookie } });
/** The key ids of a page's table rows (keys table or Top keys), in order. */
const rowKeys = (html: string, table: string) =>
  [
    ...(html.split(`<caption class="sr-only" id="t-${table}">`)[1] ?? "")
      .split("</table>")[0]!
      .matchAll(/ href="\/internal\/keys\/(key_[0-9a-f]+)/g),
  ].map((m) => m[1]);

beforeAll(async () => {
  h = await createHarness({ env: { IMGPRESS_STAFF_EMAILS: BOSS } });
  const image = await img.photo(64, 48);
  let n = 0;
  const convert = async (keys: { api_key: string; secret_key: string }, ip: string) =>
    expect((await postSigned(h, keys, await convertForm(image, { max_width: String(40 + n++) }), {}, ip)).status).toBe(
      200,
    );
  const old = await h.issueKey("old@example.com");
  const now = await h.issueKey("now@example.com");
  await h.issueKey("refused@example.com");
  for (const k of await h.services.keys.list()) ids[k.email.split("@")[0] as keyof typeof ids] = k.id;
  // "old" converted three times three days ago, from another address.
  for (let i = 0; i < 3; i++) await convert(old, "198.51.100.20");
  h.clock.advance(3 * DAY);
  // "now" converts twice today; "refused" is only ever refused (12 times), a revoked key being tried.
  for (let i = 0; i < 2; i++) await convert(now, "203.0.113.77");
  for (let i = 0; i < 12; i++) h.services.refusals.record("key", ids.refused, "KEY_REVOKED", h.clock.now());
  await h.services.usage.flush();
  await h.services.refusals.flush();
  boss = await staffSignIn(h, BOSS);
});

afterAll(async () => {
  await h.close();
});

describe("Top keys on the overview", () => {
  test("ranked by conversions plus refused over the range; each row links to its key at the same range", async () => {
    const day = (await page("/internal/")).text;
    expect(day).toContain('<h2 id="top-keys-title">Top keys</h2>');
    // 12 refused outrank 2 conversions; "old" converted outside the last 24 h.
    expect(rowKeys(day, "top-keys")).toEqual([ids.refused, ids.now]);
    const row = day.slice(day.indexOf(`data-key="${ids.now}"`)).split("</tr>")[0]!;
    expect(row).toContain(`href="/internal/keys/${ids.now}"`);
    expect(row).toMatch(
      /<td data-label="Conversions" class="num">2<\/td>.*<td data-label="Errors" class="num">0<\/td><td data-label="Refused" class="num">0<\/td>/s,
    );
    const week = (await page("/internal/?range=7d")).text;
    expect(rowKeys(week, "top-keys")).toEqual([ids.refused, ids.old, ids.now]);
    expect(week).toContain(`href="/internal/keys/${ids.old}?range=7d"`);
  });
});

describe("the keys table by range", () => {
  test("sorted by conversions: all time by the counters, 24 h by the last day; refused sorts too", async () => {
    expect(rowKeys((await page("/internal/keys?sort=conversions")).text, "api-keys")).toEqual([
      ids.old,
      ids.now,
      ids.refused,
    ]);
    const day = (await page("/internal/keys?sort=conversions&period=24h")).text;
    expect(rowKeys(day, "api-keys")[0]).toBe(ids.now);
    expect(day).toContain('aria-current="true">24 h</a>');
    expect(day).toContain("refused requests in the last 24 h");
    expect(rowKeys((await page("/internal/keys?sort=refused&period=24h")).text, "api-keys")[0]).toBe(ids.refused);
  });

  test("the last address is shown in the table and on the key's page", async () => {
    const list = (await page("/internal/keys")).text;
    const row = list.slice(list.indexOf(`/internal/keys/${ids.now}`)).split("</tr>")[0]!;
    expect(row.replaceAll("<wbr>", "")).toContain(
      '<td data-label="Last address"><span class="mono">203.0.113.77</span></td>',
    );
    expect((await page(`/internal/keys/${ids.now}`)).text).toContain(
      '<dd class="mono" data-fact="last-address">203.0.113.77</dd>',
    );
    // Personal data: on staff pages only, never in the log.
    expect(h.logs.join("\n")).not.toContain("203.0.113.77");
  });

  test("the range survives sorting, searching, paging and a key's page", async () => {
    const list = (await page("/internal/keys?period=7d&sort=errors")).text;
    expect(list).toContain('href="/internal/keys?sort=conversions&amp;period=7d"');
    expect(list).toContain('<input type="hidden" name="period" value="7d">');
    expect(list).toContain(`href="/internal/keys/${ids.now}?range=7d&amp;sort=errors&amp;period=7d"`);
    // All time keeps the rest of the filter and drops the range.
    expect(list).toContain('href="/internal/keys?sort=errors">All time</a>');
    const key = (await page(`/internal/keys/${ids.now}?range=7d&sort=errors&period=7d`)).text;
    expect(key).toContain('<a class="back" href="/internal/keys?sort=errors&amp;period=7d">← All keys</a>');
    expect(key).toContain(`href="/internal/keys/${ids.now}?range=30d&amp;sort=errors&amp;period=7d"`);
    // A range the list does not know falls back on all time.
    expect((await page("/internal/keys?period=forever")).text).toContain('aria-current="true">All time</a>');
  });

  test("/internal/api/keys: the same range figures and sorts from `from`/`to`, the last address", async () => {
    const api = (query: string) =>
      h.request("GET", `/internal/api/keys?${query}`, { ip: LOOPBACK, headers: { cookie: boss.cookie } });
    const day = (await api("sort=conversions&from=24h")).body;
    expect(day.rows[0]).toMatchObject({ id: ids.now, lastAddress: "203.0.113.77", inRange: { conversions: 2 } });
    const allTime = (await api("sort=conversions")).body;
    expect(allTime.rows[0]).toMatchObject({ id: ids.old, inRange: { conversions: 3, refused: 0 } });
    expect((await api("sort=refused&from=24h")).body.rows[0]).toMatchObject({
      id: ids.refused,
      inRange: { refused: 12 },
    });
  });
});
