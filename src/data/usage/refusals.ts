import { and, eq, lt, sql } from "drizzle-orm";
import { DAY_MS, HOUR_MS } from "../../core/durations.ts";
import { API_PREFIX } from "../../core/http/paths.ts";
import type { ResponseObserver } from "../../core/http/serve.ts";
import { rateLimitSubject } from "../../core/ipallow.ts";
import type { Logger } from "../../core/log.ts";
import type { BatchStatement, Database, Store } from "../db/index.ts";
import { MAX_RANGE_DAYS } from "./model.ts";

/** The statuses counted as refused on the public routes (bad credentials, forbidden, too large, wrong type, too many). */
export const REFUSED_STATUSES: ReadonlySet<number> = new Set([401, 403, 413, 415, 429]);
/** Clients (keys or addresses) kept by name per hour; the rest of the hour's refusals are summed as "other". */
export const TOP_CLIENTS_PER_HOUR = 20;
/** Distinct clients of one hour held in memory between flushes; later ones count straight into "other". */
const MAX_TRACKED_PER_HOUR = 1_000;

/** Whether an answer is a refusal of a public route (a status of REFUSED_STATUSES under API_PREFIX). */
export function isRefusal(request: Request, response: Response): boolean {
  if (!REFUSED_STATUSES.has(response.status)) return false;
  return (URL.parse(request.url)?.pathname ?? "").startsWith(`${API_PREFIX}/`);
}

/** Who was refused: the key the request named (active or revoked), else its address, or everyone past the top N. */
export type RefusedKind = "key" | "address" | "other";

interface Tally {
  kind: RefusedKind;
  client: string;
  total: number;
  lastAt: number;
  codes: Map<string, number>;
}

/** One hour's refusals waiting for a flush, and which clients the hour already names in the database. */
interface HourState {
  pending: Map<string, Tally>;
  admitted: Set<string> | null;
}

const OTHER = "other|";

/**
 * Counts refused requests of the public routes per hour, client and code in memory and writes them
 * with upserts at each flush, like the usage recorder. Bounded: an hour names at most
 * TOP_CLIENTS_PER_HOUR clients (the largest when its first flush runs, then the first to come),
 * everything else is one "other" client, so a spray of addresses adds (N + 1) × codes rows at most.
 */
export class RefusalRecorder {
  private hours = new Map<number, HourState>();
  private chain: Promise<void> = Promise.resolve();

  constructor(
    private readonly store: Store,
    private readonly logger: Logger,
    private readonly clientIp: (request: Request) => string,
    private readonly now: () => number = Date.now,
  ) {}

  /** The response observer: counts a refused answer of a public route; never throws. */
  readonly observer: ResponseObserver = (request, response, meta) => {
    if (!isRefusal(request, response)) return;
    const code = meta.errorCode ?? `HTTP_${response.status}`;
    if (meta.keyId) this.record("key", meta.keyId, code);
    else this.record("address", rateLimitSubject(this.clientIp(request)), code);
  };

  /** Adds one refusal; synchronous, never touches the database. */
  record(kind: RefusedKind, client: string, code: string, at = this.now()): void {
    const hour = Math.floor(at / HOUR_MS) * HOUR_MS;
    let state = this.hours.get(hour);
    if (!state) this.hours.set(hour, (state = { pending: new Map(), admitted: null }));
    let id = `${kind}|${client}`;
    if (!state.pending.has(id) && state.pending.size >= MAX_TRACKED_PER_HOUR) id = OTHER;
    let tally = state.pending.get(id);
    if (!tally) state.pending.set(id, (tally = id === OTHER ? blank("other", "") : blank(kind, client)));
    tally.total++;
    tally.lastAt = Math.max(tally.lastAt, at);
    tally.codes.set(code, (tally.codes.get(code) ?? 0) + 1);
  }

  /** Writes what was counted; flushes run one after another. Rejects when the write failed (the counts are kept). */
  flush(): Promise<void> {
    const run = this.chain.then(() => this.flushOnce());
    this.chain = run.catch(() => {});
    return run;
  }

  /** A flush whose failure is logged, not thrown (the periodic one: the usage recorder's timer runs it after its own). */
  flushLogged(): Promise<void> {
    return this.flush().catch((err: Error) =>
      this.logger.warn("refused-request counts not written; kept for the next flush", { error: err.message }),
    );
  }

