import { Elysia } from "elysia";
import { clientAddress, requestMeta } from "./meta.ts";

/** Works out each request's client address once, before any guard or route reads it (the app's first plugin). */
export function clientAddressing(behindProxy: boolean) {
  return new Elysia({ name: "client-addressing", seed: behindProxy }).onRequest(({ request }) => {
    requestMeta(request).client = clientAddress(request, behindProxy);
  });
}

/** The address `clientAddressing` worked out; "unknown" for a request that did not pass through it. */
export function clientOf(request: Request): string {
  return requestMeta(request).client ?? "unknown";
}

/** Gives a router's handlers `clientIp` (one derive for the whole app: routers `.use` it for its type). */
export const clientContext = new Elysia({ name: "client-context" }).derive({ as: "global" }, ({ request }) => ({
  clientIp: clientOf(request),
}));
