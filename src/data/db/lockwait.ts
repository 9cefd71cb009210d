import { AsyncLocalStorage } from "node:async_hooks";
import type { Client, InArgs, InStatement, Replicated, ResultSet, Transaction, TransactionMode } from "@libsql/client";

/**
 * The busy timeout each connection keeps: SQLite's busy handler sleeps on the calling thread, which
 * here is the JS thread, so anything longer freezes every request (issue 37: a 5 s timeout made
 * `/health` take 4.8 s). Two milliseconds absorb another process's quick commit without a retry.
 */
export const BUSY_TIMEOUT_MS = 2;
/** The first wait before trying the lock again; doubled after each try, up to LAST_PROBE_MS. */
const FIRST_PROBE_MS = 5;
/**
 * The longest wait between two tries: the delay a write sees after the lock is released. Each try
 * that fails costs the JS thread ~3 ms (the 2 ms busy timeout, then fresh connections: 1.3 ms
 * measured), so a lock costs it ~3 % at this pace.
 */
const LAST_PROBE_MS = 100;

/** SQLite's "another connection holds the lock": SQLITE_BUSY or SQLITE_LOCKED, any extended code. */
export function isLockBusy(err: unknown): boolean {
  const code = (err as { code?: unknown } | undefined)?.code;
  return typeof code === "string" && /^SQLITE_(BUSY|LOCKED)/.test(code);
}

const isClientClosed = (err: unknown) => (err as { code?: unknown } | undefined)?.code === "CLIENT_CLOSED";

/** A statement that only reads: it never needs the write lock, so it does not wait behind a known lock. */
const READS = /^\s*(SELECT|EXPLAIN)\b/i;

function lockedError(waitedMs: number): Error {
  // The code is the one SQLite gives, so src/data/db/faults.ts answers 503 STORAGE_UNAVAILABLE.
  return Object.assign(
    new Error(`SQLITE_BUSY: the database stayed locked by another process for ${Math.round(waitedMs)} ms`),
    { code: "SQLITE_BUSY" },
  );
}

/**
 * A libSQL client on a local file whose statements never wait for the lock on the JS thread. A
 * statement that finds the file locked (SQLITE_BUSY after BUSY_TIMEOUT_MS) is retried whole, from
 * a timer, until the lock wait budget of its caller has passed; then its SQLITE_BUSY goes up and
 * becomes 503 STORAGE_UNAVAILABLE. A batch or a transaction that failed was rolled back by the
 * client before it is retried, so nothing is ever half-applied.
 *
 * While the lock is known held, one probe (`BEGIN IMMEDIATE` then `ROLLBACK`) tries it with a
 * backoff and every waiting write waits for that probe rather than trying on its own: the cost of a
 * lock is one probe every 100 ms, whatever the number of waiting requests. Reads never wait (in WAL
 * mode another process's write lock does not stop them).
 *
 * A statement that failed busy stays "in progress" in libsql-js until it is garbage-collected,
 * holding its connection's read snapshot: every later write on that connection fails busy even
 * once the lock is gone, and its reads see old data (tursodatabase/libsql-client-ts#352; seen here
 * with the client alone: every write refused after the lock, until a garbage collection). So each busy failure drops the pool's connections
 * (`renew`), unless an interactive transaction holds one, in which case it is done when the last
 * one ends. An operation caught between borrowing a connection and using it by that drop fails
 * CLIENT_CLOSED before doing anything, and is retried like a busy one.
 */
export class LockWaitingClient implements Client {
  private freed: Promise<void> | null = null;
  private openTransactions = 0;
  private stale = false;
  private readonly waitBudget = new AsyncLocalStorage<number>();

  constructor(
    private readonly inner: Client,
    /** How long a statement may wait for the lock when its caller set no budget (a client request's). */
    private readonly defaultWaitMs: number,
    /** Drops the pool's connections and prepares fresh ones (per-connection PRAGMAs). */
    private readonly renew: () => Promise<void>,
  ) {}

  get closed(): boolean {
    return this.inner.closed;
  }

  get protocol(): string {
    return this.inner.protocol;
  }

  /** Runs `work` with every statement it issues waiting at most `ms` for the lock. */
  withLockWait<T>(ms: number, work: () => Promise<T>): Promise<T> {
    return this.waitBudget.run(ms, work);
  }

