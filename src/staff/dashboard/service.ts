import sharp from "sharp";
import type { Config } from "../../core/config.ts";
import { DAY_MS, stepMs } from "../../core/durations.ts";
import { emailForLookup } from "../../core/email.ts";
import type { SafeHtml } from "../../core/html.ts";
import { INTERNAL_PREFIX } from "../../core/http/paths.ts";
import { redactUrl } from "../../core/redact.ts";
import { runtime, version } from "../../core/version.ts";
import { type AuditLog, parseIsoDate } from "../../data/audit/service.ts";
import { localPath, shown } from "../../data/db/location.ts";
import type { RefusalQueries } from "../../data/usage/refused-queries.ts";
import type { UsageQueries } from "../../data/usage/service.ts";
import type { ReadinessReport } from "../../ops/health/service.ts";
import type { TlsView } from "../../server/tls/status.ts";
import type { liveState } from "../api/service.ts";
import type { StaffDirectory } from "../directory.ts";
import type { Notice, Viewer } from "../layout.ts";
import type { LiveHistory } from "../live-history.ts";
import type { SessionService } from "../sessions.ts";
import { describeSettings } from "../settings-view.ts";
import { count, duration } from "./format.ts";
import { type HealthVerdict, healthVerdict } from "./health.ts";
import { keysFilter } from "./keys-filter.ts";
import type { ActivityFilter, ActivityView } from "./pages/activity.ts";
import type { KeysView, KeyView } from "./pages/keys.ts";
import type { LiveView } from "./pages/live.ts";
import type { OverviewView } from "./pages/overview.ts";
import type { SettingsView } from "./pages/settings.ts";
import { rangeBounds, rangeName } from "./ranges.ts";
import type { RefusedView } from "./refused.ts";
import { keyRotation } from "./rotation.ts";
import { sparklines } from "./sparkline.ts";
import { settingsWarnings } from "./warnings.ts";

/** Everything the dashboard reads; each part belongs to another feature. */
export interface DashboardSources {
  usage: Pick<UsageQueries, "overview" | "series" | "keys" | "key" | "topKeys">;
  /** Refused requests of the public routes (usage/refusals.ts). */
  refusals: Pick<RefusalQueries, "codes" | "series" | "top">;
  audit: Pick<AuditLog, "page" | "list" | "retentionDays">;
  auditTypes: readonly string[];
  staff: Pick<StaffDirectory, "list">;
  sessions: Pick<SessionService, "list">;
  /** The same snapshot /internal/api/live answers (the live panel then polls it). */
  live: () => ReturnType<typeof liveState>;
  /** The live panel's last 15 minutes (sparklines, the health line). */
  history: Pick<LiveHistory, "recent" | "sparkline">;
  /** The readiness checks /health/ready runs (their results are cached a second). */
  readiness: () => Promise<ReadinessReport>;
  /** Free bytes where the database file lives; null for a database server. */
  diskFree: () => Promise<number | null>;
  /** The certificate this process serves; null where it does not listen. */
  tls: () => TlsView | null;
  config: Config;
  now: () => number;
}

/** Rows per page of the keys table and of the activity list. */
const PAGE_SIZE = 50;
const LIVE_EVERY_S = 5;
/** Rows of the overview's "Top keys". */
const TOP_KEYS = 10;
/** Rows of the overview's "Top refused clients". */
const TOP_REFUSED = 10;
/** The longest span "Top refused clients" ranks. */
const TOP_REFUSED_DAYS = 30;

/** Builds each page's view data from the sources; pages never fail on odd query values, they fall back. */
export class DashboardService {
  constructor(private readonly sources: DashboardSources) {}

  /** The overview of a range (24h, 7d, 30d, 365d) with the live panel's first values. */
  async overview(viewer: Viewer, range: string | undefined): Promise<OverviewView> {
    const name = rangeName(range);
    const { from, to, step } = rangeBounds(name, this.sources.now());
    const [overview, previous, series, refused, health, topKeys] = await Promise.all([
      this.sources.usage.overview({ from, to }),
      // The period of the same length just before, for each card's change.
      this.sources.usage.overview({ from: from - (to - from), to: from }),
      this.sources.usage.series({ from, to, step }),
      this.refused({ from, to, step }, TOP_REFUSED),
      this.health(),
      this.sources.usage.topKeys({ from, to }, TOP_KEYS),
    ]);
    return { viewer, range: name, overview, previous, series, refused, health, topKeys, live: this.live() };
  }

