import { Elysia } from "elysia";
import { noteKey } from "../../core/http/meta.ts";
import type { RequestAuthenticator } from "./service.ts";

/**
 * Route option `apiKey: true`: authenticates the request from its headers before the body is
 * read and resolves `credential`; the route calls `credential.verifyBody` once it has the bytes.
 */
export function apiAuth(authenticator: RequestAuthenticator) {
  return new Elysia({ name: "api-auth" }).macro({
    apiKey: {
      async resolve({ request }) {
        // The key named is noted on the request, so a refusal after this point is counted against it.
        return {
          credential: await authenticator.fromHeaders(
            request.method,
            new URL(request.url).pathname,
            request.headers,
            (id) => noteKey(request, id),
          ),
        };
      },
    },
  });
}

/** The `apiAuth` plugin: one instance for the whole app, applied to the /v1 group and used by the routers for its macro's type. */
export type ApiAuth = ReturnType<typeof apiAuth>;
