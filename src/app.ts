import { isIP } from "node:net";
import { Elysia } from "elysia";
import { accountRoutes } from "./api/account/index.ts";
import { convertRoutes } from "./api/convert/index.ts";
import { issuanceRoutes } from "./api/issuance/index.ts";
import { docsRoutes } from "./api/openapi/index.ts";
import { apiAuth } from "./api/requestauth/index.ts";
import type { Config } from "./core/config.ts";
import { clientAddressing } from "./core/http/client.ts";
import { errorHandler, RouteMethods } from "./core/http/errors.ts";
import { httpsGuard, internalGuard } from "./core/http/guards.ts";
import { API_PREFIX } from "./core/http/paths.ts";
import { createFetchHandler, observeAll } from "./core/http/serve.ts";
import { IpAllowlist } from "./core/ipallow.ts";
import type { Logger } from "./core/log.ts";
import { healthRoutes } from "./ops/health/index.ts";
import { metricsRoutes, routeRecorder } from "./ops/metrics/index.ts";
import type { AppDeps, Services } from "./services.ts";
import { internalRoutes } from "./staff/api/index.ts";
import { internalResponseHeaders, staffAuth } from "./staff/auth.ts";
import { dashboardRoutes } from "./staff/dashboard/index.ts";
import { staffRoutes } from "./staff/index.ts";

/**
 * Who may speak for clients in proxy mode: the configured proxies, loopback, and the listen
 * address when it is one (`imgpress health` probes from this machine, from that address when the
 * server listens on it alone): a TCP peer with the machine's own address is a local process.
 */
function trustedPeers(config: Config): string[] {
  const own = isIP(config.host) && config.host !== "0.0.0.0" && config.host !== "::" ? [config.host] : [];
  return [...config.trustedProxies, "127.0.0.1", "::1", ...own];
}

/** The whole HTTP surface on one page. */
export function createApp(deps: AppDeps, services: Services) {
  const { config, logger } = deps;
  const proxies = config.behindProxy ? new IpAllowlist(trustedPeers(config)) : undefined;
  const auth = staffAuth(services.sessions, config.behindProxy);
  // Every /v1 route but the credential ones takes the key macro: `apiKey: true` (bearer or signature).
  const keyAuth = apiAuth(services.authenticator);
  const staffDeps = { auth, sessions: services.sessions, staff: services.staff, signIn: services.staffSignIn };
  const methods = new RouteMethods();
  const app = new Elysia()
    .use(clientAddressing(config.behindProxy))
    .use(errorHandler(logger, methods))
    .use(httpsGuard(proxies, logger))
    .use(internalGuard(new IpAllowlist(config.internalAllow)))
    .use(internalResponseHeaders())
    .use(routeRecorder())
    .use(healthRoutes(deps.store, services.readiness))
    .use(docsRoutes(deps.loadDocsAsset, config.authSchemes))
    .use(staffRoutes({ ...staffDeps, behindProxy: config.behindProxy, sessionMaxS: config.staffSessionMaxS }))
    .use(
      internalRoutes({
        ...staffDeps,
        gate: services.gate,
        requests: services.requests,
        audit: services.audit,
        revocation: services.revocation,
        usage: services.usageQueries,
        config,
        now: deps.now ?? Date.now,
      }),
    )
    .use(
      dashboardRoutes({
        auth,
        staff: services.staff,
        revocation: services.revocation,
        dashboard: services.dashboard,
        testMail: services.staffTestMail,
      }),
    )
    .use(metricsRoutes(services.metrics, config.metricsToken))
    .group(API_PREFIX, (v1) =>
      v1
        .use(keyAuth)
        .use(issuanceRoutes(services.issuance))
        .use(
          convertRoutes(services.convert, keyAuth, {
            timeoutMs: config.uploadTimeoutS * 1000,
            minBytesPerS: config.uploadMinRateKib * 1024,
            ipv6PrefixBits: config.clientIpv6Prefix,
          }),
        )
        .use(
          accountRoutes({
            keyAuth,
            usage: services.usageQueries,
            keyMaxAdmitted: config.keyMaxAdmitted,
            now: deps.now,
          }),
        ),
    );
  methods.learn(app.routes);
  return app;
}

/** The app's type, for tests and entries. */
export type App = ReturnType<typeof createApp>;

/**
 * What the runtime's server calls for every request, around `app.handle`: the request id and
 * peer, the refusals the app must never see (a malformed Host, oversized headers), the common
 * headers, the request log line and the metrics (see createFetchHandler).
 */
export function createRequestHandler(app: App, services: Services, config: Config, logger: Logger) {
  return createFetchHandler((request) => app.handle(request), logger, {
    hsts: !config.behindProxy,
    counter: services.requests,
    observe: observeAll(services.metrics.observeResponse, services.refusals.observer, services.history.observer),
    draining: () => services.lifecycle.draining,
  });
}
