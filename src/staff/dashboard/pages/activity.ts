import { html, type SafeHtml } from "../../../core/html.ts";
import { INTERNAL_PREFIX } from "../../../core/http/paths.ts";
import type { AuditEvent } from "../../../data/audit/service.ts";
import { layout, type Viewer } from "../../layout.ts";
import { type Column, emailAddress, empty, query, type Row, table, time, withKeyLinks } from "../components.ts";
import { eventLabel } from "../format.ts";

/** One audit event as the activity table shows it. */
export type ActivityRow = Omit<AuditEvent, "id">;

/** The activity filters as the URL carries them (dates as YYYY-MM-DD, whole days in UTC). */
export interface ActivityFilter {
  type: string;
  staff: string;
  from: string;
  to: string;
  /** Paging cursor: show events older than this id. */
  before: number | null;
}

/** Everything the activity page shows. */
export interface ActivityView {
  viewer: Viewer;
  filter: ActivityFilter;
  rows: readonly ActivityRow[];
  /** Cursor of the next (older) page, null on the last page. */
  older: number | null;
  /** Event types and staff addresses the filters offer. */
  types: readonly string[];
  staff: readonly string[];
  /** A filter value the page refused (e.g. a malformed date), shown above the table. */
  problem?: string | null;
  /** Days events are kept (IMGPRESS_AUDIT_RETENTION_DAYS); 0: all of them. */
  retentionDays?: number;
}

/** The href of the activity page for a filter. */
const ACTIVITY_COLUMNS: readonly Column[] = [
  { label: "When", className: "nowrap card-head" },
  { label: "Event", className: "event" },
  { label: "By", className: "email" },
  { label: "About", className: "about wrap-anywhere" },
  { label: "Address", className: "mono nowrap" },
];

function activityHref(f: ActivityFilter): string {
  return `${INTERNAL_PREFIX}/activity${query({ type: f.type, staff: f.staff, from: f.from, to: f.to, before: f.before })}`;
}

function detailText(detail: Record<string, unknown>): string {
  return Object.entries(detail)
    .map(([k, v]) => `${k}: ${typeof v === "string" ? v : JSON.stringify(v)}`)
    .join(", ");
}

/** /internal/activity: the audit trail, newest first, with filters and paging. */
export function activityPage(v: ActivityView): SafeHtml {
  const f = v.filter;
  const option = (value: string, current: string, label = value) =>
    html`<option value="${value}"${value === current ? html` selected` : null}>${label}</option>`;
  const filtered = f.type !== "" || f.staff !== "" || f.from !== "" || f.to !== "";
  const dash = html`<span class="muted">–</span>`;
  const rows = v.rows.map(
    (r): Row => [
      time(r.at),
      html`${eventLabel(r.type)}<span class="setting-help mono" title="The event type in the log and the API">${r.type}</span>`,
      r.actor ? emailAddress(r.actor) : dash,
      html`${r.subject ? withKeyLinks(r.subject) : dash}${Object.keys(r.detail).length ? html`<br><span class="muted">${withKeyLinks(detailText(r.detail))}</span>` : null}`,
      r.clientAddress,
    ],
  );
  const first = f.before === null;
  const list =
    v.rows.length === 0
      ? html`<div class="panel">${
          filtered || !first
            ? empty(
                "No event matches these filters",
                html`<p><a href="${INTERNAL_PREFIX}/activity">Show all activity</a></p>`,
              )
            : empty(
                "No activity yet",
                html`<p>Sign-ins, staff changes, issued and revoked keys appear here as they happen.</p>`,
              )
        }</div>`
      : html`${table({ caption: "Audit events, newest first", columns: ACTIVITY_COLUMNS, rows })}
<div class="pager"><span>${v.rows.length} ${v.rows.length === 1 ? "event" : "events"} on this page${first ? ", newest first" : ""}</span><nav aria-label="Pages">${
          first
            ? html`<span class="disabled" aria-disabled="true">Newest</span>`
            : html`<a href="${activityHref({ ...f, before: null })}">Newest</a>`
        }${v.older === null ? html`<span class="disabled" aria-disabled="true">Older →</span>` : html`<a href="${activityHref({ ...f, before: v.older })}" rel="next">Older →</a>`}</nav></div>`;
  const body = html`<div class="page-head"><div><h1>Activity</h1><p class="lead">The audit trail: sign-ins, staff changes, issued and revoked keys. ${v.retentionDays ? `Events older than ${v.retentionDays} ${v.retentionDays === 1 ? "day are" : "days are"} deleted (IMGPRESS_AUDIT_RETENTION_DAYS).` : "Every event is kept (IMGPRESS_AUDIT_RETENTION_DAYS is 0)."}</p></div></div>
${v.problem ? html`<p class="notice error" role="alert">${v.problem}</p>` : null}
<form class="filters" method="get" action="${INTERNAL_PREFIX}/activity">
<label>Event<select name="type">${option("", f.type, "All events")}${v.types.map((t) => option(t, f.type, eventLabel(t)))}</select></label>
<label>By<select name="staff">${option("", f.staff, "Anyone")}${actors(v.staff, f.staff).map((s) => option(s, f.staff))}</select></label>
<label>From (UTC day)<input type="date" name="from" value="${f.from}"></label>
<label>To (UTC day)<input type="date" name="to" value="${f.to}"></label>
<button type="submit">Filter</button></form>
${list}`;
  return layout({ title: "Activity", section: "activity", viewer: v.viewer, body });
}

// The staff list, plus the actor filtered on when it is not in it (the CLI, a removed colleague, a
// link): the select must show the filter in force, or pressing Filter again would drop it.
function actors(staff: readonly string[], current: string): string[] {
  return current === "" || staff.includes(current) ? [...staff] : [...staff, current];
}
