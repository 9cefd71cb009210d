import { Elysia } from "elysia";
import type { AppError } from "../core/errors.ts";
import type { SafeHtml } from "../core/html.ts";
import { clientContext } from "../core/http/client.ts";
import { INTERNAL_PREFIX } from "../core/http/paths.ts";
import { otpLimits, RECENT_CODE } from "../data/otp/limits.ts";
import { OTP_MAX_ATTEMPTS } from "../data/otp/service.ts";
import { assertSameOrigin, hidden, safeNext, sessionCookie, type staffAuth, staffPage } from "./auth.ts";
import type { StaffDirectory } from "./directory.ts";
import { parseFormBody } from "./form.ts";
import type { Notice } from "./layout.ts";
import { CodeForm, CsrfForm, LoginForm, LoginQuery, SIGN_OUT_ROUTE, SIGNED_OUT_FLAG } from "./model.ts";
import { codeForm, loginForm, orRefusal, pageResponse, type Refusal, setupPage } from "./pages.ts";
import type { SessionService } from "./sessions.ts";
import { CodeRefused, STAFF_CODE_TTL_S, type StaffSignIn } from "./signin.ts";

/** What the staff pages need. */
export interface StaffRouteDeps {
  /** The shared `staffAuth` plugin (one instance for the whole app). */
  auth: ReturnType<typeof staffAuth>;
  staff: StaffDirectory;
  sessions: SessionService;
  signIn: StaffSignIn;
  behindProxy: boolean;
  sessionMaxS: number;
}

const minutes = STAFF_CODE_TTL_S / 60;

// Where a sign-out lands: the login page, told by a fixed flag to confirm it (never text from the URL).
const SIGNED_OUT_PAGE = `${INTERNAL_PREFIX}/login?${SIGNED_OUT_FLAG}=1`;

/** The staff door: login form, code form and sign-out (HTML, never in the public docs); the dashboard is behind it. */
export function staffRoutes(deps: StaffRouteDeps) {
  const leave = (token: string, location: string) =>
    new Response(null, { status: 303, headers: { location, "set-cookie": sessionCookie(token, deps.sessionMaxS) } });
  return signInRoutes(deps, leave)
    .post(
      SIGN_OUT_ROUTE,
      async ({ staff, clientIp }) => {
        await deps.signIn.signOut(staff, clientIp);
        return leave("", SIGNED_OUT_PAGE);
      },
      { ...staffPage(), parse: parseFormBody, body: CsrfForm },
    )
    .post(
      "/logout/everywhere",
      async ({ staff, clientIp }) => {
        await deps.signIn.signOutEverywhere(staff.email, clientIp);
        return leave("", SIGNED_OUT_PAGE);
      },
      { ...staffPage(), parse: parseFormBody, body: CsrfForm },
    );
}

// The login form, the code it sends and the code form, which ends in a session cookie (`leave`).
function signInRoutes(deps: StaffRouteDeps, leave: (token: string, location: string) => Response) {
  return new Elysia({ name: "staff", prefix: INTERNAL_PREFIX })
    .use(deps.auth)
    .use(clientContext)
    .get(
      "/login",
      async ({ query, request }) =>
        asPage(
          request,
          "Staff sign-in",
          (m, err) => loginForm(shownNext(query.next), refusal(m, err)),
          async () => {
            const next = safeNext(query.next);
            if (!(await deps.staff.any())) return pageResponse("Set up staff access", setupPage());
            const signedOut = query[SIGNED_OUT_FLAG] === "1";
            return pageResponse("Staff sign-in", loginForm(next, { returning: query.next !== undefined, signedOut }));
          },
        ),
      { query: LoginQuery, ...hidden() },
    )
    .post(
      "/login",
      async ({ body, request, clientIp }) =>
        // A new code asked for on the code form stays there, sent or refused: a refusal leaves the code already sent valid.
        asPage(
          request,
          body.resend ? "Enter your code" : "Staff sign-in",
          (m, err) =>
            body.resend
              ? codeForm(body.email, shownNext(body.next), minutes, { notice: resendRefused(m, err) })
              : loginForm(shownNext(body.next), { ...refusal(m, err), email: body.email }),
          async () => {
            assertSameOrigin(request, deps.behindProxy);
            const next = safeNext(body.next);
            const email = await deps.signIn.requestCode(body.email, clientIp);
            return pageResponse(
              "Enter your code",
              codeForm(email, next, minutes, { notice: body.resend ? resent(email) : undefined }),
            );
          },
        ),
      { parse: parseFormBody, body: LoginForm, ...hidden() },
    )
    .post(
      "/login/code",
      async ({ body, request, clientIp }) =>
        asPage(
          request,
          "Enter your code",
          (m, err) =>
            codeForm(body.email, shownNext(body.next), minutes, {
              ...refusal(m, err),
              // After a wrong code with tries left, a new code would only replace the one in the mail.
              offerNewCode: !(err instanceof CodeRefused) || err.offerNewCode,
            }),
          async () => {
            assertSameOrigin(request, deps.behindProxy);
            const next = safeNext(body.next);
            const input = {
              email: body.email,
              code: body.code.trim(),
              ip: clientIp,
              userAgent: request.headers.get("user-agent") ?? "",
            };
            return leave((await deps.signIn.verify(input)).token, next);
          },
        ),
      { parse: parseFormBody, body: CodeForm, ...hidden() },
    );
}

// A refused form (a foreign Origin and an unsafe return page included) answers with the same page
// and the reason, at the error's status.
function asPage(
  request: Request,
  title: string,
  form: (message: string, err: AppError) => SafeHtml,
  run: () => Promise<Response>,
): Promise<Response> {
  return orRefusal(request, run, (err) => pageResponse(title, form(err.message, err), err.status, err.headers));
}

// A new code sent from the code form: the page must show that something happened, the same for any address.
function resent(email: string): Notice {
  return {
    kind: "info",
    text: `If ${email} belongs to a staff member, a new code is on its way; the code sent before no longer works.`,
  };
}

// A new code asked for within the minute: when the next one may be asked for, and that the one
// sent still works unless wrong tries ended it (said for every address alike: staff or not, nothing
// differs). A longer wait (five codes within the hour) may outlast the code; another refusal (the
// day's wrong codes used up, the IP's limit) leaves no code in force: each says its own reason.
function resendRefused(message: string, err: AppError): Notice {
  const { retryAfterS } = refusal(message, err);
  if (retryAfterS === undefined || !message.startsWith(RECENT_CODE))
    return { kind: "error", text: message, retryAfterS };
  const [minute, hour] = otpLimits.requestPerAddress;
  if (retryAfterS > minute!.windowMs / 1000) {
    return {
      kind: "error",
      text: `${hour!.limit} codes were requested for this address within the hour: a new one can be sent in ${retryAfterS} s.`,
      retryAfterS,
    };
  }
  return {
    kind: "error",
    text: `A new code can be sent in ${retryAfterS} s; until then the code already sent still works, unless ${OTP_MAX_ATTEMPTS} wrong tries ended it.`,
    retryAfterS,
  };
}

// A refused form's reason, with the wait of a rate limit (its Retry-After) for the page to count down.
function refusal(message: string, err: AppError): Refusal {
  const wait = Number(err.headers?.["retry-after"]);
  return { error: message, ...(err.status === 429 && Number.isFinite(wait) ? { retryAfterS: wait } : {}) };
}

// The return page a refused form is shown again with: the one asked for when safe, else the overview.
function shownNext(next: string | undefined): string {
  try {
    return safeNext(next);
  } catch {
    return safeNext(undefined);
  }
}
