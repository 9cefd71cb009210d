import { normalizeSiteUrl } from "../api/issuance/site.ts";
import { formatBytes } from "../core/bytes.ts";
import type { Config } from "../core/config.ts";
import { emailForLookup, normalizeEmail } from "../core/email.ts";
import { AppError } from "../core/errors.ts";
import { AUDIT_TYPES, parseDuration } from "../data/audit/service.ts";
import { API_KEY_PREFIX, type KeyRow, SECRET_KEY_PREFIX } from "../data/keys/service.ts";
import type { Services } from "../services.ts";
import { describeSettings } from "../staff/settings-view.ts";
import { UsageError } from "./args.ts";
import type { Output } from "./backup.ts";

/** `imgpress keys …` as read from its words and flags. */
export type KeysCommand =
  | { action: "list"; all: boolean; email?: string; json: boolean }
  | { action: "create"; email: string; siteUrl: string; json: boolean }
  | { action: "revoke"; id: string }
  | { action: "revoke-email"; email: string };

/** Reads `imgpress keys …`, or throws the UsageError that says why it cannot (before any database is opened). */
export function readKeysCommand(words: string[], flags: Record<string, string>): KeysCommand {
  const [action, target] = words;
  if (action === "list")
    return {
      action,
      all: flags.all === "true",
      email: flags.email === undefined ? undefined : emailForLookup(flags.email),
      json: flags.json === "true",
    };
  if (action === "create") {
    if (flags.email === undefined)
      throw new UsageError(
        "keys create needs the owner's address: imgpress keys create --email ADDRESS [--site URL] [--json]",
      );
    // Checked as the API checks them, before any database is opened.
    const email = asArgument(() => normalizeEmail(flags.email!));
    const siteUrl = flags.site === undefined ? "" : asArgument(() => normalizeSiteUrl(flags.site!));
    return { action, email, siteUrl, json: flags.json === "true" };
  }
  if (action === "revoke" && target) {
    // A pasted key, not its id: never echo it (terminals and logs keep what is printed).
    if (target.startsWith(API_KEY_PREFIX) || target.startsWith(SECRET_KEY_PREFIX)) {
      throw new UsageError(
        `that is a key itself, not its id: revoke by the key_… id that imgpress keys list shows (or imgpress keys revoke-email ADDRESS)`,
      );
    }
    return { action, id: target };
  }
  // Written as the keys were issued: a mistyped address must not report "revoked 0" as if it were done.
  if (action === "revoke-email" && target) return { action, email: asArgument(() => normalizeEmail(target)) };
  throw new UsageError(
    "usage: imgpress keys list [--all] [--email ADDRESS] [--json] | keys create --email ADDRESS [--site URL] [--json] | keys revoke ID | keys revoke-email ADDRESS",
  );
}

/** Runs `imgpress keys …`; results on `io.out`, a refusal on `io.err`; returns the process exit status. */
export async function runKeysCommand(
  words: string[],
  flags: Record<string, string>,
  services: Services,
  io: Output,
): Promise<number> {
  const command = readKeysCommand(words, flags);
  if (command.action === "list") {
    const rows = await services.keys.list({ activeOnly: !command.all, email: command.email });
    io.out(command.json ? JSON.stringify(rows, null, 2) : formatTable(rows));
    return 0;
  }
  if (command.action === "create") return createKey(command, services, io);
  if (command.action === "revoke") {
    const done = await services.revocation.revoke(command.id, "cli");
    if (!done)
      return (io.err(`imgpress: no active key with id ${command.id} (imgpress keys list --all shows every id)`), 1);
    io.out(`revoked ${command.id}`);
    return 0;
  }
  const ids = await services.revocation.revokeAllOf(command.email, "cli");
  io.out(`revoked ${ids.length} key(s) of ${command.email}`);
  return 0;
}

// The keys are printed here once and kept nowhere else: only their hash and the sealed secret are stored.
async function createKey(
  command: Extract<KeysCommand, { action: "create" }>,
  services: Services,
  io: Output,
): Promise<number> {
  const before = await services.keys.list({ activeOnly: true, email: command.email });
  const issued = await services.issuance.issueForOperator({
    email: command.email,
    siteUrl: command.siteUrl,
    by: "cli",
  });
  const replaced = before.filter((k) => k.siteUrl === command.siteUrl).map((k) => k.id);
  if (command.json) {
    io.out(
      JSON.stringify(
        {
          id: issued.id,
          email: command.email,
          siteUrl: command.siteUrl,
          keyPrefix: issued.keyPrefix,
          apiKey: issued.apiKey,
          secretKey: issued.secretKey,
          replaced,
        },
        null,
        2,
      ),
    );
    return 0;
  }
  io.out(`key pair ${issued.id} for ${command.email}${command.siteUrl ? ` (${command.siteUrl})` : ""}`);
  io.out(`api_key:    ${issued.apiKey}`);
  io.out(`secret_key: ${issued.secretKey}`);
  io.out(`Store both now: they are not shown again. Revoke with: imgpress keys revoke ${issued.id}`);
  if (replaced.length > 0)
    io.err(
      `note: the earlier active pair of this address and site (${replaced.join(", ")}) is revoked, as a new code would revoke it`,
    );
  return 0;
}

// A refusal of an argument (an address that is not one) is a usage error, exit 2, not a failure.
function asArgument<T>(read: () => T): T {
  try {
    return read();
  } catch (err) {
    throw err instanceof AppError && err.status === 400 ? new UsageError(err.message) : err;
  }
}

/** `imgpress staff …` as read from its words. */
export type StaffCommand = { action: "list"; json: boolean } | { action: "add" | "remove"; email: string };

