// The OpenAPI document @elysiajs/swagger generates, made to say what the service does and to be
// valid OpenAPI 3.0.3: the plugin lists JSON, multipart and text for every body and answer of a
// route whose parser is a function (the credential routes take JSON only, and answer 415 to the
// rest), leaves answers without the description 3.0 requires, and writes the 3.1 schema keywords
// `const` and `examples` and Elysia's string-or-integer for an integer. Elysia also writes
// `additionalProperties: false` into a route's schemas once that route has validated a request; the
// service ignores unknown fields (docs/api.md), and the document must not change with its traffic.
// The answers every route can give before or around its own (a bad Host, plain HTTP behind a
// proxy, a fault) and the headers that come with them are added here, once for all routes.

import { statusTitles } from "../../core/errors.ts";

type Json = Record<string, unknown>;

/** The media types the plugin assumes for a route it cannot read the parser of. */
const GUESSED = ["multipart/form-data", "text/plain"];

/** Answers any route can give, by status: the code and when. */
const EVERY_ROUTE: Record<string, string> = {
  400: "INVALID_HOST (the Host header is missing or not a host name)",
  403: "HTTPS_REQUIRED (behind a proxy: the request did not reach it over HTTPS)",
  500: "INTERNAL_ERROR",
};

const RETRY_AFTER = {
  description:
    "Seconds to wait before trying again: sent with RATE_LIMITED, TOO_MANY_IN_PROGRESS, SERVER_BUSY and STORAGE_UNAVAILABLE",
  schema: { type: "integer" },
};

/** The security schemes of each scheme `IMGPRESS_AUTH_SCHEMES` can name. */
const SCHEME_PARTS: Record<string, string[]> = {
  bearer: ["bearer"],
  signed: ["signedKey", "signedTimestamp", "signedSignature"],
};

/**
 * `doc` (the plugin's document, not changed) as the service serves it, offering only the request
 * authentication schemes this server accepts (`schemes`): see the file's comment.
 */
export function tidyOpenApi(doc: Json, schemes: readonly string[]): Json {
  const copy = structuredClone(doc);
  const offered = new Set(schemes.flatMap((scheme) => SCHEME_PARTS[scheme] ?? []));
  for (const [path, operations] of Object.entries((copy.paths ?? {}) as Record<string, Record<string, Json>>)) {
    for (const operation of Object.values(operations)) {
      tidyOperation(operation);
      // The health routes' 503 says the server is unwell, with no time to wait.
      addEveryRouteAnswers(operation, !path.startsWith("/health"));
      if (Array.isArray(operation.security)) {
        operation.security = (operation.security as Json[]).filter((alternative) =>
          Object.keys(alternative).every((name) => offered.has(name)),
        );
      }
    }
  }
  const components = copy.components as Json | undefined;
  const securitySchemes = components?.securitySchemes as Json | undefined;
  for (const name of Object.keys(securitySchemes ?? {})) if (!offered.has(name)) delete securitySchemes![name];
  for (const schema of Object.values((components?.schemas ?? {}) as Record<string, Json>)) tidySchema(schema);
  return copy;
}

function addEveryRouteAnswers(operation: Json, retryAfter: boolean): void {
  const responses = (operation.responses ??= {}) as Record<string, Json>;
  for (const [status, code] of Object.entries(EVERY_ROUTE)) {
    const answer = responses[status];
    if (!answer)
      responses[status] = {
        description: `Error: ${code}`,
        content: { "application/json": { schema: { $ref: "#/components/schemas/Error" } } },
      };
    else if (!String(answer.description).includes(code.split(" ")[0]!))
      answer.description = `${answer.description}, ${code}`;
  }
  for (const status of retryAfter ? ["429", "503"] : []) {
    const answer = responses[status];
    if (answer) answer.headers = { "Retry-After": RETRY_AFTER, ...(answer.headers as Json | undefined) };
  }
}

function tidyOperation(operation: Json): void {
  const body = operation.requestBody as { content?: Record<string, Json> } | undefined;
  // Every body the plugin guessed types for is read as JSON (the convert route describes its own).
  if (body?.content?.["application/json"]) for (const type of GUESSED) delete body.content[type];
  for (const media of Object.values(body?.content ?? {})) tidyMedia(media);
  for (const [status, answer] of Object.entries((operation.responses ?? {}) as Record<string, Json>)) {
    const content = answer.content as Record<string, Json> | undefined;
    // Answers are JSON, or the image the convert route describes.
    if (content?.["application/json"]) for (const type of GUESSED) delete content[type];
    for (const media of Object.values(content ?? {})) tidyMedia(media);
    // The error bodies' own titles; 200 is the one success the plugin leaves undescribed.
    if (typeof answer.description !== "string")
      answer.description = statusTitles[Number(status)] ?? (status === "200" ? "OK" : `HTTP ${status}`);
    delete answer.title;
  }
}

function tidyMedia(media: Json): void {
  if (media.schema && typeof media.schema === "object") tidySchema(media.schema as Json);
}

// OpenAPI 3.0's schema dialect: `const` → a one-value `enum`, `examples` → `example`, and Elysia's
// "a string of digits or an integer" (it accepts both on input) → the integer it sends.
function tidySchema(schema: Json): void {
  const anyOf = schema.anyOf as Json[] | undefined;
  if (anyOf?.length === 2) {
    const numeric = anyOf.find((s) => s.type === "string" && (s.format === "integer" || s.format === "number"));
    const other = anyOf.find((s) => s !== numeric);
    if (numeric && other && (other.type === "integer" || other.type === "number")) {
      delete schema.anyOf;
      Object.assign(schema, other, schema.description ? { description: schema.description } : {});
    }
  }
  if (schema.additionalProperties === false) delete schema.additionalProperties;
  if ("const" in schema) {
    schema.enum = [schema.const];
    delete schema.const;
  }
  if (Array.isArray(schema.examples)) {
    if (schema.example === undefined && schema.examples.length > 0) schema.example = schema.examples[0];
    delete schema.examples;
  }
  for (const key of ["properties", "patternProperties"]) {
    for (const child of Object.values((schema[key] ?? {}) as Record<string, Json>)) tidySchema(child);
  }
  for (const key of ["items", "additionalProperties", "not"]) {
    const child = schema[key];
    if (child && typeof child === "object" && !Array.isArray(child)) tidySchema(child as Json);
  }
  for (const key of ["anyOf", "oneOf", "allOf"]) for (const child of (schema[key] ?? []) as Json[]) tidySchema(child);
}
