// The OpenAPI document @elysiajs/swagger generates, made to say what the service does and to be
// valid OpenAPI 3.0.3: the plugin lists JSON, multipart and text for every body and answer of a
// route whose parser is a function (the credential routes take JSON only, and answer 415 to the
// rest), leaves answers without the description 3.0 requires, and writes the 3.1 schema keywords
// `const` and `examples` and Elysia's string-or-integer for an integer. Elysia also writes
// `additionalProperties: false` into a route's schemas once that route has validated a request; the
// service ignores unknown fields (docs/api.md), and the document must not change with its traffic.

import { statusTitles } from "../errors.ts";

type Json = Record<string, unknown>;

/** The media types the plugin assumes for a route it cannot read the parser of. */
const GUESSED = ["multipart/form-data", "text/plain"];

/** `doc` (the plugin's document, not changed) as the service serves it: see the file's comment. */
export function tidyOpenApi(doc: Json): Json {
  const copy = structuredClone(doc);
  for (const operations of Object.values((copy.paths ?? {}) as Record<string, Record<string, Json>>)) {
    for (const operation of Object.values(operations)) tidyOperation(operation);
  }
  for (const schema of Object.values(((copy.components as Json | undefined)?.schemas ?? {}) as Record<string, Json>)) tidySchema(schema);
  return copy;
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
    if (typeof answer.description !== "string") answer.description = statusTitles[Number(status)] ?? (status === "200" ? "OK" : `HTTP ${status}`);
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
