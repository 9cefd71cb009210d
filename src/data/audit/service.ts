import { and, desc, eq, gte, lt, lte, sql } from "drizzle-orm";
import type { Database, Store, Tables } from "../db/index.ts";

/** Every kind of audit event (docs/internal.md describes each). */
export const AUDIT_TYPES = [
  "staff.sign_in",
  "staff.sign_in_failed",
  "staff.sign_out",
  "staff.sign_out_everywhere",
  "staff.added",
  "staff.removed",
  "key.issued",
  "key.revoked",
  "settings.secrets_read",
  "settings.test_mail",
  "audit.pruned",
] as const;

/** One kind of audit event. */
export type AuditType = (typeof AUDIT_TYPES)[number];

/** What a caller records; `detail` holds non-secret facts only (never a code, token or key). */
export interface AuditInput {
  type: AuditType;
  actor: string;
  subject?: string;
  clientAddress?: string;
  detail?: Record<string, unknown>;
}

/** A stored event as the CLI and the API show it. */
export interface AuditEvent {
  id: number;
  at: number;
  type: string;
  actor: string;
  subject: string;
  clientAddress: string;
  detail: Record<string, unknown>;
}

/** Filters and paging of `list`: newest first, `before` is the id of the last event of the previous page. */
export interface AuditFilter {
  type?: string;
  actor?: string;
  /** What the event is about, e.g. a key id. */
  subject?: string;
  since?: number;
  until?: number;
  before?: number;
  limit?: number;
}

/** How long the hourly counts of failed sign-ins for addresses that are not staff are kept (or the audit retention, when shorter). */
export const FAILED_SIGN_IN_KEEP_MS = 30 * 86_400_000;
const HOUR_MS = 3_600_000;
/** Events one prune statement deletes at most. */
const PRUNE_SLICE = 5000;

/**
 * The audit trail: the application inserts and reads; only `prune` deletes, events older than the
 * retention (IMGPRESS_AUDIT_RETENTION_DAYS; 0 keeps everything), and says so in an event of its own.
 */
export class AuditLog {
  private readonly db: Database;
  private readonly auditEvents: Tables["auditEvents"];
  private readonly failedSignIns: Tables["failedSignIns"];

  constructor(
    store: Store,
    private readonly now: () => number,
    /** Days an event is kept; 0: every event is kept for good. */
    readonly retentionDays = 0,
  ) {
    this.db = store.db;
    this.auditEvents = store.tables.auditEvents;
    this.failedSignIns = store.tables.failedSignIns;
  }

  /**
   * Counts a wrong staff code typed for `email`, an address that is not staff, in its UTC hour: anyone
   * may type any address, so one event per guess would grow the trail without bound.
   */
  async countFailedSignIn(email: string, clientAddress: string): Promise<void> {
    const hour = Math.floor(this.now() / HOUR_MS) * HOUR_MS;
    const t = this.failedSignIns;
    await this.db
      .insert(t)
      .values({ email, hour, attempts: 1, lastClientAddress: clientAddress })
      .onConflictDoUpdate({
        target: [t.email, t.hour],
        set: { attempts: sql`${t.attempts} + 1`, lastClientAddress: clientAddress },
      });
  }

  /** The hourly counts of failed sign-ins for addresses that are not staff since `since`, newest hour first. */
  failedSignInCounts(
    since: number,
  ): Promise<{ email: string; hour: number; attempts: number; lastClientAddress: string }[]> {
    const t = this.failedSignIns;
    return this.db.select().from(t).where(gte(t.hour, since)).orderBy(desc(t.hour), t.email).limit(500);
  }

