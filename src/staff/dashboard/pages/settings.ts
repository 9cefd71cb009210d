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

/** /internal/settings: staff (add/remove), sessions, configuration (redacted), storage, versions. */
export function settingsPage(v: SettingsView, typed = ""): SafeHtml {
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
  const sessionRows = v.sessions.map(
    (s): Row => [
      html`${s.id}${s.id === v.currentSession ? html` ${badge("this browser", "active")}` : null}`,
      s.clientAddress,
      s.userAgent,
      time(s.createdAt),
      time(s.lastSeenAt),
    ],
  );
  const body = html`<div class="page-head"><div><h1>Staff &amp; settings</h1><p class="lead">Who may sign in, who is signed in, and how this service is configured.</p></div></div>
${warningList(v.warnings ?? [])}
<h2 id="staff">Staff</h2>
${table({ caption: "Staff members", compact: true, columns: [{ label: "E-mail", className: "email card-head" }, { label: "Since" }, { label: "Actions", hiddenLabel: true }], rows: staffRows })}
<form class="inline-form panel" method="post" action="${INTERNAL_PREFIX}/settings/staff/add">${csrfField(v.viewer)}
<label>Add a staff member<input type="email" name="email" value="${typed}" required autocomplete="off" maxlength="254" placeholder="colleague@example.com"${typed ? html` aria-invalid="true" aria-describedby="${NOTICE_ID}"` : null}></label>
<button type="submit" class="primary">Add</button></form>
<h2 id="sessions">Your active sessions</h2>
${
  v.sessions.length === 0
    ? html`<div class="panel">${empty("No active session", "")}</div>`
    : table({
        caption: "Your active sessions",
        columns: [
          { label: "Session", className: "mono card-head" },
          { label: "Address", className: "mono" },
          { label: "Browser", className: "wrap-anywhere about" },
          { label: "Signed in", numeric: true },
          { label: "Last seen", numeric: true },
        ],
        rows: sessionRows,
      })
}
<form class="inline-form" method="post" action="${INTERNAL_PREFIX}/logout/everywhere" data-confirm="Sign out ${v.viewer.email} in every browser, this one included?">${csrfField(v.viewer)}
<button type="submit" class="danger">Sign out everywhere</button><span class="muted">Ends every session of ${v.viewer.email}, this one included.</span></form>
<h2 id="configuration">Configuration</h2>
<p class="muted">The effective settings of this process. Secrets are never shown: only whether they are set.</p>
${table({
  caption: "Effective configuration",
  compact: true,
  columns: [
    { label: "Variable", className: "card-head" },
    { label: "Value", className: "mono" },
  ],
  className: "settings-table",
  rows: v.settings.map(
    (s): Row => [
      html`<span class="mono">${breakable(s.env)}</span><span class="sr-only">: </span><span class="setting-help">${breakable(s.help)}</span>`,
      breakable(s.value),
    ],
  ),
})}
<div class="grid-2">
${mailPanel(v)}
<section class="panel" aria-labelledby="storage-title"><h2 id="storage-title">Storage</h2><dl class="facts"><dt>Data folder</dt><dd class="mono">${v.dataDir}</dd><dt>Database</dt><dd class="mono">${v.database}</dd></dl></section>
${v.tls ? tlsPanel(v.tls) : null}
<section class="panel" aria-labelledby="versions-title"><h2 id="versions-title">Versions</h2><dl class="facts">${v.versions.map((x) => html`<dt>${x.name}</dt><dd class="mono">${x.version}</dd>`)}</dl></section>
</div>`;
  return layout({ title: "Staff & settings", section: "settings", viewer: v.viewer, body, notice: v.notice });
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
  return html`<section class="panel" aria-labelledby="tls-title"><h2 id="tls-title">TLS certificate</h2>
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
  return html`<section class="panel" aria-labelledby="mail-title"><h2 id="mail-title">Mail</h2>
<dl class="facts"><dt>Codes go to</dt><dd>${route}</dd></dl>
<form class="inline-form" method="post" action="${INTERNAL_PREFIX}/settings/test-mail">${csrfField(v.viewer)}<button type="submit">Send a test e-mail</button><span class="muted">To ${emailAddress(v.viewer.email)} only; 3 an hour.</span></form></section>`;
}
