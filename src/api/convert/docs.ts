/** OpenAPI description of POST /v1/plugin/convert (the route owns its parse step, so it has no body schema to derive this from). */
export const convertDocs = {
  summary: "Convert a JPEG or PNG to WebP or AVIF",
  description:
    "The converted image comes back in the answer, with the bytes saved in its headers. Any other method on this path is answered 405 METHOD_NOT_ALLOWED with Allow: POST.",
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
            image: {
              type: "string",
              format: "binary",
              description: "JPEG or PNG, at most 20 MiB; the type is detected from the bytes",
            },
            format: { type: "string", enum: ["webp", "avif"], default: "webp" },
            quality: { type: "string", enum: ["lossy", "lossless"], default: "lossy" },
            max_width: {
              type: "integer",
              minimum: 1,
              maximum: 999999999,
              description: "Scale down to this width; a larger value keeps the original size (never enlarges)",
            },
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
        "X-Savings-Percent": {
          description: "(1 - optimized/original) × 100, two decimals; negative when the result is larger",
          schema: { type: "string" },
        },
        "X-Quality": { description: "Encoder quality used (a number), or lossless", schema: { type: "string" } },
        "X-Quality-Reason": {
          description:
            "Why: preset, alpha, graphic, detail, smaller-lossless or requested, then budget and/or original-smaller when they apply",
          schema: { type: "string" },
        },
        "Content-Disposition": {
          description: "inline, with the upload's file name and the output format's extension",
          schema: { type: "string" },
        },
        "Cache-Control": { description: "no-store", schema: { type: "string" } },
        "Access-Control-Expose-Headers": {
          description: "The five X- headers above, for a deployment that adds CORS in its proxy",
          schema: { type: "string" },
        },
      },
      content: {
        "image/webp": { schema: { type: "string", format: "binary" } },
        "image/avif": { schema: { type: "string", format: "binary" } },
      },
    },
    ...Object.fromEntries(
      [
        [400, "UNSUPPORTED_FORMAT, INVALID_PARAMETER, MISSING_IMAGE, INVALID_MULTIPART, INCOMPLETE_BODY"],
        [
          401,
          "UNAUTHORIZED, INVALID_API_KEY, INVALID_SIGNATURE, TIMESTAMP_OUT_OF_RANGE, REPLAYED_REQUEST, SCHEME_DISABLED",
        ],
        [408, "REQUEST_TIMEOUT"],
        [413, "FILE_TOO_LARGE"],
        [415, "UNSUPPORTED_MEDIA_TYPE"],
        [422, "INVALID_IMAGE, IMAGE_TOO_LARGE"],
        [
          429,
          "TOO_MANY_IN_PROGRESS (the share of the places of this key, or of this client address whatever its keys, is taken; with Retry-After)",
        ],
        [500, "CONVERSION_FAILED, INTERNAL_ERROR"],
        [503, "SERVER_BUSY, STORAGE_UNAVAILABLE (with Retry-After)"],
        [504, "CONVERSION_TIMEOUT"],
      ].map(([status, codes]) => [
        status,
        {
          description: `Error: ${codes}`,
          // RFC 9110 asks every 401 for one; it names the schemes this server accepts.
          ...(status === 401
            ? {
                headers: {
                  "WWW-Authenticate": {
                    description: "The accepted schemes: Bearer and/or the signed scheme",
                    schema: { type: "string" },
                  },
                },
              }
            : {}),
          content: { "application/json": { schema: { $ref: "#/components/schemas/Error" } } },
        },
      ]),
    ),
  },
};
