// The database's part of a conversion request, in-process on the service's own classes
// (RequestAuthenticator, KeyService) over each store: statements per request and time per request.
// Bearer: the key lookup. Signed: the key lookup, the HMACs and the replay INSERT. Usage is only
// recorded in memory on the request path (written every IMGPRESS_USAGE_FLUSH_S), as in the server.
import type { SqliteStore } from "../../src/data/db/sqlite.ts";
import { authHeaders, type Keys, multipart } from "../../test/support/imgpress.ts";
import type { servicesOn } from "./auth-cost.ts";
import { type StatementCount, totalCalls } from "./pg-cluster.ts";
import { median } from "./util.ts";

type Services = Awaited<ReturnType<typeof servicesOn>>["services"];

/** Counts statements on one store: `reset`, run requests, `read`. */
export interface StatementCounter {
  reset(): Promise<void>;
  read(): Promise<StatementCount[]>;
}

/** One store under test. */
export interface DbTarget {
  label: string;
  services: Services;
  keys: Keys;
  counter: StatementCounter;
}

/** What one backend's request path costs. */
export interface DbPath {
  /** Requests per scheme whose statements were counted. */
  counted: number;
  /** Statements per request and the statements themselves, per scheme. */
  statements: Record<"bearer" | "signed", { perRequest: number; counts: StatementCount[] }>;
  /** Median ms of authentication per scheme (fromHeaders, plus verifyBody when signed). */
  ms: Record<"bearer" | "signed", number>;
}

/**
 * Counts the libSQL client's calls (each a call into the embedded library: no network, one
 * statement, or one transaction for a batch) by wrapping the methods of the store's own client.
 */
export function sqliteCounter(store: SqliteStore): StatementCounter {
  const counts = new Map<string, number>();
  const client = store.client as unknown as Record<string, (...args: unknown[]) => unknown>;
  for (const method of ["execute", "batch", "executeMultiple", "transaction"]) {
    const original = client[method]!.bind(client);
    client[method] = (...args: unknown[]) => {
      const first = args[0] as string | { sql?: string } | unknown[] | undefined;
      const sql =
        typeof first === "string" ? first : Array.isArray(first) ? `${first.length} statements` : (first?.sql ?? "");
      const key = `${method}: ${sql.replace(/\s+/g, " ").slice(0, 120)}`;
      counts.set(key, (counts.get(key) ?? 0) + 1);
      return original(...args);
    };
  }
  return {
    reset: async () => counts.clear(),
    read: async () => [...counts].map(([query, calls]) => ({ calls, query })).sort((a, b) => b.calls - a.calls),
  };
}

/** One authenticated request's database work, as the convert route does it. */
async function request(t: DbTarget, scheme: "bearer" | "signed", image: Uint8Array): Promise<number> {
  const form = multipart({ format: "webp", quality: "lossy" }, image, "thumb.jpg");
  const headers = new Headers({ "content-type": form.contentType, ...authHeaders(t.keys, scheme, form.body) });
  const t0 = performance.now();
  const credential = await t.services.authenticator.fromHeaders("POST", "/v1/convert", headers);
  await credential.verifyBody(form.body);
  return performance.now() - t0;
}

/** Statements per request (`counted` requests per scheme), then times of `timed` rounds interleaving every target. */
export async function measureDbPaths(
  targets: DbTarget[],
  image: Uint8Array,
  counted: number,
  timed: number,
): Promise<Record<string, DbPath>> {
  const out: Record<string, DbPath> = {};
  for (const t of targets) {
    const statements = {} as DbPath["statements"];
    for (const scheme of ["bearer", "signed"] as const) {
      await request(t, scheme, image); // prepared statements and pooled connections made before counting
      await t.counter.reset();
      for (let i = 0; i < counted; i++) await request(t, scheme, image);
      const counts = await t.counter.read();
      statements[scheme] = { perRequest: totalCalls(counts) / counted, counts };
    }
    out[t.label] = { counted, statements, ms: { bearer: 0, signed: 0 } };
  }
  const ms: Record<string, number[]> = {};
  for (let i = 0; i < timed + 5; i++) {
    for (const t of i % 2 ? targets : [...targets].reverse()) {
      for (const scheme of ["bearer", "signed"] as const) {
        const took = await request(t, scheme, image);
        if (i >= 5) (ms[`${t.label} ${scheme}`] ??= []).push(took);
      }
    }
  }
  for (const t of targets)
    out[t.label]!.ms = { bearer: median(ms[`${t.label} bearer`]!), signed: median(ms[`${t.label} signed`]!) };
  return out;
}
