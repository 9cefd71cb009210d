import { AppError } from "../errors.ts";
import { readSmallBody } from "./body.ts";

/** Largest JSON body the credential endpoints accept. */
const MAX_JSON_BYTES = 16 * 1024;

/**
 * Route parser for JSON endpoints: insists on `application/json`, reads at most 16 KiB and turns a
 * malformed document into 400 VALIDATION_ERROR (Elysia's own parser would accept any type).
 */
export async function parseJsonBody({ request }: { request: Request }): Promise<unknown> {
  const bytes = await readSmallBody(request, {
    type: "application/json",
    wrongType: "Send the body as JSON with Content-Type: application/json.",
    maxBytes: MAX_JSON_BYTES,
    name: "JSON body",
  });
  let value: unknown;
  try {
    value = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes), dropConversionKeys);
  } catch (err) {
    // Valid JSON nested thousands deep overflows the parser's stack: said as what it is.
    if (err instanceof RangeError) throw new AppError(400, "VALIDATION_ERROR", "The JSON body is nested too deeply.");
    throw new AppError(400, "VALIDATION_ERROR", "The body is not valid UTF-8 JSON.");
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new AppError(400, "VALIDATION_ERROR", "The body must be a JSON object.");
  }
  return value;
}

// A value such as {"toString": "a"} is refused by the schema like any object where a string belongs,
// but Elysia's message writes the value into a template string, which calls that non-function and
// throws inside the error itself (a 500). The keys are never fields of these routes.
function dropConversionKeys(key: string, value: unknown): unknown {
  return key === "toString" || key === "valueOf" ? undefined : value;
}
