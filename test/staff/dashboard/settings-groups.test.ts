/**
 * The settings page in groups (server, security, mail, storage, limits, staff), each a <details>
 * open at first; every setting's group comes from the one settings table in src/core/config.ts.
 */
import { describe, expect, test } from "bun:test";
import { loadConfig, SETTING_GROUPS, settings } from "../../../src/core/config.ts";
import { settingsPage } from "../../../src/staff/dashboard/pages/settings.ts";
import { describeSettings } from "../../../src/staff/settings-view.ts";

const page = settingsPage({
  viewer: { email: "boss@example.com", csrfToken: "tok" },
  staff: [{ email: "boss@example.com", source: "config", addedAt: null, addedBy: null }],
  sessions: [],
  currentSession: "ses_1",
  settings: describeSettings(loadConfig({ IMGPRESS_DATA_DIR: "/srv/imgpress" }), { reveal: false }).map((s) => ({
    ...s,
    value: String(s.value ?? ""),
  })),
  dataDir: "/srv/imgpress",
  database: "/srv/imgpress/imgpress.db",
  versions: [{ name: "imgpress", version: "1.0.0" }],
  tls: null,
  warnings: ["Sign-in codes are printed to the log."],
}).text;

/** The markup of group `name`'s <details>, from its opening tag to its end. */
function group(name: string): string {
  const start = page.indexOf(`<details class="group" data-group="${name}" open>`);
  expect(start).toBeGreaterThan(-1);
  return page.slice(start, page.indexOf("</details>", start));
}

describe("settings groups", () => {
  test("every setting names one of the page's groups", () => {
    const outside = settings.filter((s) => !SETTING_GROUPS.includes(s.group)).map((s) => s.env);
    expect(outside).toEqual([]);
  });

  test("each group is a <details>, open, its heading in the summary; each setting shows in its own group", () => {
    for (const name of SETTING_GROUPS)
      expect(group(name)).toMatch(/^<details[^>]*><summary><h2 id="\w+">\w+<\/h2><\/summary>/);
    expect(group("mail")).toContain("IMGPRESS_<wbr>SMTP_<wbr>URL");
    expect(group("mail")).toContain("Send a test e-mail");
    expect(group("storage")).toContain("IMGPRESS_<wbr>DATABASE_<wbr>URL");
    expect(group("limits")).toContain("IMGPRESS_<wbr>MAX_<wbr>PIXELS");
    expect(group("security")).toContain("IMGPRESS_<wbr>MASTER_<wbr>KEY");
    expect(group("server")).toContain("IMGPRESS_<wbr>HOST");
    expect(group("staff")).toContain("Add a staff member");
    expect(group("staff")).toContain("IMGPRESS_<wbr>STAFF_<wbr>EMAILS");
    expect(group("server")).not.toContain("IMGPRESS_<wbr>SMTP_<wbr>URL");
  });

  test("warnings stay above the groups, outside any of them", () => {
    expect(page.indexOf("Sign-in codes are printed to the log.")).toBeLessThan(page.indexOf("<details"));
  });
});
