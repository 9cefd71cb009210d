import { SETTING_GROUPS, type SettingGroup } from "../../../core/config.ts";
import { html, type SafeHtml } from "../../../core/html.ts";
import { INTERNAL_PREFIX } from "../../../core/http/paths.ts";
import type { TlsView } from "../../../server/tls/status.ts";
import type { StaffMember } from "../../directory.ts";
import { csrfField, layout, NOTICE_ID, type Notice, type Viewer } from "../../layout.ts";
import type { SessionRow } from "../../sessions.ts";
import { badge, breakable, emailAddress, empty, type Row, table, time } from "../components.ts";
import { warningList } from "../warnings.ts";

/** A staff member: from IMGPRESS_STAFF_EMAILS (removable only there) or added at run time. */
export type StaffRow = StaffMember;

/** An active session of the signed-in address (never its token). */
export type SessionListItem = Omit<SessionRow, "email">;

/** One effective setting; secrets already redacted. */
export interface SettingRow {
  env: string;
  /** The group it is shown in (the settings table's, src/core/config.ts). */
  group: SettingGroup;
  value: string;
  help: string;
}

/** Everything the staff & settings page shows. */
export interface SettingsView {
  viewer: Viewer;
  staff: readonly StaffRow[];
  sessions: readonly SessionListItem[];
  /** The id of the session this page was requested with. */
  currentSession: string;
  settings: readonly SettingRow[];
  dataDir: string;
  database: string;
  versions: readonly { name: string; version: string }[];
  /** The certificate this process serves; null where it does not listen. */
  tls: TlsView | null;
  /** Where mail goes: IMGPRESS_SMTP_URL without its password, or null when codes go to the log. */
  mailServer?: string | null;
  /** What needs the operator's attention (warnings.ts), shown first; none when all is well. */
  warnings?: readonly string[];
  notice?: Notice | null;
}

const GROUP_TITLES: Record<SettingGroup, string> = {
  server: "Server",
  security: "Security",
  mail: "Mail",
  storage: "Storage",
  limits: "Limits",
  staff: "Staff",
};

// Staff first: adding or removing a colleague is what this page is opened for most.
const GROUP_ORDER: readonly SettingGroup[] = ["staff", ...SETTING_GROUPS.filter((g) => g !== "staff")];

/** /internal/settings: warnings, then one collapsible group each for staff, server, security, mail, storage, limits. */
export function settingsPage(v: SettingsView, typed = ""): SafeHtml {
  const parts: Record<SettingGroup, SafeHtml | null> = {
    staff: staffPart(v, typed),
    server: html`<div class="grid-2">${v.tls ? tlsPanel(v.tls) : null}${versionsPanel(v)}</div>`,
    security: null,
    mail: mailPanel(v),
    storage: html`<section class="panel" aria-labelledby="storage-title"><h3 id="storage-title">Where data lives</h3><dl class="facts"><dt>Data folder</dt><dd class="mono">${v.dataDir}</dd><dt>Database</dt><dd class="mono">${v.database}</dd></dl></section>`,
    limits: null,
  };
  const body = html`<div class="page-head"><div><h1>Staff &amp; settings</h1><p class="lead">Who may sign in, who is signed in, and how this service is configured.</p></div></div>
${warningList(v.warnings ?? [])}
<p class="muted">Each group shows the effective settings of this process. Secrets are never shown: only whether they are set. A group closes with a click on its heading.</p>
${GROUP_ORDER.map((g) => settingGroup(g, parts[g], v.settings))}`;
  return layout({ title: "Staff & settings", section: "settings", viewer: v.viewer, body, notice: v.notice });
}

// Open at first and closed by a click on its heading, with no script (<details>).
function settingGroup(group: SettingGroup, part: SafeHtml | null, all: readonly SettingRow[]): SafeHtml {
  const rows = all.filter((s) => s.group === group);
  const title = GROUP_TITLES[group];
  return html`<details class="group" data-group="${group}" open><summary><h2 id="${group}">${title}</h2></summary>
${part}${rows.length ? settingsTable(`${title} settings`, rows) : null}</details>`;
}

function settingsTable(caption: string, rows: readonly SettingRow[]): SafeHtml {
  return table({
    caption,
    compact: true,
    columns: [
      { label: "Variable", className: "card-head" },
      { label: "Value", className: "mono" },
    ],
    className: "settings-table",
    rows: rows.map(
      (s): Row => [
        html`<span class="mono">${breakable(s.env)}</span><span class="sr-only">: </span><span class="setting-help">${breakable(s.help)}</span>`,
        breakable(s.value),
      ],
    ),
  });
}

