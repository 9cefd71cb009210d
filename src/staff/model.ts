import { t } from "elysia";

/** Where the sign-out form posts, below INTERNAL_PREFIX. */
export const SIGN_OUT_ROUTE = "/logout";
/** Name of the form field that carries the session's CSRF token (or the X-CSRF-Token header). */
export const CSRF_FIELD = "csrf";

const next = t.Optional(t.String({ maxLength: 2048 }));

/** The flag the sign-out routes add to the login page's address; the page maps it to fixed words. */
export const SIGNED_OUT_FLAG = "signed_out";

/** Query of GET /internal/login. */
export const LoginQuery = t.Object({ next, [SIGNED_OUT_FLAG]: t.Optional(t.String({ maxLength: 8 })) });

/** Form of POST /internal/login. */
export const LoginForm = t.Object({
  email: t.String({ maxLength: 320 }),
  next,
  /** Sent by the code form's "Send a new code": a refusal then keeps the visitor on the code form. */
  resend: t.Optional(t.Literal("1")),
});

/** Form of POST /internal/login/code. */
export const CodeForm = t.Object({ email: t.String({ maxLength: 320 }), code: t.String({ maxLength: 32 }), next });

/** Form of the sign-out buttons (the CSRF token is checked by `staffAuth`, so a missing one is a 403, not a 400). */
export const CsrfForm = t.Object({ [CSRF_FIELD]: t.Optional(t.String({ maxLength: 200 })) });
