// The public routes' paths in one place: the routers register them, the signature check signs
// them and the metrics count them, so renaming one cannot leave the others behind.

/** Every staff route's prefix: the dashboard, the staff API, sign-in and metrics; the allowlist guard hides it (one segment). */
export const INTERNAL_PREFIX = "/internal";
/** The public API's version prefix (the routes are answered under it only). */
export const API_PREFIX = "/v1";
/** POST: convert an image (spec 4.1); below API_PREFIX. */
export const CONVERT_PATH = "/plugin/convert";
/** POST: e-mail a one-time code (spec 4.2); below API_PREFIX. */
export const REQUEST_OTP_PATH = "/plugin/auth/request-otp";
/** POST: exchange the code for keys (spec 4.3); below API_PREFIX. */
export const VERIFY_OTP_PATH = "/plugin/auth/verify-otp";
