/**
 * A demo audit trail for the screenshots' activity page, written over keys `seedDemoData` made:
 * every event has the shape the real code writes (actor, subject, address and detail as the real
 * flows record them; test/support/demo-audit.test.ts compares them with events of the real flows),
 * and key events happen when the key's own row says (issued at its creation, revoked at its revocation).
 */
import { eq, sql } from "drizzle-orm";
import { type AuditInput, AuditLog } from "../../src/data/audit/service.ts";
import type { Store } from "../../src/data/db/index.ts";

/** Who works on the demo service and from where (documentation addresses, RFC 5737 and 3849). */
const STAFF = "ops@example.com";
const COLLEAGUE = "colleague@example.com";
const OFFICE = "192.168.1.20";
const CLIENT_ADDRESSES = ["203.0.113.14", "198.51.100.23", "2001:db8:4f2a::", "203.0.113.77", "198.51.100.140"];

const DAY_MS = 86_400_000;
const HOUR_MS = 3_600_000;

interface DemoKey {
  id: string;
  key_prefix: string;
  email: string;
  site_url: string;
  created_at: number;
  revoked_at: number | null;
}

/** One event at its time. */
interface Timed extends AuditInput {
  at: number;
}

/** The keys the trail talks about: the newest issued, and the revoked ones, from the demo's own rows. */
async function demoKeys(store: Store, newest: number, now: number): Promise<{ recent: DemoKey[]; revoked: DemoKey[] }> {
  const columns = sql.raw("id, key_prefix, email, site_url, created_at, revoked_at");
  const recent = await store.all<DemoKey>(
    sql`SELECT ${columns} FROM api_keys WHERE revoked_at IS NULL ORDER BY created_at DESC LIMIT ${newest}`,
  );
  const revoked = await store.all<DemoKey>(
    sql`SELECT ${columns} FROM api_keys WHERE revoked_at IS NOT NULL AND revoked_at <= ${now} ORDER BY revoked_at DESC LIMIT 4`,
  );
  return { recent, revoked };
}

// As the verify-otp route records it: the owner is the actor, from the client's address.
function issued(k: DemoKey, clientAddress: string, replaces?: string[]): Timed {
  const detail = { keyPrefix: k.key_prefix, siteUrl: k.site_url, ...(replaces ? { replaces } : {}) };
  return { at: k.created_at, type: "key.issued", actor: k.email, subject: k.id, clientAddress, detail };
}

/**
 * A rotation: the newest key replaces the newest revoked one, which becomes the same owner's
 * (address and site) and is revoked when the new pair is issued, as a second verify-otp does.
 */
async function rotation(store: Store, next: DemoKey, old: DemoKey, clientAddress: string): Promise<Timed[]> {
  const { apiKeys } = store.tables;
  await store.db
    .update(apiKeys)
    .set({ email: next.email, siteUrl: next.site_url, revokedAt: next.created_at })
    .where(eq(apiKeys.id, old.id));
  const detail = { reason: "rotated", replacedBy: next.id };
  return [
    issued(next, clientAddress, [old.id]),
    { at: next.created_at, type: "key.revoked", actor: next.email, subject: old.id, clientAddress, detail },
  ];
}

// A staff member's working session: signed in from the office, sometimes a mistyped code first.
function staffVisit(email: string, at: number, { mistyped }: { mistyped: boolean }): Timed[] {
  const session = `ses_${Math.floor(at).toString(16).padStart(16, "0")}`;
  const signIn: Timed = { at, type: "staff.sign_in", actor: email, subject: session, clientAddress: OFFICE };
  const failed: Timed = {
    at: at - 60_000,
    type: "staff.sign_in_failed",
    actor: email,
    clientAddress: OFFICE,
    detail: { reason: "invalid_code" },
  };
  const out: Timed = {
    at: at + HOUR_MS,
    type: "staff.sign_out",
    actor: email,
    subject: session,
    clientAddress: OFFICE,
  };
  return mistyped ? [failed, signIn, out] : [signIn, out];
}

/** Writes the demo trail; returns how many events. Changes one revoked demo key into the rotated-out key of the newest. */
export async function seedDemoAudit(store: Store, { now }: { now: number }): Promise<number> {
  const { recent, revoked } = await demoKeys(store, 10, now);
  const address = (i: number) => CLIENT_ADDRESSES[i % CLIENT_ADDRESSES.length]!;
  const [newest, ...others] = recent;
  // The rotated-out key must have been revoked before its successor was issued (it rotates then).
  const rotated = newest && revoked.find((k) => k.revoked_at! <= newest.created_at);
  const revokedByStaff = revoked.filter((k) => k !== rotated);
  const events: Timed[] = [
    { at: now - 30 * DAY_MS, type: "staff.added", actor: "cli", subject: STAFF, clientAddress: "" },
    ...staffVisit(STAFF, now - 29 * DAY_MS, { mistyped: false }),
    { at: now - 29 * DAY_MS + 60_000, type: "staff.added", actor: STAFF, subject: COLLEAGUE, clientAddress: OFFICE },
    ...staffVisit(COLLEAGUE, now - 2 * DAY_MS, { mistyped: true }),
    ...staffVisit(STAFF, now - 5 * HOUR_MS, { mistyped: false }),
    {
      at: now - 5 * HOUR_MS + 120_000,
      type: "settings.test_mail",
      actor: STAFF,
      clientAddress: OFFICE,
      detail: { outcome: "test-mail-sent" },
    },
    ...others.map((k, i) => issued(k, address(i))),
    ...revokedByStaff.map((k) => ({
      at: k.revoked_at!,
      type: "key.revoked" as const,
      actor: STAFF,
      subject: k.id,
      clientAddress: OFFICE,
    })),
  ];
  if (newest && rotated) events.push(...(await rotation(store, newest, rotated, address(3))));
  else if (newest) events.push(issued(newest, address(3)));
  events.sort((a, b) => a.at - b.at);
  let at = 0;
  const audit = new AuditLog(store, () => at);
  for (const { at: when, ...event } of events) {
    at = when;
    await audit.record(event);
  }
  return events.length;
}