  /** The health line's verdict from the last 15 minutes and the state now. */
  async health(): Promise<HealthVerdict> {
    const l = this.sources.live();
    return healthVerdict({
      recent: this.sources.history.recent(15 * 60),
      slotsBusy: l.conversions.slotsBusy,
      concurrency: this.sources.config.concurrency,
      waiting: l.conversions.waiting,
      abandoned: l.conversions.abandoned,
      ...(await this.machine()),
    });
  }

  // Readiness, disk headroom and the certificate's days left: the health line and the settings warnings read the same.
  private async machine() {
    const [ready, diskFreeBytes] = await Promise.all([
      this.sources.readiness(),
      this.sources.diskFree().catch(() => null),
    ]);
    const validUntil = this.sources.tls()?.validUntil;
    const tlsDaysLeft = validUntil ? Math.floor((Date.parse(validUntil) - this.sources.now()) / DAY_MS) : null;
    return { readiness: ready.checks, diskFreeBytes, tlsDaysLeft };
  }

  /** The live panel's sparklines as an HTML fragment (the panel's poll fetches it). */
  sparklines(): SafeHtml {
    return sparklines(this.sources.history.sparkline(), this.sources.config.concurrency);
  }

  /** The keys table for the query string's search, status, sort, order and page. */
  async keys(viewer: Viewer, q: Record<string, string | undefined>, notice: Notice | null = null): Promise<KeysView> {
    const filter = keysFilter(q);
    const query = {
      search: filter.q || undefined,
      status: filter.status,
      sort: filter.sort,
      order: filter.order,
      pageSize: PAGE_SIZE,
      range: filter.period === "all" ? undefined : rangeBounds(filter.period, this.sources.now()),
    };
    let keys = await this.sources.usage.keys({ ...query, page: filter.page });
    // A page past the end (an old link, keys revoked meanwhile) shows the last page instead of an empty table.
    if (keys.rows.length === 0 && keys.total > 0 && filter.page > 1) {
      filter.page = Math.ceil(keys.total / PAGE_SIZE);
      keys = await this.sources.usage.keys({ ...query, page: filter.page });
    }
    return { viewer, filter, keys, notice };
  }

  /** One key's page over a range, with the keys list's filter it came from (`back`); null when the key does not exist. */
  async key(
    viewer: Viewer,
    id: string,
    q: Record<string, string | undefined>,
    notice: Notice | null = null,
  ): Promise<KeyView | null> {
    const name = rangeName(q.range);
    const { from, to, step } = rangeBounds(name, this.sources.now());
    const detail = await this.sources.usage.key(id, { from, to });
    if (!detail) return null;
    const [series, refused, rotation] = await Promise.all([
      this.sources.usage.series({ from, to, step, keyId: id }),
      this.refused({ from, to, step, keyId: id }),
      keyRotation(this.sources.audit, id),
    ]);
    const revokedAll = q.done === "revoked-all" && /^\d{1,6}$/.test(q.revoked ?? "") ? Number(q.revoked) : null;
    return { viewer, detail, range: name, series, refused, notice, back: keysFilter(q), revokedAll, rotation };
  }

  /** Refused requests of a range: by code, over time, and (given `top`) the most refused clients. */
  private async refused(
    range: { from: number; to: number; step: "hour" | "day"; keyId?: string },
    top?: number,
  ): Promise<RefusedView> {
    const [codes, points, clients] = await Promise.all([
      this.sources.refusals.codes(range),
      this.sources.refusals.series(range),
      // A year of clients at the hourly bound takes ~0.3 s to rank (bench/RESULTS.md): longer ranges rank the last 30 days.
      top === undefined
        ? undefined
        : this.sources.refusals.top(
            { from: Math.max(range.from, range.to - TOP_REFUSED_DAYS * DAY_MS), to: range.to },
            top,
          ),
    ]);
    const topDays = range.to - range.from > TOP_REFUSED_DAYS * DAY_MS ? TOP_REFUSED_DAYS : null;
    return {
      codes,
      points,
      stepMs: stepMs(range.step),
      from: range.from,
      to: range.to,
      ...(clients ? { top: clients, topDays } : {}),
    };
  }

