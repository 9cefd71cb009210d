import { Elysia, ValidationError } from "elysia";
import { driverMessage, FILE_LOST, storageFaultCode, storageUnavailable } from "../../data/db/faults.ts";
import { AppError, internalError, methodNotAllowed, notFound } from "../errors.ts";
import type { Logger } from "../log.ts";
import { redactPath } from "../redact.ts";
import { answerError, requestMeta } from "./meta.ts";
import { INTERNAL_PREFIX } from "./paths.ts";

/**
 * The single error mapper: AppError as is, Elysia's validation/parse/not-found errors in the same
 * `{ error, message, code }` shape, a database storage fault (disk full, read-only…) as 503
 * STORAGE_UNAVAILABLE logged for the operator, anything else as 500 INTERNAL_ERROR logged with the request id.
 */
export function errorHandler(logger: Logger, methods: RouteMethods = new RouteMethods()) {
  return new Elysia({ name: "error-handler" })
    .error({ AppError })
    .onError({ as: "global" }, ({ code, error, request, route }) => {
      const meta = requestMeta(request);
      const id = meta.id;
      // The metrics label errors by route too; routing has happened when an error reaches here.
      meta.route ??= route || undefined;
      const known = toAppError(code, error, request, methods);
      const fault = known ? null : storageFaultCode(error);
      // Only the two logged cases need the path: the usual 4xx answers skip the URL parse.
      // A lost database file was logged once, when it was found: every request after it would repeat the line.
      if (fault === FILE_LOST) logger.debug("storage unavailable", { requestId: id, fault });
      else if (fault)
        logger.error("storage unavailable", {
          requestId: id,
          path: pathOf(request),
          fault,
          error: driverMessage(error),
        });
      else if (!known)
        logger.error("unhandled error", {
          requestId: id,
          method: request.method,
          path: pathOf(request),
          error: error as Error,
        });
      // The code the client gets, STORAGE_UNAVAILABLE included, is the one the metrics count.
      return answerError(request, known ?? (fault ? storageUnavailable() : internalError(id)));
    });
}

const pathOf = (request: Request) => redactPath(new URL(request.url).pathname);

/**
 * The methods each public path answers, learnt from the built app: a known path asked with another
 * method gets 405 and `Allow`, not a 404 that would say the route does not exist. Paths with
 * parameters and everything under /internal/ are left out, so those stay 404 (the staff routes
 * answer outsiders 404 whatever the method).
 */
export class RouteMethods {
  private readonly byPath = new Map<string, string[]>();

  /** Takes the app's routes (Elysia's `app.routes`) once it is built. */
  learn(routes: readonly { method: string; path: string }[]): void {
    for (const { method, path } of routes) {
      if (path.startsWith(INTERNAL_PREFIX) || /[:*]/.test(path)) continue;
      // Elysia answers HEAD on every GET route.
      const added = method === "GET" ? ["GET", "HEAD"] : [method];
      this.byPath.set(path, [...new Set([...(this.byPath.get(path) ?? []), ...added])]);
    }
  }

  /** The methods `path` answers, or null for a path no public route has. */
  allowed(path: string): readonly string[] | null {
    return this.byPath.get(path) ?? null;
  }
}

function toAppError(code: string | number, error: unknown, request: Request, methods: RouteMethods): AppError | null {
  if (error instanceof AppError) return error;
  // Elysia wraps whatever a parser throws in a ParseError; our parsers throw AppErrors on purpose.
  if (code === "PARSE" && (error as Error).cause instanceof AppError) return (error as Error).cause as AppError;
  if (error instanceof ValidationError) return validationError(error, request);
  switch (code) {
    case "NOT_FOUND": {
      const path = new URL(request.url).pathname;
      const allowed = methods.allowed(path);
      return allowed ? methodNotAllowed(path, allowed) : notFound();
    }
    case "PARSE":
      return new AppError(400, "VALIDATION_ERROR", "The request body could not be parsed.");
    case "INVALID_COOKIE_SIGNATURE":
      return new AppError(400, "VALIDATION_ERROR", "Invalid cookie.");
    default:
      return null;
  }
}

interface ValueError {
  path?: string;
  summary?: string;
  message?: string;
  value?: unknown;
  schema?: { type?: string; anyOf?: { const?: unknown; type?: string; format?: string }[] };
}

// Elysia reports JSON-pointer paths ("/site_url"); the message names the field the way the client wrote it.
function validationError(error: ValidationError, request: Request): AppError {
  const first = error.all[0] as ValueError | undefined;
  const field = first?.path?.replace(/^\//, "").replaceAll("/", ".") || coercedQueryField(first, request) || "body";
  return new AppError(400, "VALIDATION_ERROR", `${field}: ${describe(first)}`);
}

/**
 * A query number that fails its bounds after coercion comes without a path: it is named by the one
 * parameter whose number is that value, or as "query" when none or several are (never as "body").
 */
function coercedQueryField(first: ValueError | undefined, request: Request): string | undefined {
  if (typeof first?.value !== "number") return undefined;
  const url = URL.parse(request.url);
  if (!url) return undefined;
  const params = [...url.searchParams];
  if (params.length === 0) return undefined;
  const holders = params.filter(([, value]) => value.trim() !== "" && Number(value) === first.value);
  return holders.length === 1 ? holders[0]![0] : "query";
}

// Elysia's own summaries name a literal union's members by type ("one of: 'string', 'string'"), a
// query number as the union it is coerced through ("one of: 'integer', 'integer'"), and print an array as its first item.
function describe(first: ValueError | undefined): string {
  const members = first?.schema?.anyOf ?? [];
  const literals = members.map((s) => s.const);
  if (literals.length && literals.every((v) => v !== undefined))
    return `must be one of ${literals.map((v) => JSON.stringify(v)).join(", ")}`;
  const kinds = new Set(members.map((s) => s.format ?? s.type));
  if (kinds.size && [...kinds].every((kind) => kind === "integer")) return "must be a whole number";
  if (kinds.size && [...kinds].every((kind) => kind === "numeric" || kind === "number" || kind === "integer"))
    return "must be a number";
  if (Array.isArray(first?.value) && first?.schema?.type && first.schema.type !== "array")
    return `expected a ${first.schema.type}, got an array`;
  return first?.summary ?? first?.message ?? "is invalid";
}
