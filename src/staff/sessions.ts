import { Buffer } from "node:buffer";
import { and, desc, eq, getTableColumns, lt, or } from "drizzle-orm";
import { hmacSha256Hex, randomBytes, sha256Hex, toBase64Url } from "../core/crypto.ts";
import type { Database, Store, Tables } from "../data/db/index.ts";
import type { staffSessions } from "../data/db/schema.ts";
import type { StaffDirectory } from "./directory.ts";

/** A live session as a route sees it. */
export interface StaffSession {
  id: string;
  email: string;
  /** The CSRF token bound to this session (forms carry it as `csrf`, scripts as `X-CSRF-Token`). */
  csrf: string;
}

/** A session row for listing (never the token or its hash). */
export type SessionRow = Omit<typeof staffSessions.$inferSelect, "tokenHash">;

/** Lifetimes in seconds: idle timeout and absolute lifetime. */
export interface SessionLimits {
  idleS: number;
  maxS: number;
}

/**
 * Staff sessions: a random 256-bit token in the cookie, only its SHA-256 in the database. A token
 * opens its session only while it is neither idle too long nor too old, and its owner still staff.
 */
export class SessionService {
  private readonly db: Database;
  private readonly t: Tables;

  constructor(
    store: Store,
    private readonly staff: StaffDirectory,
    /** Key of the CSRF HMAC, derived from the master key. */
    private readonly csrfKey: Uint8Array,
    private readonly limits: SessionLimits,
    private readonly now: () => number,
  ) {
    this.db = store.db;
    this.t = store.tables;
  }

  /** Starts a session; returns the token for the cookie (shown nowhere else). */
  async create(email: string, clientAddress: string, userAgent: string): Promise<{ id: string; token: string }> {
    const token = toBase64Url(randomBytes(32));
    const id = `ses_${Buffer.from(randomBytes(8)).toString("hex")}`;
    const now = this.now();
    await this.db.insert(this.t.staffSessions).values({
      id,
      tokenHash: await sha256Hex(token),
      email,
      clientAddress,
      userAgent: userAgent.slice(0, 300),
      createdAt: now,
      lastSeenAt: now,
    });
    return { id, token };
  }

  /** The session of a cookie token, or null (and the row deleted) when it is unknown, expired or its owner left. */
  async authenticate(token: string): Promise<StaffSession | null> {
    if (!/^[A-Za-z0-9_-]{43}$/.test(token)) return null;
    const [row] = await this.db
      .select()
      .from(this.t.staffSessions)
      .where(eq(this.t.staffSessions.tokenHash, await sha256Hex(token)));
    if (!row) return null;
    const now = this.now();
    const expired = now - row.lastSeenAt > this.limits.idleS * 1000 || now - row.createdAt > this.limits.maxS * 1000;
    if (expired || !(await this.staff.isStaff(row.email))) {
      await this.db.delete(this.t.staffSessions).where(eq(this.t.staffSessions.id, row.id));
      return null;
    }
    await this.db.update(this.t.staffSessions).set({ lastSeenAt: now }).where(eq(this.t.staffSessions.id, row.id));
    return { id: row.id, email: row.email, csrf: await this.csrfToken(token) };
  }

  /** Ends one session of `email`; false when there was none with that id. */
  async end(email: string, id: string): Promise<boolean> {
    const ended = await this.db
      .delete(this.t.staffSessions)
      .where(and(eq(this.t.staffSessions.email, email), eq(this.t.staffSessions.id, id)))
      .returning({ id: this.t.staffSessions.id });
    return ended.length > 0;
  }

  /** Ends every session of `email` ("sign out everywhere"); returns how many. */
  async endAll(email: string): Promise<number> {
    const ended = await this.db
      .delete(this.t.staffSessions)
      .where(eq(this.t.staffSessions.email, email))
      .returning({ id: this.t.staffSessions.id });
    return ended.length;
  }

  /** The sessions of `email`, newest first. */
  async list(email: string): Promise<SessionRow[]> {
    const { tokenHash: _hash, ...columns } = getTableColumns(this.t.staffSessions);
    return this.db
      .select(columns)
      .from(this.t.staffSessions)
      .where(eq(this.t.staffSessions.email, email))
      .orderBy(desc(this.t.staffSessions.createdAt));
  }

  /** Deletes sessions past their idle timeout or absolute lifetime. */
  async prune(): Promise<void> {
    const now = this.now();
    await this.db
      .delete(this.t.staffSessions)
      .where(
        or(
          lt(this.t.staffSessions.lastSeenAt, now - this.limits.idleS * 1000),
          lt(this.t.staffSessions.createdAt, now - this.limits.maxS * 1000),
        ),
      );
  }

  private csrfToken(token: string): Promise<string> {
    return hmacSha256Hex(this.csrfKey, token);
  }
}
