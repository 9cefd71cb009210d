import { AppError } from "../errors.ts";
import { readBody } from "./body.ts";

/** Largest JSON body the credential endpoints accept. */
export const MAX_JSON_BYTES = 16 * 1024;

/**
 * Route parser for JSON endpoints: insists on `application/json`, reads at most 16 KiB and turns a
 * malformed document into 400 VALIDATION_ERROR (Elysia's own parser would accept any type).
 */
export async function parseJsonBody({ request }: { request: Request }): Promise<unknown> {
  const type = request.headers.get("content-type")?.split(";")[0]?.trim().toLowerCase();
  if (type !== "application/json") {
    throw new AppError(415, "UNSUPPORTED_MEDIA_TYPE", "Send the body as JSON with Content-Type: application/json.");
  }
  const bytes = await readBody(request, {
    maxBytes: MAX_JSON_BYTES,
    timeoutMs: 10_000,
    tooLarge: () => new AppError(413, "PAYLOAD_TOO_LARGE", `The JSON body is larger than ${MAX_JSON_BYTES} bytes.`),
  });
  let value: unknown;
  try {
    value = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes));
  } catch {
    throw new AppError(400, "VALIDATION_ERROR", "The body is not valid UTF-8 JSON.");
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new AppError(400, "VALIDATION_ERROR", "The body must be a JSON object.");
  }
  return value;
}