  /** The audit trail filtered by type, actor and UTC days, newest first, one page. */
  async activity(viewer: Viewer, q: Record<string, string | undefined>): Promise<ActivityView> {
    const staff = (await this.sources.staff.list()).map((m) => m.email);
    const filter: ActivityFilter = {
      type: this.sources.auditTypes.includes(q.type ?? "") ? q.type! : "",
      staff: (q.staff ?? "").trim().toLowerCase().slice(0, 320),
      from: "",
      to: "",
      before: /^\d{1,15}$/.test(q.before ?? "") ? Number(q.before) : null,
    };
    const problems: string[] = [];
    const day = (field: "from" | "to") => {
      const raw = (q[field] ?? "").trim();
      if (raw === "") return undefined;
      const at = /^\d{4}-\d{2}-\d{2}$/.test(raw) ? parseIsoDate(`${raw}T00:00:00Z`) : Number.NaN;
      if (Number.isNaN(at)) {
        problems.push(`“${raw}” is not a date (YYYY-MM-DD); the ${field} filter is ignored.`);
        return undefined;
      }
      filter[field] = raw;
      return at;
    };
    const since = day("from");
    const toDay = day("to");
    const { events, nextBefore } = await this.sources.audit.page({
      type: filter.type || undefined,
      actor: filter.staff ? emailForLookup(filter.staff) : undefined,
      since,
      // "To" includes the whole day.
      until: toDay === undefined ? undefined : toDay + DAY_MS - 1,
      before: filter.before ?? undefined,
      limit: PAGE_SIZE,
    });
    return {
      viewer,
      filter,
      rows: events,
      older: nextBefore,
      types: this.sources.auditTypes,
      staff: [...new Set([...staff, "cli"])],
      problem: problems.join(" ") || null,
      retentionDays: this.sources.audit.retentionDays,
    };
  }

  /** Staff, this address's sessions, the redacted configuration, storage and versions. */
  async settings(viewer: Viewer, sessionId: string, notice: Notice | null = null): Promise<SettingsView> {
    const [staff, sessions, machine] = await Promise.all([
      this.sources.staff.list(),
      this.sources.sessions.list(viewer.email),
      this.machine(),
    ]);
    const c = this.sources.config;
    const tls = this.sources.tls();
    return {
      viewer,
      warnings: settingsWarnings({ config: c, tls, ...machine }),
      staff,
      sessions,
      currentSession: sessionId,
      settings: describeSettings(c, { reveal: false }).map((x) => ({
        env: x.env,
        group: x.group,
        help: x.help,
        value: settingText(x.value),
      })),
      dataDir: c.dataDir,
      database: localPath(c.databaseUrl) ?? shown(c.databaseUrl),
      versions: componentVersions(),
      tls,
      mailServer: c.smtpUrl ? redactUrl(c.smtpUrl) : null,
      notice,
    };
  }

  /** The live panel with its first values (the page script then polls /internal/api/live). */
  live(): LiveView {
    const l = this.sources.live();
    return {
      src: `${INTERNAL_PREFIX}/api/live`,
      sparkSrc: `${INTERNAL_PREFIX}/live/sparklines`,
      spark: this.sparklines(),
      everyS: LIVE_EVERY_S,
      // Five minutes before the session's idle timeout: an unattended tab must let it end.
      pauseS: Math.max(60, this.sources.config.staffSessionIdleS - 300),
      fields: [
        {
          label: "Conversion slots busy",
          path: "conversions.slotsBusy",
          format: "decimal",
          initial: l.conversions.slotsBusy.toFixed(1),
          suffix: `/ ${this.sources.config.concurrency}`,
        },
        {
          label: "Conversions running",
          path: "conversions.running",
          format: "int",
          initial: count(l.conversions.running),
        },
        {
          label: "Waiting for a slot",
          path: "conversions.waiting",
          format: "int",
          initial: count(l.conversions.waiting),
        },
        // Non-zero means an encoder hung and its memory may still be held (docs/operations.md, "Hung conversions").
        {
          label: "Hung conversions given up",
          path: "conversions.abandoned",
          format: "int",
          initial: count(l.conversions.abandoned),
        },
        {
          label: "Requests per second",
          path: "requests_per_second.last_10s",
          format: "decimal",
          initial: l.requests_per_second.last_10s.toFixed(1),
        },
        {
          label: "Memory (RSS)",
          path: "memory.rss",
          format: "mib",
          initial: `${(l.memory.rss / 1048576).toFixed(1)} MiB`,
        },
        { label: "Uptime", path: "uptime_s", format: "uptime", initial: duration(l.uptime_s) },
        { label: "Version", path: "version", format: "text", initial: l.version },
      ],
    };
  }
}

/** Versions of the service, sharp, libvips and the JavaScript runtime. */
function componentVersions(): { name: string; version: string }[] {
  const js = runtime();
  return [
    { name: "imgpress", version },
    { name: "sharp", version: sharp.versions.sharp ?? "unknown" },
    { name: "libvips", version: sharp.versions.vips },
    { name: "Runtime", version: `${js.name} ${js.version}` },
  ];
}

/** A setting's value as text: lists joined, "(not set)" for nothing. */
function settingText(value: unknown): string {
  if (value === undefined || value === null || value === "" || (Array.isArray(value) && value.length === 0))
    return "(not set)";
  return Array.isArray(value) ? value.join(", ") : String(value);
}
