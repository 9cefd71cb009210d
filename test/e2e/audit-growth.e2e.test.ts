/**
 * The audit trail stays bounded (issue #37 point 6), on the embedded file and on PostgreSQL: wrong
 * staff codes typed for addresses that are not staff become one count per address and hour (not an
 * event each); a staff address still gets its event. IMGPRESS_AUDIT_RETENTION_DAYS prunes older
 * events as the server starts, records the pruning as an event, and the Activity page says the
 * retention in force (by default: every event kept).
 */
import { describe, expect, test } from "bun:test";
import { openStore, type Store } from "../../src/data/db/index.ts";
import { until } from "../support/ops.ts";
import { createDatabase } from "../support/postgres.ts";
import { type RunningServer, runCli, startServer, useSmtpSink } from "../support/server.ts";
import { staffSignInOverHttps } from "../support/staff.ts";

const STAFF = "ops@example.com";
const DAY_MS = 86_400_000;

const sink = useSmtpSink();

const backends: [string, () => Promise<Record<string, string>>][] = [
  ["libSQL file", async () => ({})],
  ["PostgreSQL", async () => ({ IMGPRESS_DATABASE_URL: await createDatabase("audit") })],
];

/** `work` on the server's database, opened beside it as another process would. */
async function onDatabase<T>(server: RunningServer, work: (store: Store) => Promise<T>): Promise<T> {
  const store = await openStore(server.env.IMGPRESS_DATABASE_URL ?? `file:${server.dataDir}/imgpress.db`);
  try {
    return await work(store);
  } finally {
    await store.close();
  }
}

const eventTypes = (server: RunningServer) =>
  onDatabase(server, async (s) =>
    (await s.db.select().from(s.tables.auditEvents)).map((e) => `${e.type} ${e.actor}`).sort(),
  );

describe.each(backends)("the audit trail on %s", (_name, database) => {
  test("wrong codes for strangers are counted per hour; retention prunes at start and says so; Activity shows it", async () => {
    const env = { IMGPRESS_SMTP_URL: sink.url, ...(await database()) };
    const server = await startServer({ env });
    let second: RunningServer | undefined;
    try {
      expect((await runCli(["staff", "add", STAFF], server.env)).code).toBe(0);
      const origin = new URL(server.url).origin;
      const wrong = async (email: string) => {
        const res = await server.fetch("/internal/login/code", {
          method: "POST",
          redirect: "manual",
          headers: { "content-type": "application/x-www-form-urlencoded", origin },
          body: new URLSearchParams({ email, code: "000000" }).toString(),
        });
        await res.arrayBuffer();
        expect(res.status).not.toBe(303);
      };
      for (let i = 0; i < 9; i++) await wrong(`stranger${i % 3}@example.com`);
      await wrong(STAFF);
      expect((await eventTypes(server)).filter((t) => t.startsWith("staff.sign_in_failed"))).toEqual([
        `staff.sign_in_failed ${STAFF}`,
      ]);
      const counts = await onDatabase(server, (s) => s.db.select().from(s.tables.failedSignIns));
      expect(counts.map((c) => `${c.email} ${c.attempts}`).sort()).toEqual([
        "stranger0@example.com 3",
        "stranger1@example.com 3",
        "stranger2@example.com 3",
      ]);
      const session = await staffSignInOverHttps(server, sink, STAFF);
      const activity = async () =>
        (await server.fetch("/internal/activity", { headers: { cookie: session.cookie } })).text();
      expect(await activity()).toContain("Every event is kept (IMGPRESS_AUDIT_RETENTION_DAYS is 0).");
      await server.stop({ keepData: true });

      // Events of long ago (as a server running for months leaves them), then a start with a 30-day retention.
      const old = Date.now() - 90 * DAY_MS;
      await onDatabase(server, (s) =>
        s.db
          .insert(s.tables.auditEvents)
          .values(
            Array.from({ length: 40 }, (_, i) => ({ at: old + i, type: "key.issued", actor: `old${i}@example.com` })),
          ),
      );
      const before = (await eventTypes(server)).length;
      second = await startServer({ dataDir: server.dataDir, env: { ...env, IMGPRESS_AUDIT_RETENTION_DAYS: "30" } });
      await until(
        async () => (await eventTypes(server)).some((t) => t.startsWith("audit.pruned")),
        15_000,
        "the audit.pruned event",
      );
      const after = await onDatabase(server, (s) => s.db.select().from(s.tables.auditEvents));
      expect(after.filter((e) => e.at < Date.now() - 30 * DAY_MS)).toEqual([]);
      const pruned = after.find((e) => e.type === "audit.pruned")!;
      expect(JSON.parse(pruned.detail)).toMatchObject({ deleted: 40, retentionDays: 30 });
      // The recent events stay: the failed sign-in, the sign-in itself, the staff addition…
      expect(after.length).toBe(before - 40 + 1);
      // The session of the first start is kept in the database and still valid.
      const page = await (await second.fetch("/internal/activity", { headers: { cookie: session.cookie } })).text();
      expect(page).toContain("Events older than 30 days are deleted (IMGPRESS_AUDIT_RETENTION_DAYS).");
      expect(page).toContain("audit.pruned");
    } finally {
      await second?.stop();
      await server.stop();
    }
  }, 120_000);
});
