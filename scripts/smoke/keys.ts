// Stage "keys": credentials by e-mail (through the SMTP sink), then listed by the admin command.
import type { Keys, Service } from "../../test/support/imgpress.ts";
import { cli, type Smoke } from "./context.ts";
import { assert } from "./report.ts";

/** The one-time-code round trip: request, the mail in the sink, verify; returns the keys. */
export function keysStage(s: Smoke, svc: Service): Promise<Keys> {
  return s.report.must(
    s.tag,
    "OTP round trip through the SMTP sink",
    async () => {
      const keys = await svc.client.obtainKeys(s.sink, s.email);
      assert(
        /^imp_/.test(keys.apiKey) && /^imps_/.test(keys.secretKey),
        `unexpected keys ${keys.apiKey.slice(0, 8)}… ${keys.secretKey.slice(0, 8)}…`,
      );
      return keys;
    },
    (k) => `mail "${k.subject}" → code → api_key ${k.apiKey.slice(0, 12)}…`,
  );
}

/** `imgpress keys list` (table and --json) shows the key and its `conversions` count. */
export async function keysListStage(s: Smoke, keys: Keys, conversions: number): Promise<void> {
  await s.report.check(s.tag, "imgpress keys list", async () => {
    const table = await cli(s, ["keys", "list"]);
    assert(table.code === 0, `exit ${table.code}: ${table.stderr.trim()}`);
    assert(
      table.stdout.includes(s.email) && table.stdout.includes(keys.apiKey.slice(0, 12)),
      `no row for ${s.email} / ${keys.apiKey.slice(0, 12)}…:\n${table.stdout}`,
    );
    const listed = await cli(s, ["keys", "list", "--json"]);
    assert(listed.code === 0, `--json: exit ${listed.code}: ${listed.stderr.trim()}`);
    const rows = JSON.parse(listed.stdout) as { email: string; keyPrefix: string; conversions: number }[];
    const row = rows.find((r) => r.email === s.email);
    assert(
      row && keys.apiKey.startsWith(row.keyPrefix),
      `--json has no row for ${s.email}: ${listed.stdout.slice(0, 300)}`,
    );
    assert(row.conversions === conversions, `conversions ${row.conversions}, expected ${conversions}`);
    return `row for ${s.email}, ${row.keyPrefix}…, ${conversions} conversions`;
  });
}