  /** Deletes hours past the usage retention; returns how many rows went. */
  async prune(): Promise<number> {
    const cutoff = Math.floor((this.now() - MAX_RANGE_DAYS * DAY_MS) / HOUR_MS) * HOUR_MS;
    const { refusedHourly, refusedDailyTotal } = this.store.tables;
    // A day is kept while any of its hours is.
    const [gone] = await this.store.batch((db) => [
      db.delete(refusedHourly).where(lt(refusedHourly.hour, cutoff)),
      db.delete(refusedDailyTotal).where(lt(refusedDailyTotal.day, Math.floor(cutoff / DAY_MS) * DAY_MS)),
    ]);
    return gone ?? 0;
  }

  private async flushOnce(): Promise<void> {
    const current = Math.floor(this.now() / HOUR_MS) * HOUR_MS;
    for (const [hour, state] of [...this.hours]) {
      if (state.pending.size === 0) {
        // An hour past is done: its names are not needed again (a late refusal reloads them).
        if (hour < current) this.hours.delete(hour);
        continue;
      }
      const admitted = (state.admitted ??= await this.namedIn(hour));
      const batch = state.pending;
      state.pending = new Map();
      try {
        await this.store.batch((db) => this.statements(db, hour, fold(batch, admitted)));
      } catch (err) {
        // Put the counts back, merged with those recorded meanwhile.
        for (const [id, tally] of batch) {
          const fresh = state.pending.get(id);
          state.pending.set(id, fresh ? addInto(fresh, tally) : tally);
        }
        throw err;
      }
    }
  }

  /** The clients an hour already names in the database (another instance, or before a restart). */
  private async namedIn(hour: number): Promise<Set<string>> {
    const t = this.store.tables.refusedHourly;
    const rows = await this.store.db
      .selectDistinct({ kind: t.kind, client: t.client })
      .from(t)
      .where(and(eq(t.hour, hour), sql`${t.kind} <> 'other'`));
    return new Set(rows.map((r) => `${r.kind}|${r.client}`));
  }

  private statements(db: Database, hour: number, tallies: Tally[]): BatchStatement[] {
    const { refusedHourly: t, refusedDailyTotal: d } = this.store.tables;
    const rows = tallies.flatMap((x) =>
      [...x.codes].map(([code, count]) => ({ hour, kind: x.kind, client: x.client, code, count, lastAt: x.lastAt })),
    );
    if (rows.length === 0) return [];
    const byCode = new Map<string, number>();
    for (const r of rows) byCode.set(r.code, (byCode.get(r.code) ?? 0) + r.count);
    const day = Math.floor(hour / DAY_MS) * DAY_MS;
    return [
      db
        .insert(d)
        .values([...byCode].map(([code, count]) => ({ day, code, count })))
        .onConflictDoUpdate({ target: [d.day, d.code], set: { count: sql`${d.count} + excluded.count` } }),
      db
        .insert(t)
        .values(rows)
        .onConflictDoUpdate({
          target: [t.hour, t.kind, t.client, t.code],
          set: {
            count: sql`${t.count} + excluded.count`,
            lastAt: sql`CASE WHEN ${t.lastAt} > excluded.last_at THEN ${t.lastAt} ELSE excluded.last_at END`,
          },
        }),
    ];
  }
}

function blank(kind: RefusedKind, client: string): Tally {
  return { kind, client, total: 0, lastAt: 0, codes: new Map() };
}

/** Adds `b`'s counts to `into`; returns `into`. */
function addInto(into: Tally, b: Tally): Tally {
  into.total += b.total;
  into.lastAt = Math.max(into.lastAt, b.lastAt);
  for (const [code, n] of b.codes) into.codes.set(code, (into.codes.get(code) ?? 0) + n);
  return into;
}

/** The tallies to write: named clients as they are (up to the hour's limit, largest first), the rest summed as "other". */
function fold(pending: Map<string, Tally>, admitted: Set<string>): Tally[] {
  const other = blank("other", "");
  const named: Tally[] = [];
  for (const [id, tally] of [...pending].sort((a, b) => b[1].total - a[1].total)) {
    if (id !== OTHER && (admitted.has(id) || admitted.size < TOP_CLIENTS_PER_HOUR)) {
      admitted.add(id);
      named.push(tally);
      continue;
    }
    addInto(other, tally);
  }
  return other.total ? [...named, other] : named;
}
