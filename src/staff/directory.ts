import { eq } from "drizzle-orm";
import { normalizeEmail } from "../core/email.ts";
import { AppError } from "../core/errors.ts";
import type { AuditLog } from "../data/audit/service.ts";
import type { Database, Store, Tables } from "../data/db/index.ts";

/** One staff member and where the entry comes from. */
export interface StaffMember {
  email: string;
  source: "config" | "database";
  addedAt: number | null;
  addedBy: string | null;
}

/** Who is staff: IMGPRESS_STAFF_EMAILS plus the addresses added with the CLI or the API. */
export class StaffDirectory {
  private readonly db: Database;
  private readonly t: Tables;

  constructor(
    private readonly store: Store,
    private readonly configured: readonly string[],
    private readonly audit: AuditLog,
    private readonly now: () => number,
  ) {
    this.db = store.db;
    this.t = store.tables;
  }

  /** Every staff member, configured ones first. */
  async list(): Promise<StaffMember[]> {
    const rows = await this.db.select().from(this.t.staffMembers).orderBy(this.t.staffMembers.email);
    const fromConfig = this.configured.map((email) => ({
      email,
      source: "config" as const,
      addedAt: null,
      addedBy: null,
    }));
    return [
      ...fromConfig,
      ...rows.filter((r) => !this.configured.includes(r.email)).map((r) => ({ ...r, source: "database" as const })),
    ];
  }

  /** True when at least one staff member exists (otherwise /internal/ explains how to add one). */
  async any(): Promise<boolean> {
    return this.configured.length > 0 || (await this.db.select().from(this.t.staffMembers).limit(1)).length > 0;
  }

  /** True when the normalised address is staff. */
  async isStaff(email: string): Promise<boolean> {
    if (this.configured.includes(email)) return true;
    return (
      (await this.db.select().from(this.t.staffMembers).where(eq(this.t.staffMembers.email, email)).limit(1)).length > 0
    );
  }

  /** Adds an address; false when it already was staff. `by` is "cli" or the acting staff address. */
  async add(raw: string, by: string, clientAddress = ""): Promise<{ email: string; added: boolean }> {
    const email = normalizeEmail(raw);
    if (this.configured.includes(email)) return { email, added: false };
    // One statement decides: of two instances adding the same address at once, one adds and audits.
    const inserted = await this.db
      .insert(this.t.staffMembers)
      .values({ email, addedAt: this.now(), addedBy: by })
      .onConflictDoNothing()
      .returning({ email: this.t.staffMembers.email });
    if (inserted.length === 0) return { email, added: false };
    await this.audit.record({ type: "staff.added", actor: by, subject: email, clientAddress });
    return { email, added: true };
  }

  /** Removes an address and ends all its sessions at once; false when it was not staff. */
  async remove(raw: string, by: string, clientAddress = ""): Promise<{ email: string; removed: boolean }> {
    const email = normalizeEmail(raw);
    if (this.configured.includes(email)) {
      throw new AppError(
        409,
        "STAFF_IN_CONFIG",
        `${email} is listed in IMGPRESS_STAFF_EMAILS: remove it there and restart.`,
      );
    }
    const { staffMembers, staffSessions } = this.t;
    const [deleted] = await this.store.batch((db) => [
      db.delete(staffMembers).where(eq(staffMembers.email, email)),
      db.delete(staffSessions).where(eq(staffSessions.email, email)),
    ]);
    if (deleted === 0) return { email, removed: false };
    await this.audit.record({ type: "staff.removed", actor: by, subject: email, clientAddress });
    return { email, removed: true };
  }
}
