import { t } from "elysia";

/** The one error type the service raises on purpose; `onError` renders it as `{ error, message, code }`. */
export class AppError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    /** Extra response headers, e.g. `Retry-After` on 429/503. */
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
    this.name = "AppError";
  }
}

/** Short human titles for the statuses the service uses (the `error` field of the body). */
export const statusTitles: Record<number, string> = {
  303: "See Other",
  400: "Bad Request",
  409: "Conflict",
  401: "Unauthorized",
  403: "Forbidden",
  404: "Not Found",
  405: "Method Not Allowed",
  408: "Request Timeout",
  413: "Payload Too Large",
  415: "Unsupported Media Type",
  422: "Unprocessable Entity",
  429: "Too Many Requests",
  431: "Request Header Fields Too Large",
  // nginx's code for a client that went away before its answer; nobody reads the body, the log and metrics do.
  499: "Client Closed Request",
  500: "Internal Server Error",
  502: "Bad Gateway",
  503: "Service Unavailable",
  504: "Gateway Timeout",
};

/** The shape of every error body (spec 2.3); the docs and the routes' response schemas use it. */
export const ErrorModel = t.Object(
  {
    error: t.String({ description: "Short title of the error", examples: ["Unauthorized"] }),
    message: t.String({ description: "Human-readable explanation" }),
    code: t.String({ description: "Machine-readable code", examples: ["INVALID_OTP"] }),
  },
  { title: "Error" },
);

/** The JSON error body of spec 2.3. */
export type ErrorBody = typeof ErrorModel.static;

/** A route's response schema for one error status, described (in the OpenAPI document) by the codes it carries. */
export function errorAnswer(codes: string): typeof ErrorModel {
  return { ...ErrorModel, description: `Error: ${codes}` };
}

/** Builds the JSON error response for an AppError (also used outside Elysia, e.g. by the HTTPS guard). */
export function errorResponse(err: AppError, extraHeaders: Record<string, string> = {}): Response {
  const body: ErrorBody = { error: statusTitles[err.status] ?? "Error", message: err.message, code: err.code };
  return new Response(JSON.stringify(body), {
    status: err.status,
    // Written as Elysia writes its JSON answers, so a client comparing the header sees one value.
    headers: { "content-type": "application/json;charset=utf-8", ...err.headers, ...extraHeaders },
  });
}

/** 429 with a whole-second `Retry-After`. */
export function rateLimited(code: string, message: string, retryAfterMs: number): AppError {
  const seconds = Math.max(1, Math.ceil(retryAfterMs / 1000));
  return new AppError(429, code, `${message} Retry in ${seconds} s.`, { "retry-after": String(seconds) });
}

/** The answer to an unknown route (also to any /internal/ path from outside its allowlist). */
export function notFound(): AppError {
  return new AppError(404, "NOT_FOUND", "No such route. See /v1/docs for the API.");
}

/** The answer to a public route asked with a method it does not answer; `Allow` lists those it does. */
export function methodNotAllowed(path: string, allowed: readonly string[]): AppError {
  const list = allowed.join(", ");
  return new AppError(405, "METHOD_NOT_ALLOWED", `${path} answers ${list} only. See /v1/docs for the API.`, {
    allow: list,
  });
}

/** 500 naming the request id, the one detail the operator needs to find the logged cause. */
export function internalError(requestId: string): AppError {
  return new AppError(500, "INTERNAL_ERROR", `Something went wrong on our side (request ${requestId}).`);
}