/** Reads `imgpress staff …`, or throws the UsageError that says why it cannot. */
export function readStaffCommand(words: string[], flags: Record<string, string> = {}): StaffCommand {
  const [action, target] = words;
  if (action === "list") return { action, json: flags.json === "true" };
  if ((action === "add" || action === "remove") && target)
    return { action, email: asArgument(() => normalizeEmail(target)) };
  throw new UsageError("usage: imgpress staff list [--json] | staff add EMAIL | staff remove EMAIL");
}

/** Runs `imgpress staff …`; results on `io.out`, a refusal on `io.err`; returns the process exit status. */
export async function runStaffCommand(
  words: string[],
  flags: Record<string, string>,
  services: Services,
  io: Output,
): Promise<number> {
  const out = io.out;
  const command = readStaffCommand(words, flags);
  if (command.action === "list") {
    const rows = await services.staff.list();
    if (command.json) return (out(JSON.stringify(rows, null, 2)), 0);
    out(
      rows.length === 0
        ? "no staff (add one: imgpress staff add you@example.com)"
        : table(
            ["EMAIL", "SOURCE", "ADDED", "BY"],
            rows.map((r) => [r.email, r.source, date(r.addedAt), r.addedBy ?? "-"]),
          ),
    );
    return 0;
  }
  if (command.action === "add") {
    const { email, added } = await services.staff.add(command.email, "cli");
    out(added ? `added ${email}: they can sign in at /internal/login` : `${email} is already staff`);
    return 0;
  }
  const { email, removed } = await services.staff.remove(command.email, "cli");
  if (!removed) return (io.err(`imgpress: ${email} is not staff (imgpress staff list shows who is)`), 1);
  out(`removed ${email} and ended their sessions`);
  return 0;
}

/** `imgpress audit …` as read from its flags: how far back, which type, how printed. */
export interface AuditCommand {
  backMs: number;
  type?: string;
  json: boolean;
}

/** Reads `imgpress audit [--since 24h] [--type TYPE] [--json]`, or throws the UsageError that says why it cannot. */
export function readAuditCommand(flags: Record<string, string>): AuditCommand {
  const backMs = parseDuration(flags.since ?? "24h");
  if (backMs === null) throw new UsageError("usage: imgpress audit [--since 24h|90m|7d] [--type TYPE] [--json]");
  // A mistyped type would list nothing, as if nothing had happened.
  if (flags.type !== undefined && !(AUDIT_TYPES as readonly string[]).includes(flags.type))
    throw new UsageError(`--type ${flags.type} is not an event type; the types are ${AUDIT_TYPES.join(", ")}`);
  return { backMs, type: flags.type, json: flags.json === "true" };
}

/** Runs `imgpress audit [--since 24h] [--type TYPE] [--json]`; returns the process exit status. */
export async function runAuditCommand(
  flags: Record<string, string>,
  services: Services,
  now: number,
  out: (line: string) => void,
): Promise<number> {
  const command = readAuditCommand(flags);
  const events = await services.audit.list({ since: now - command.backMs, type: command.type, limit: 500 });
  if (command.json) return (out(JSON.stringify(events, null, 2)), 0);
  const rows = events.map((e) => [
    date(e.at),
    e.type,
    e.actor,
    e.subject || "-",
    e.clientAddress || "-",
    JSON.stringify(e.detail),
  ]);
  out(events.length === 0 ? "no events" : table(["AT", "TYPE", "ACTOR", "SUBJECT", "ADDRESS", "DETAIL"], rows));
  return 0;
}

/** Runs `imgpress settings [--secrets]`: the effective settings; revealing secrets is audited. */
export async function runSettingsCommand(
  flags: Record<string, string>,
  config: Config,
  services: Services,
  out: (line: string) => void,
): Promise<number> {
  const reveal = flags.secrets === "true";
  if (reveal) await services.audit.record({ type: "settings.secrets_read", actor: "cli" });
  if (flags.json === "true")
    return (
      out(
        JSON.stringify(
          describeSettings(config, { reveal }).map((s) => ({ env: s.env, value: s.value ?? null })),
          null,
          2,
        ),
      ),
      0
    );
  for (const s of describeSettings(config, { reveal }))
    out(`${s.env}=${s.value === undefined ? "" : Array.isArray(s.value) ? s.value.join(",") : String(s.value)}`);
  return 0;
}

const date = (ms: number | null) => (ms === null ? "-" : new Date(ms).toISOString().slice(0, 19).replace("T", " "));

/** Columns padded to their widest cell, two spaces apart, header first. */
export function table(header: string[], lines: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i]!.length)));
  return [header, ...lines]
    .map((cols) =>
      cols
        .map((c, i) => c.padEnd(widths[i]!))
        .join("  ")
        .trimEnd(),
    )
    .join("\n");
}

function formatTable(rows: KeyRow[]): string {
  if (rows.length === 0) return "no keys";
  const header = ["ID", "PREFIX", "EMAIL", "SITE", "CREATED", "LAST USED", "REVOKED", "CONVERSIONS", "SAVED"];
  const lines = rows.map((r) => [
    r.id,
    `${r.keyPrefix}…`,
    r.email,
    r.siteUrl || "-",
    date(r.createdAt),
    date(r.lastUsedAt),
    date(r.revokedAt),
    String(r.conversions),
    formatBytes(r.bytesIn - r.bytesOut),
  ]);
  return table(header, lines);
}

/** What `imgpress migrate` says: the migrations it applied, or that there were none to apply. */
export function migrateReport(applied: readonly string[]): string {
  if (applied.length === 0) return "database is up to date: no migration to apply";
  return `applied ${applied.length} migration${applied.length === 1 ? "" : "s"} (${applied.join(", ")}); database is up to date`;
}