// Who may sign in (add, remove), and this address's sessions.
function staffPart(v: SettingsView, typed: string): SafeHtml {
  const staffRows = v.staff.map(
    (s): Row => [
      html`${emailAddress(s.email)}${s.email === v.viewer.email ? html` <span class="muted">(you)</span>` : null}`,
      s.source === "config"
        ? badge(breakable("IMGPRESS_STAFF_EMAILS"), "neutral")
        : html`added ${time(s.addedAt)}${s.addedBy ? html` by ${emailAddress(s.addedBy)}` : null}`,
      s.source === "database"
        ? html`<form method="post" action="${INTERNAL_PREFIX}/settings/staff/remove" data-confirm="Remove ${s.email} from staff? Their sessions end at once.">${csrfField(v.viewer)}<input type="hidden" name="email" value="${s.email}"><button type="submit" class="small danger">Remove<span class="sr-only"> ${s.email}</span></button></form>`
        : html`<span class="sr-only">Set in IMGPRESS_STAFF_EMAILS: removed only there</span>`,
    ],
  );
  return html`${table({ caption: "Staff members", compact: true, columns: [{ label: "E-mail", className: "email card-head" }, { label: "Since" }, { label: "Actions", hiddenLabel: true }], rows: staffRows })}
<form class="inline-form panel" method="post" action="${INTERNAL_PREFIX}/settings/staff/add">${csrfField(v.viewer)}
<label>Add a staff member<input type="email" name="email" value="${typed}" required autocomplete="off" maxlength="254" placeholder="colleague@example.com"${typed ? html` aria-invalid="true" aria-describedby="${NOTICE_ID}"` : null}></label>
<button type="submit" class="primary">Add</button></form>
<h3 id="sessions">Your active sessions</h3>
${sessionsTable(v)}
<form class="inline-form" method="post" action="${INTERNAL_PREFIX}/logout/everywhere" data-confirm="Sign out ${v.viewer.email} in every browser, this one included?">${csrfField(v.viewer)}
<button type="submit" class="danger">Sign out everywhere</button><span class="muted">Ends every session of ${v.viewer.email}, this one included.</span></form>`;
}

function sessionsTable(v: SettingsView): SafeHtml {
  if (v.sessions.length === 0) return html`<div class="panel">${empty("No active session", "")}</div>`;
  return table({
    caption: "Your active sessions",
    columns: [
      { label: "Session", className: "mono card-head" },
      { label: "Address", className: "mono" },
      { label: "Browser", className: "wrap-anywhere about" },
      { label: "Signed in", numeric: true },
      { label: "Last seen", numeric: true },
    ],
    rows: v.sessions.map(
      (s): Row => [
        html`${s.id}${s.id === v.currentSession ? html` ${badge("this browser", "active")}` : null}`,
        s.clientAddress,
        s.userAgent,
        time(s.createdAt),
        time(s.lastSeenAt),
      ],
    ),
  });
}

function versionsPanel(v: SettingsView): SafeHtml {
  return html`<section class="panel" aria-labelledby="versions-title"><h3 id="versions-title">Versions</h3><dl class="facts">${v.versions.map((x) => html`<dt>${x.name}</dt><dd class="mono">${x.version}</dd>`)}</dl></section>`;
}

const TLS_SOURCES: Record<TlsView["source"], string> = {
  generated: "self-signed, made by imgpress",
  file: "your file (IMGPRESS_TLS_CERT)",
  proxy: "the proxy in front (IMGPRESS_BEHIND_PROXY): this process speaks plain HTTP to it",
};

// What clients are shown at the handshake, and what is wrong with it, so staff can hand out the
// fingerprint or see a renewal waiting for a restart without reading the log.
function tlsPanel(tls: TlsView): SafeHtml {
  const fact = (label: string, value: SafeHtml | string | undefined) =>
    value === undefined ? null : html`<dt>${label}</dt><dd>${value}</dd>`;
  return html`<section class="panel" aria-labelledby="tls-title"><h3 id="tls-title">TLS certificate</h3>
${tls.warnings.map((w) => html`<p class="notice error"><strong>Warning:</strong> ${w}</p>`)}<dl class="facts">${fact("Served", TLS_SOURCES[tls.source])}${fact("File", tls.certPath && html`<span class="mono">${breakable(tls.certPath)}</span>`)}${fact(
    "Valid until",
    tls.validUntil && time(Date.parse(tls.validUntil)),
  )}${fact("Intermediate ends", tls.intermediateEnds && time(Date.parse(tls.intermediateEnds)))}${fact("Names", tls.names && html`<span class="mono">${breakable(tls.names.join(", "))}</span>`)}${fact("SHA-256", tls.sha256 && html`<span class="mono">${breakable(tls.sha256, /(?<=:)/)}</span>`)}</dl></section>`;
}

// Where mail goes, and a button that sends a test message to the signed-in address only.
function mailPanel(v: SettingsView): SafeHtml {
  const route = v.mailServer
    ? html`<span class="mono">${breakable(v.mailServer, /(?<=[@.:/])/)}</span>`
    : "the server's log (IMGPRESS_SMTP_URL is not set)";
  return html`<section class="panel" aria-labelledby="mail-title"><h3 id="mail-title">Where codes go</h3>
<dl class="facts"><dt>Codes go to</dt><dd>${route}</dd></dl>
<form class="inline-form" method="post" action="${INTERNAL_PREFIX}/settings/test-mail">${csrfField(v.viewer)}<button type="submit">Send a test e-mail</button><span class="muted">To ${emailAddress(v.viewer.email)} only; 3 an hour.</span></form></section>`;
}
