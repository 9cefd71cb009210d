/** OpenAPI description of POST /v1/plugin/convert (the route owns its parse step, so it has no body schema to derive this from). */
export const convertDocs = {
  summary: "Convert a JPEG or PNG to WebP or AVIF",
  tags: ["conversion"],
  security: [{ bearer: [] }, { signedKey: [], signedTimestamp: [], signedSignature: [] }],
  requestBody: {
    required: true,
    content: {
      "multipart/form-data": {
        schema: {
          type: "object",
          required: ["image"],
          properties: {
            image: { type: "string", format: "binary", description: "JPEG or PNG, at most 20 MiB; the type is detected from the bytes" },
            format: { type: "string", enum: ["webp", "avif"], default: "webp" },
            quality: { type: "string", enum: ["lossy", "lossless"], default: "lossy" },
            max_width: { type: "integer", minimum: 1, description: "Scale down to this width; a larger value keeps the original size (never enlarges)" },
          },
        },
      },
    },
  },
  responses: {
    200: {
      description: "The converted image",
      headers: {
        "X-Original-Size": { description: "Bytes of the uploaded image", schema: { type: "integer" } },
        "X-Optimized-Size": { description: "Bytes of the returned image", schema: { type: "integer" } },
        "X-Savings-Percent": { description: "(1 - optimized/original) × 100, two decimals; negative when the result is larger", schema: { type: "string" } },
        "X-Quality": { description: "Encoder quality used (a number), or lossless", schema: { type: "string" } },
        "X-Quality-Reason": { description: "Why: preset, alpha, graphic, detail, smaller-lossless or requested, then budget and/or original-smaller when they apply", schema: { type: "string" } },
      },
      content: { "image/webp": { schema: { type: "string", format: "binary" } }, "image/avif": { schema: { type: "string", format: "binary" } } },
    },
    ...Object.fromEntries(
      [
        [400, "UNSUPPORTED_FORMAT, INVALID_PARAMETER, MISSING_IMAGE, INVALID_MULTIPART, INCOMPLETE_BODY"],
        [401, "UNAUTHORIZED, INVALID_API_KEY, INVALID_SIGNATURE, TIMESTAMP_OUT_OF_RANGE, REPLAYED_REQUEST, SCHEME_DISABLED"],
        [408, "REQUEST_TIMEOUT"],
        [413, "FILE_TOO_LARGE"],
        [415, "UNSUPPORTED_MEDIA_TYPE"],
        [422, "INVALID_IMAGE, IMAGE_TOO_LARGE"],
        [429, "TOO_MANY_IN_PROGRESS (this key's share of the places is taken; with Retry-After)"],
        [500, "CONVERSION_FAILED, INTERNAL_ERROR"],
        [503, "SERVER_BUSY, STORAGE_UNAVAILABLE (with Retry-After)"],
        [504, "CONVERSION_TIMEOUT"],
      ].map(([status, codes]) => [
        status,
        { description: `Error: ${codes}`, content: { "application/json": { schema: { $ref: "#/components/schemas/Error" } } } },
      ]),
    ),
  },
};
