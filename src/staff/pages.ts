import { doorLayout } from "../dashboard/layout.ts";
import { html, type SafeHtml } from "../html/index.ts";

/** A complete HTML response for a staff page, in the dashboard's look (the security headers come from `internalResponseHeaders`). */
export function pageResponse(title: string, body: SafeHtml, status = 200, headers: Record<string, string> = {}): Response {
  const doc = doorLayout(title, html`<h1>${title}</h1>
${body}`);
  return new Response(doc.text, { status, headers: { "content-type": "text/html; charset=utf-8", ...headers } });
}

/** Shown instead of the login form while no staff member exists. */
export function setupPage(): SafeHtml {
  return html`<p>No staff member is configured yet, so nobody can sign in here.</p>
<p>Add one on the server, then reload this page:</p>
<pre><code>imgpress staff add you@example.com</code></pre>
<p>or start the service with <code>IMGPRESS_STAFF_EMAILS=you@example.com</code> (a comma list). The address must receive mail from this service.</p>`;
}

/** The e-mail form. */
export function loginForm(next: string, error?: string): SafeHtml {
  return html`${errorNote(error)}<form method="post" action="/internal/login">
<input type="hidden" name="next" value="${next}">
<label for="email">E-mail address</label>
<input id="email" name="email" type="email" autocomplete="email" required autofocus>
<button type="submit" class="primary">Send me a sign-in code</button>
</form>`;
}

/** The code form; the same for every address, staff or not. */
export function codeForm(email: string, next: string, validMinutes: number, error?: string): SafeHtml {
  return html`${errorNote(error)}<p>If ${email} belongs to a staff member, a 6-digit code is on its way. It is valid for ${validMinutes} minutes.</p>
<form method="post" action="/internal/login/code">
<input type="hidden" name="email" value="${email}">
<input type="hidden" name="next" value="${next}">
<label for="code">Sign-in code</label>
<input id="code" name="code" type="text" inputmode="numeric" autocomplete="one-time-code" pattern="[0-9]{6}" maxlength="6" required autofocus>
<button type="submit" class="primary">Sign in</button>
</form>
<p><a href="/internal/login">Use another address</a></p>`;
}

function errorNote(error: string | undefined): SafeHtml {
  return html`${error ? html`<p class="notice error" role="alert">${error}</p>` : ""}`;
}
