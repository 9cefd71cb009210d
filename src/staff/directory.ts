import { eq } from "drizzle-orm";
import type { AuditLog } from "../audit/service.ts";
import type { Database } from "../db/index.ts";
import { staffMembers, staffSessions } from "../db/schema.ts";
import { AppError } from "../errors.ts";
import { normalizeEmail } from "../issuance/email.ts";

/** One staff member and where the entry comes from. */
export interface StaffMember {
  email: string;
  source: "config" | "database";
  addedAt: number | null;
  addedBy: string | null;
}

/** Who is staff: IMGPRESS_STAFF_EMAILS plus the addresses added with the CLI or the API. */
export class StaffDirectory {
  constructor(
    private readonly db: Database,
    private readonly configured: readonly string[],
    private readonly audit: AuditLog,
    private readonly now: () => number,
  ) {}

  /** Every staff member, configured ones first. */
  async list(): Promise<StaffMember[]> {
    const rows = await this.db.select().from(staffMembers).orderBy(staffMembers.email);
    const fromConfig = this.configured.map((email) => ({ email, source: "config" as const, addedAt: null, addedBy: null }));
    return [...fromConfig, ...rows.filter((r) => !this.configured.includes(r.email)).map((r) => ({ ...r, source: "database" as const }))];
  }

  /** True when at least one staff member exists (otherwise /internal/ explains how to add one). */
  async any(): Promise<boolean> {
    return this.configured.length > 0 || (await this.db.select().from(staffMembers).limit(1)).length > 0;
  }

  /** True when the normalised address is staff. */
  async isStaff(email: string): Promise<boolean> {
    if (this.configured.includes(email)) return true;
    return (await this.db.select().from(staffMembers).where(eq(staffMembers.email, email)).limit(1)).length > 0;
  }

  /** Adds an address; false when it already was staff. `by` is "cli" or the acting staff address. */
  async add(raw: string, by: string, clientAddress = ""): Promise<{ email: string; added: boolean }> {
    const email = normalizeEmail(raw);
    if (await this.isStaff(email)) return { email, added: false };
    await this.db.insert(staffMembers).values({ email, addedAt: this.now(), addedBy: by }).onConflictDoNothing();
    await this.audit.record({ type: "staff.added", actor: by, subject: email, clientAddress });
    return { email, added: true };
  }

  /** Removes an address and ends all its sessions at once; false when it was not staff. */
  async remove(raw: string, by: string, clientAddress = ""): Promise<{ email: string; removed: boolean }> {
    const email = normalizeEmail(raw);
    if (this.configured.includes(email)) {
      throw new AppError(409, "STAFF_IN_CONFIG", `${email} is listed in IMGPRESS_STAFF_EMAILS: remove it there and restart.`);
    }
    const [deleted] = await this.db.batch([
      this.db.delete(staffMembers).where(eq(staffMembers.email, email)),
      this.db.delete(staffSessions).where(eq(staffSessions.email, email)),
    ]);
    if (deleted.rowsAffected === 0) return { email, removed: false };
    await this.audit.record({ type: "staff.removed", actor: by, subject: email, clientAddress });
    return { email, removed: true };
  }
}
