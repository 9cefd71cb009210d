import { AppError } from "../core/errors.ts";
import { html, type SafeHtml } from "../core/html.ts";
import { noteErrorCode } from "../core/http/meta.ts";
import { INTERNAL_PREFIX } from "../core/http/paths.ts";
import { countdownText, doorLayout, type Notice } from "./layout.ts";

/** An HTML document as a response (the /internal/ security headers are added by `internalResponseHeaders`). */
export function htmlPage(doc: SafeHtml, status = 200, headers: Record<string, string> = {}): Response {
  return new Response(doc.text, { status, headers: { "content-type": "text/html; charset=utf-8", ...headers } });
}

/** A 303 to `location` after a form: reloading the page it lands on does not send the form again. */
export function seeOther(location: string): Response {
  return new Response(null, { status: 303, headers: { location } });
}

/** A complete HTML response for a staff door page (login, code, errors) in the dashboard's look. */
export function pageResponse(
  title: string,
  body: SafeHtml,
  status = 200,
  headers: Record<string, string> = {},
): Response {
  return htmlPage(
    doorLayout(
      title,
      html`<h1>${title}</h1>
${body}`,
    ),
    status,
    headers,
  );
}

/**
 * `run`'s response; when it refuses with a client error (an AppError below 500), `refused(err)`
 * instead: a form answers with its page and the reason, at the error's status.
 */
export async function orRefusal(
  request: Request,
  run: () => Promise<Response>,
  refused: (err: AppError) => Response | Promise<Response>,
): Promise<Response> {
  try {
    return await run();
  } catch (err) {
    if (!(err instanceof AppError) || err.status >= 500) throw err;
    // The metrics count the refusal by its code, as they do a JSON one.
    noteErrorCode(request, err.code);
    return refused(err);
  }
}

/** Shown instead of the login form while no staff member exists. */
export function setupPage(): SafeHtml {
  return html`<p>No staff member is configured yet, so nobody can sign in here.</p>
<p>Add one on the server, then reload this page:</p>
<pre><code>imgpress staff add you@example.com</code></pre>
<p>or start the service with <code>IMGPRESS_STAFF_EMAILS=you@example.com</code> (a comma list). The address must receive mail from this service.</p>`;
}

/** Why a form was refused, and for a rate limit when to try again (its Retry-After). */
export interface Refusal {
  error?: string;
  retryAfterS?: number;
}

/**
 * The e-mail form. `error`: why the last attempt was refused, with its address `email` back in the
 * field to be corrected; `returning`: the visitor was sent here on the way to a page (`?next=`);
 * `signedOut`: the visitor has just signed out (the page confirms it).
 */
export function loginForm(
  next: string,
  {
    error,
    retryAfterS,
    email = "",
    returning = false,
    signedOut = false,
  }: Refusal & { email?: string; returning?: boolean; signedOut?: boolean } = {},
): SafeHtml {
  const why = error ? "" : loginStatus({ returning, signedOut });

  return html`${errorNote(error, retryAfterS)}${why}<form method="post" action="${INTERNAL_PREFIX}/login">
<input type="hidden" name="next" value="${next}">
<label for="email">E-mail address</label>
<input id="email" name="email" type="email" autocomplete="email" value="${email}" required autofocus${invalid(error)}>
<button type="submit" class="primary">Send me a sign-in code</button>
</form>`;
}

/**
 * The code form, with a way to have another code sent; the same for every address, staff or not.
 * `error`: why the last code was refused (the field is marked invalid); `notice`: a status that is
 * about no field (a new code sent, or asked for too soon); `offerNewCode`: false after a wrong
 * code while tries remain, when a new code would only replace the one in the mail.
 */
export function codeForm(
  email: string,
  next: string,
  validMinutes: number,
  { error, retryAfterS, notice, offerNewCode = true }: Refusal & { notice?: Notice; offerNewCode?: boolean } = {},
): SafeHtml {
  const status = notice
    ? html`<p class="notice ${notice.kind}" role="${notice.kind === "error" ? "alert" : "status"}">${countdownText(notice.text, notice.retryAfterS)}</p>`
    : null;
  return html`${errorNote(error, retryAfterS)}${status}<p>If ${email} belongs to a staff member, a 6-digit code is on its way. It is valid for ${validMinutes} minutes.</p>
<form method="post" action="${INTERNAL_PREFIX}/login/code">
<input type="hidden" name="email" value="${email}">
<input type="hidden" name="next" value="${next}">
<label for="code">Sign-in code</label>
<input id="code" name="code" type="text" inputmode="numeric" autocomplete="one-time-code" pattern="[0-9]{6}" maxlength="6" required autofocus${invalid(error)}>
<button type="submit" class="primary">Sign in</button>
</form>
${offerNewCode ? newCodeForm(email, next) : html`<p class="door-links"><a href="${INTERNAL_PREFIX}/login">Use another address</a></p>`}`;
}

// "Send a new code", with the address and return page it is for.
function newCodeForm(email: string, next: string): SafeHtml {
  return html`<form method="post" action="${INTERNAL_PREFIX}/login" class="door-links">
<input type="hidden" name="email" value="${email}">
<input type="hidden" name="next" value="${next}">
<input type="hidden" name="resend" value="1">
<button type="submit" class="link">Send a new code</button><a href="${INTERNAL_PREFIX}/login">Use another address</a>
</form>
<p class="muted">No mail after a minute? Check the spam folder, then send a new code; each new one replaces the last.</p>`;
}

// A session that ended moves the visitor here unasked: say why; a sign-out is confirmed.
function loginStatus({ returning, signedOut }: { returning: boolean; signedOut: boolean }): SafeHtml | string {
  if (returning)
    return html`<p class="notice" role="status">Sign in to go on: you are not signed in, or your session has ended.</p>`;
  return signedOut ? html`<p class="notice" role="status">You are signed out.</p>` : "";
}

function errorNote(error: string | undefined, retryAfterS: number | undefined): SafeHtml {
  return html`${error ? html`<p class="notice error" role="alert" id="${ERROR_ID}">${countdownText(error, retryAfterS)}</p>` : ""}`;
}

const ERROR_ID = "form-error";

// The field the refusal is about: announced as invalid, with the reason as its description.
function invalid(error: string | undefined): SafeHtml | null {
  return error ? html` aria-invalid="true" aria-describedby="${ERROR_ID}"` : null;
}