  execute(stmt: InStatement): Promise<ResultSet>;
  execute(sql: string, args?: InArgs): Promise<ResultSet>;
  execute(stmtOrSql: InStatement | string, args?: InArgs): Promise<ResultSet> {
    const sql = typeof stmtOrSql === "string" ? stmtOrSql : stmtOrSql.sql;
    return this.run(
      () => (typeof stmtOrSql === "string" ? this.inner.execute(stmtOrSql, args) : this.inner.execute(stmtOrSql)),
      !READS.test(sql),
    );
  }

  batch(stmts: Array<InStatement | [string, InArgs?]>, mode?: TransactionMode): Promise<ResultSet[]> {
    return this.run(() => this.inner.batch(stmts, mode), mode !== "read");
  }

  migrate(stmts: InStatement[]): Promise<ResultSet[]> {
    return this.run(() => this.inner.migrate(stmts), true);
  }

  executeMultiple(sql: string): Promise<void> {
    return this.run(() => this.inner.executeMultiple(sql), true);
  }

  /** Begins an interactive transaction; only its `BEGIN` waits for the lock (a write transaction then holds it). */
  async transaction(mode?: TransactionMode): Promise<Transaction> {
    const tx = await this.run(() => this.inner.transaction(mode), mode !== "read");
    this.openTransactions++;
    return this.tracked(tx);
  }

  sync(): Promise<Replicated> {
    return this.inner.sync();
  }

  close(): void {
    this.inner.close();
  }

  reconnect(): Promise<void> {
    return this.renew();
  }

  /** Runs `op`; on a busy failure waits (off the JS thread) for the lock and runs it again, until the budget is spent. */
  private async run<T>(op: () => Promise<T>, writes: boolean): Promise<T> {
    const started = performance.now();
    const deadline = started + (this.waitBudget.getStore() ?? this.defaultWaitMs);
    for (;;) {
      if (writes && this.freed) await this.waitFree(deadline, started);
      try {
        return await op();
      } catch (err) {
        const busy = isLockBusy(err);
        if (this.inner.closed || !(busy || isClientClosed(err))) throw err;
        if (busy) this.lockSeen();
        if (performance.now() >= deadline) throw err;
        if (busy) await this.waitFree(deadline, started);
      }
    }
  }

  /** Resolves once the probe found the lock free; rejects with SQLITE_BUSY at `deadline`. */
  private async waitFree(deadline: number, started: number): Promise<void> {
    const freed = this.freed;
    if (!freed) return;
    const left = deadline - performance.now();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const outcome =
      left <= 0
        ? "expired"
        : await Promise.race([
            freed.then(() => "freed" as const),
            new Promise<"expired">((resolve) => (timer = setTimeout(() => resolve("expired"), left))),
          ]);
    clearTimeout(timer);
    if (outcome === "expired") throw lockedError(performance.now() - started);
  }

  private lockSeen(): void {
    this.dropConnections();
    this.freed ??= this.probeUntilFree().finally(() => {
      this.freed = null;
    });
  }

  private async probeUntilFree(): Promise<void> {
    for (let delay = FIRST_PROBE_MS; !this.inner.closed; delay = Math.min(delay * 2, LAST_PROBE_MS)) {
      await new Promise((resolve) => setTimeout(resolve, delay));
      try {
        const tx = await this.inner.transaction("write");
        await tx.rollback();
        return;
      } catch (err) {
        // Anything but busy is for the waiting statements to meet and report themselves.
        if (!isLockBusy(err)) return;
        this.dropConnections();
      }
    }
  }

  private dropConnections(): void {
    if (this.openTransactions > 0) {
      this.stale = true;
      return;
    }
    this.stale = false;
    this.renew().catch(() => {});
  }

  /** `tx`, counted open until it commits, rolls back or closes. */
  private tracked(tx: Transaction): Transaction {
    let open = true;
    const settle = () => {
      if (!open) return;
      open = false;
      if (--this.openTransactions === 0 && this.stale) this.dropConnections();
    };
    const settling = <T>(work: () => Promise<T>) => work().finally(settle);
    return {
      execute: (stmt) => tx.execute(stmt),
      batch: (stmts) => tx.batch(stmts),
      executeMultiple: (sql) => tx.executeMultiple(sql),
      rollback: () => settling(() => tx.rollback()),
      commit: () => settling(() => tx.commit()),
      close: () => {
        try {
          tx.close();
        } finally {
          settle();
        }
      },
      get closed() {
        return tx.closed;
      },
    };
  }
}