  /**
   * Deletes events older than the retention (none when it is 0), announced first by an
   * `audit.pruned` event saying how many go; drops failed sign-in counts past their own keep.
   * Returns the events deleted.
   */
  async prune(): Promise<number> {
    const now = this.now();
    const keepMs = this.retentionDays * 86_400_000;
    const countsBefore = now - (keepMs > 0 ? Math.min(keepMs, FAILED_SIGN_IN_KEEP_MS) : FAILED_SIGN_IN_KEEP_MS);
    await this.db.delete(this.failedSignIns).where(lt(this.failedSignIns.hour, countsBefore));
    if (keepMs === 0) return 0;
    const before = now - keepMs;
    const t = this.auditEvents;
    const [{ going } = { going: 0 }] = await this.db
      .select({ going: sql<number>`count(*)` })
      .from(t)
      .where(lt(t.at, before));
    if (Number(going) === 0) return 0;
    // Recorded before the deletion: one cut short (a stop, a crash) still left its trace, and the next prune finishes it.
    await this.record({
      type: "audit.pruned",
      actor: "imgpress",
      detail: { deleted: Number(going), before: new Date(before).toISOString(), retentionDays: this.retentionDays },
    });
    let deleted = 0;
    // In slices: the first prune of a years-old trail must not hold the database (or, on a local file, the event loop) for long.
    for (;;) {
      const slice = await this.db.select({ id: t.id }).from(t).where(lt(t.at, before)).orderBy(t.id).limit(PRUNE_SLICE);
      if (slice.length === 0) break;
      await this.db.delete(t).where(and(lt(t.at, before), lte(t.id, slice.at(-1)!.id)));
      deleted += slice.length;
    }
    return deleted;
  }

  /** Appends one event. */
  async record(input: AuditInput): Promise<void> {
    await this.insert(this.db, [input]);
  }

  /**
   * The statement appending `inputs` on `db`, for a caller to run inside the transaction of the
   * change it records: a crash then keeps both or neither (no issued or revoked key without its event).
   */
  insert(db: Pick<Database, "insert">, inputs: AuditInput[]) {
    const at = this.now();
    return db.insert(this.auditEvents).values(
      inputs.map((input) => ({
        at,
        type: input.type,
        actor: input.actor,
        subject: input.subject ?? "",
        clientAddress: input.clientAddress ?? "",
        detail: JSON.stringify(input.detail ?? {}),
      })),
    );
  }

  /** Events matching `filter`, newest first (at most 500 per page). */
  list(filter: AuditFilter = {}): Promise<AuditEvent[]> {
    return this.select(filter, pageSize(filter));
  }

  /** One page of `list` and the `before` of the next page: null when no older event matches (one row is read ahead to know). */
  async page(filter: AuditFilter = {}): Promise<{ events: AuditEvent[]; nextBefore: number | null }> {
    const size = pageSize(filter);
    const rows = await this.select(filter, size + 1);
    const events = rows.slice(0, size);
    return { events, nextBefore: rows.length > size ? events.at(-1)!.id : null };
  }

  private async select(filter: AuditFilter, limit: number): Promise<AuditEvent[]> {
    const { auditEvents } = this;
    const rows = await this.db
      .select()
      .from(auditEvents)
      .where(
        and(
          filter.type ? eq(auditEvents.type, filter.type) : undefined,
          filter.actor ? eq(auditEvents.actor, filter.actor) : undefined,
          filter.subject ? eq(auditEvents.subject, filter.subject) : undefined,
          filter.since === undefined ? undefined : gte(auditEvents.at, filter.since),
          filter.until === undefined ? undefined : lte(auditEvents.at, filter.until),
          filter.before === undefined ? undefined : lt(auditEvents.id, filter.before),
        ),
      )
      .orderBy(desc(auditEvents.id))
      .limit(limit);
    return rows.map((r) => ({ ...r, detail: JSON.parse(r.detail) as Record<string, unknown> }));
  }
}

const pageSize = (filter: AuditFilter) => Math.min(Math.max(filter.limit ?? 100, 1), 500);

/**
 * Parses an ISO date or date-time into Unix ms; NaN when malformed or when its day does not exist
 * (Date.parse rolls 2026-02-31 over into March instead of refusing it).
 */
export function parseIsoDate(text: string): number {
  const at = Date.parse(text);
  const day = /^(\d{4})-(\d{2})-(\d{2})/.exec(text);
  if (Number.isNaN(at) || !day) return day ? Number.NaN : at;
  const [y, m, d] = [Number(day[1]), Number(day[2]), Number(day[3])];
  const probe = new Date(Date.UTC(y, m - 1, d));
  return probe.getUTCFullYear() === y && probe.getUTCMonth() === m - 1 && probe.getUTCDate() === d ? at : Number.NaN;
}

/** Parses a `--since` / `since` duration such as `90m`, `24h`, `7d` into milliseconds; null when malformed. */
export function parseDuration(text: string): number | null {
  const match = /^(\d+)\s*(s|m|h|d)$/.exec(text.trim());
  if (!match) return null;
  return Number(match[1]) * { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }[match[2] as "s" | "m" | "h" | "d"];
}
