/**
 * docs/configuration.md is generated from the settings table (scripts/gen-config-docs.ts), as
 * src/data/db/migrations.gen.ts is from drizzle/: the committed page must be what the script writes.
 */
import { expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { CONFIGURATION_PAGE, configurationPage, staleNames } from "../../scripts/gen-config-docs.ts";
import { settings } from "../../src/core/config.ts";

test("docs/configuration.md is what the settings table generates (run `npm run docs:generate` if not)", () => {
  expect(readFileSync(CONFIGURATION_PAGE, "utf8")).toBe(configurationPage());
});

test("the page has a row and a section for every setting, with its flag", () => {
  const page = configurationPage();
  for (const s of settings) {
    expect(page).toContain(`### \`${s.env}\``);
    expect(page).toContain(
      `| [\`${s.env}\`](#${s.env.toLowerCase()}) | \`--${s.env.slice(9).toLowerCase().replaceAll("_", "-")}\` |`,
    );
  }
});

test("the script's notes and worded defaults name only settings that exist", () => {
  expect(staleNames()).toEqual([]);
});
