import { statfs } from "node:fs/promises";
import sharp from "sharp";
import type { Logger } from "../../core/log.ts";
import { driverMessage } from "../../data/db/faults.ts";
import type { Database, Store } from "../../data/db/index.ts";
import type { ReadinessChecks as ReadinessChecksModel } from "./model.ts";

/** `ok`, or what is wrong, per check. */
export type ReadinessChecks = typeof ReadinessChecksModel.static;

/** The answer of one readiness probe. */
export interface ReadinessReport {
  ready: boolean;
  checks: ReadinessChecks;
}

/** Below this much free space in the data folder's file system the instance reports not ready. */
const MIN_FREE_BYTES = 1024 * 1024;
/**
 * The probe's write gives up after this, or IMGPRESS_DATABASE_TIMEOUT_S when shorter: before a
 * prober does (imgpress health waits 8 s), yet as long as a slow but working database server may
 * need under load (2 s took every instance of such a database out of the balancer).
 */
const DATABASE_CHECK_MS = 5000;
/**
 * How long the probe's write waits for a lock another process or session holds (a backup, an
 * operator's sqlite3 or psql): a locked database cannot take the writes of new clients, so the
 * instance says so within a second, as a slow one is not (that wait is DATABASE_CHECK_MS).
 */
export const READY_LOCK_WAIT_MS = 500;
/** Probes within this window share one database write (a flood of probes is one write a second). */
const DATABASE_CACHE_MS = 1000;
/** A working libvips stays working; re-encoding every few seconds is enough to notice it break. */
const LIBVIPS_CACHE_MS = 5000;

/**
 * Whether this instance should receive traffic: the database commits a write, the data folder
 * has room, libvips encodes, and the instance is not draining (`draining`, read from the
 * lifecycle: once a graceful stop begins the load balancer stops sending new requests).
 * The public answer names what failed; the driver's own message (host names, users, paths) goes
 * to the log only, once per change, since probes arrive every few seconds.
 */
export class Readiness {
  private database?: { at: number; result: Promise<string> };
  private libvips?: { at: number; result: Promise<string> };
  private readonly logged = new Map<string, string>();

  constructor(
    private readonly store: Store,
    /** The folder of a local database file; null for a remote libSQL server (no disk to check). */
    private readonly dataFolder: string | null,
    private readonly draining: () => boolean = () => false,
    /** Where the cause of a failed check goes (the answer itself names only the check). */
    private readonly logger?: Logger,
    private readonly clock: () => number = () => performance.now(),
  ) {}

  /** Runs (or reuses recent results of) every check. */
  async check(): Promise<ReadinessReport> {
    const now = this.clock();
    if (!this.database || now - this.database.at >= DATABASE_CACHE_MS)
      this.database = { at: now, result: this.checkDatabase() };
    if (!this.libvips || now - this.libvips.at >= LIBVIPS_CACHE_MS)
      this.libvips = { at: now, result: this.checkLibvips() };
    const [database, storage, libvips] = await Promise.all([
      this.database.result,
      this.checkStorage(),
      this.libvips.result,
    ]);
    // A failure is not cached: the next probe tries again, so recovery shows at once.
    if (database !== "ok") this.database = undefined;
    if (libvips !== "ok") this.libvips = undefined;
    const checks = { database, storage, libvips, draining: this.draining() ? "shutting down" : "ok" };
    for (const [name, value] of Object.entries(checks))
      if (value === "ok" && this.logged.delete(name)) this.logger?.info("readiness check ok again", { check: name });
    return { ready: Object.values(checks).every((v) => v === "ok"), checks };
  }

  private async checkDatabase(): Promise<string> {
    try {
      // First: it names the cause, where the write below would fail as a bare storage fault (src/data/db/sqlite.ts refuses it).
      const lost = await this.store.fileLost();
      if (lost) return this.failing("database", "database file removed or replaced", lost);
      const at = Date.now();
      const { heartbeat } = this.store.tables;
      // Bounded: a frozen database server must not hold the probe (nor pile up writes behind it).
      const beat = (db: Database) => [
        db.insert(heartbeat).values({ id: 1, at }).onConflictDoUpdate({ target: heartbeat.id, set: { at } }),
      ];
      await this.store.bounded(this.store.batch(beat, { lockWaitMs: READY_LOCK_WAIT_MS }), DATABASE_CHECK_MS);
      return "ok";
    } catch (err) {
      return this.failed("database", "write failed", err);
    }
  }

  // A one-row write can succeed on a full disk (SQLite reuses its WAL file), so free space is checked too.
  private async checkStorage(): Promise<string> {
    if (this.dataFolder === null) return "ok";
    try {
      const fs = await statfs(this.dataFolder);
      const free = Number(fs.bavail) * Number(fs.bsize);
      // Logged once with a cause that does not change with every byte written, not at every probe.
      return free >= MIN_FREE_BYTES
        ? "ok"
        : this.failing(
            "storage",
            `only ${free} bytes free in the data folder`,
            `less than ${MIN_FREE_BYTES} bytes free in ${this.dataFolder}`,
          );
    } catch (err) {
      return this.failed("storage", "cannot inspect the data folder", err);
    }
  }

  private async checkLibvips(): Promise<string> {
    try {
      await sharp({ create: { width: 8, height: 8, channels: 3, background: "#808080" } })
        .webp()
        .toBuffer();
      return "ok";
    } catch (err) {
      return this.failed("libvips", "encode failed", err);
    }
  }

  /** The public text of a check failed by `err`; the cause is logged when it differs from the last one logged. */
  private failed(check: string, what: string, err: unknown): string {
    return this.failing(check, what, driverMessage(err));
  }

  private failing(check: string, what: string, fault: string): string {
    if (this.logged.get(check) !== fault) {
      this.logged.set(check, fault);
      this.logger?.warn("readiness check failing", { check, fault });
    }
    return what;
  }
}
