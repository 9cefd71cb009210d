// The demo audit trail (screenshots) against the real thing: every event the demo writes has the
// shape of an event the real flows write (same actor, subject and address kinds, same detail fields).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { sql } from "drizzle-orm";
import type { AuditEvent } from "../../src/data/audit/service.ts";
import { seedDemoAudit } from "./demo-audit.ts";
import { seedDemoData } from "./demo-usage.ts";
import { createHarness, type Harness } from "./harness.ts";
import { form, nextCode, staffSignIn } from "./staff.ts";

const STAFF = "ops@example.com";
const COLLEAGUE = "colleague@example.com";
const IP = "203.0.113.9";

/** What a value is, not what it says: an address, a key id, a session id, "cli", empty… */
function kind(value: unknown): string {
  if (Array.isArray(value)) return `[${[...new Set(value.map(kind))].join("|")}]`;
  if (typeof value !== "string") return typeof value;
  if (value === "" || value === "cli") return value || "empty";
  if (/^key_[0-9a-f]{16}$/.test(value)) return "key id";
  if (/^ses_[0-9a-f]{16}$/.test(value)) return "session id";
  if (/^[^@\s]+@[^@\s]+$/.test(value)) return "e-mail";
  return "text";
}

/** An event's shape: its type, the kinds of actor, subject and address, and each detail field's kind. */
function shape(e: AuditEvent): string {
  const detail = Object.keys(e.detail)
    .sort()
    .map((k) => `${k}:${kind(e.detail[k])}`);
  const address = e.clientAddress ? "address" : "no address";
  return `${e.type} actor=${kind(e.actor)} subject=${kind(e.subject)} ${address} {${detail.join(",")}}`;
}

// The real flows whose events the demo imitates, each as a user or an operator does it.
async function realEvents(h: Harness): Promise<AuditEvent[]> {
  const s = h.services;
  await s.staff.add(STAFF, "cli");
  const login = await staffSignIn(h, STAFF);
  await s.staff.add(COLLEAGUE, STAFF, IP);
  await s.staffTestMail.send(STAFF, IP);
  const [session] = await s.sessions.list(STAFF);
  await s.staffSignIn.signOut({ id: session!.id, email: STAFF }, IP);
  // A mistyped code (staff pages answer only their allowlist: loopback here).
  const before = h.smtp.messages.length;
  await h.request("POST", "/internal/login", form({ email: COLLEAGUE }));
  await nextCode(h, COLLEAGUE, before); // its mail in the sink, so it is not taken for a later one
  const typo = await h.request("POST", "/internal/login/code", form({ email: COLLEAGUE, code: "000000" }));
  expect(typo.status).toBe(401);
  await h.issueKey("owner@example.org", "https://blog.example.org", { ip: IP });
  h.clock.advance(61_000); // past the per-address wait between two codes
  await h.issueKey("owner@example.org", "https://blog.example.org", { ip: IP }); // a rotation
  await h.issueKey("nosite@example.org", undefined, { ip: IP });
  const [victim] = await h.store.all<{ id: string }>(sql`SELECT id FROM api_keys WHERE revoked_at IS NULL LIMIT 1`);
  await s.revocation.revoke(victim!.id, login.email, IP);
  return (await s.audit.page({ limit: 200 })).events;
}

describe("demo audit trail", () => {
  let real: Harness;
  let demo: Harness;
  let realShapes: Set<string>;
  let demoEvents: AuditEvent[];

  beforeAll(async () => {
    real = await createHarness();
    demo = await createHarness();
    realShapes = new Set((await realEvents(real)).map(shape));
    // Not a whole second, as the screenshots' clock is not: ids and times must not depend on it.
    const now = demo.clock.now() + 123;
    await seedDemoData(demo.sqlite.db, { keys: 120, days: 60, busyKeys: 3, now, seed: 7 });
    await seedDemoAudit(demo.store, { now });
    demoEvents = (await demo.services.audit.page({ limit: 200 })).events;
  });
  afterAll(async () => {
    await real?.close();
    await demo?.close();
  });

  test("every demo event has the shape of a real one", () => {
    expect(demoEvents.length).toBeGreaterThan(10);
    const unreal = demoEvents.map(shape).filter((s) => !realShapes.has(s));
    expect(unreal).toEqual([]);
  });

  test("the demo shows a rotation, a staff revocation, sign-ins and a mistyped code", () => {
    const shapes = new Set(demoEvents.map(shape));
    for (const type of ["staff.sign_in", "staff.sign_in_failed", "staff.added", "settings.test_mail"])
      expect([...shapes].some((s) => s.startsWith(`${type} `))).toBe(true);
    expect(demoEvents.some((e) => e.type === "key.issued" && Array.isArray(e.detail.replaces))).toBe(true);
    expect(demoEvents.some((e) => e.type === "key.revoked" && e.detail.reason === "rotated")).toBe(true);
    expect(demoEvents.some((e) => e.type === "key.revoked" && e.actor === STAFF)).toBe(true);
  });

  test("key events name real keys at the times their rows say", async () => {
    const keys = new Map(
      (
        await demo.store.all<{ id: string; created_at: number; revoked_at: number | null; email: string }>(
          sql`SELECT id, created_at, revoked_at, email FROM api_keys`,
        )
      ).map((k) => [k.id, k]),
    );
    for (const e of demoEvents.filter((e) => e.type.startsWith("key."))) {
      const key = keys.get(e.subject);
      expect(key).toBeDefined();
      expect(e.at).toBe(e.type === "key.issued" ? key!.created_at : key!.revoked_at!);
      if (e.type === "key.issued") expect(e.actor).toBe(key!.email);
    }
    const rotated = demoEvents.find((e) => e.type === "key.revoked" && e.detail.reason === "rotated")!;
    const [old, next] = [keys.get(rotated.subject)!, keys.get(rotated.detail.replacedBy as string)!];
    expect(old.email).toBe(next.email);
    expect(old.created_at).toBeLessThan(next.created_at);
  });
});
