import { isIP } from "node:net";
import { Elysia } from "elysia";
import { RequestAuthenticator } from "./requestauth/service.ts";
import { issuanceRoutes } from "./issuance/index.ts";
import { KeyIssuance } from "./issuance/service.ts";
import type { Config } from "./config.ts";
import { masterKeyOrigin, pinMasterKey, secretBoxOf } from "./masterkey.ts";
import { deriveKey } from "./crypto.ts";
import type { Store } from "./db/index.ts";
import { ConversionGate } from "./convert/gate.ts";
import { convertRoutes } from "./convert/index.ts";
import { accountRoutes } from "./account/index.ts";
import { ConvertService } from "./convert/service.ts";
import { docsRoutes } from "./docs/index.ts";
import { errorHandler, RouteMethods } from "./http/errors.ts";
import { httpsGuard, internalGuard } from "./http/guards.ts";
import { clientAddress } from "./http/meta.ts";
import { KeyService } from "./keys/service.ts";
import type { Logger } from "./log.ts";
import type { Mailer } from "./mail/mailer.ts";
import { RateLimiter } from "./ratelimit/service.ts";
import { internalRoutes } from "./internal/index.ts";
import { liveState } from "./internal/service.ts";
import { dashboardRoutes } from "./dashboard/index.ts";
import { DashboardService } from "./dashboard/service.ts";
import { TlsStatus } from "./tls/status.ts";
import { AUDIT_TYPES, AuditLog } from "./audit/service.ts";
import { RequestCounter } from "./http/counter.ts";
import { IpAllowlist } from "./http/ipallow.ts";
import { API_PREFIX, CONVERT_PATH } from "./http/paths.ts";
import { KeyRevocation } from "./keys/revoke.ts";
import { internalResponseHeaders, staffAuth } from "./staff/auth.ts";
import { StaffDirectory } from "./staff/directory.ts";
import { staffRoutes } from "./staff/index.ts";
import { SessionService } from "./staff/sessions.ts";
import { StaffSignIn } from "./staff/signin.ts";
import { UsageRecorder } from "./usage/recorder.ts";
import { UsageQueries } from "./usage/service.ts";
import { Lifecycle } from "./lifecycle.ts";
import { healthRoutes } from "./health/index.ts";
import { Readiness } from "./health/service.ts";
import { metricsRoutes, routeRecorder } from "./metrics/index.ts";
import { Metrics } from "./metrics/service.ts";
import { observedMailer } from "./mail/mailer.ts";
import { databaseFolder, localPath } from "./db/index.ts";

/** Everything the app is built from; the runtime entry (or a test) supplies it. */
export interface AppDeps {
  config: Config;
  store: Store;
  mailer: Mailer;
  logger: Logger;
  masterKey: Uint8Array;
  /** The Scalar UI script for the docs page. */
  loadDocsAsset: () => Promise<Blob>;
  /** Clock in Unix milliseconds; tests inject their own. */
  now?: () => number;
}

/** The services behind the routes, exposed for the CLI, maintenance and tests. */
export interface Services {
  keys: KeyService;
  issuance: KeyIssuance;
  limiter: RateLimiter;
  authenticator: RequestAuthenticator;
  convert: ConvertService;
  /** Counts every conversion attempt into hourly buckets; `flush()` writes them. */
  usage: UsageRecorder;
  /** Reads the buckets and key counters for the dashboard and /internal/api. */
  usageQueries: UsageQueries;
  /** Draining state and shutdown hooks (a usage buffer joins with `lifecycle.onShutdown`). */
  lifecycle: Lifecycle;
  /** Prometheus metrics; observes conversions, mail and (through the runtime wrapper) HTTP answers. */
  metrics: Metrics;
  /** /health/ready; it turns 503 once `lifecycle` is draining. */
  readiness: Readiness;
  audit: AuditLog;
  staff: StaffDirectory;
  sessions: SessionService;
  staffSignIn: StaffSignIn;
  revocation: KeyRevocation;
  /** Requests per second for the live panel; ticked by the runtime's fetch handler. */
  requests: RequestCounter;
  /** The staff pages' data. */
  dashboard: DashboardService;
  /** The certificate this process serves, once it listens (set by the runtime edge, shown on the dashboard). */
  tls: TlsStatus;
}

/**
 * A conversion answered 504 keeps its slot while the encoder it cannot interrupt runs on; after
 * this many time limits (5 minutes at the default 60 s) that work is presumed hung and the slot
 * is given back, so a hung encoder cannot take the server's capacity for good.
 */
export const ABANDON_AFTER_LIMITS = 5;

/** Builds the services from their dependencies. */
export async function createServices(deps: AppDeps): Promise<Services> {
  const now = deps.now ?? Date.now;
  const keys = new KeyService(deps.store, await secretBoxOf(deps.masterKey), now);
  await pinMasterKey(deps.store, deps.masterKey, masterKeyOrigin(deps.config), () => keys.opensStoredSecrets());
  const limiter = new RateLimiter(deps.store, now);
  const memoryBudgetBytes = deps.config.memoryBudgetMb * 2 ** 20;
  const gate = new ConversionGate({
    concurrency: deps.config.concurrency,
    memoryBudgetBytes,
    queueSize: deps.config.queueSize,
    maxAdmittedPerOwner: deps.config.keyMaxAdmitted,
    queueTimeoutMs: deps.config.queueTimeoutS * 1000,
    abandonAfterMs: deps.config.convertTimeoutS * 1000 * ABANDON_AFTER_LIMITS,
    onAbandoned: (weight) => {
      metrics.observeAbandoned();
      deps.logger.error(
        `a conversion that timed out had still not stopped ${ABANDON_AFTER_LIMITS} × IMGPRESS_CONVERT_TIMEOUT_S later: its slot is given back; its memory may stay in use until it stops`,
        { weight, abandoned: gate.stats().abandoned },
      );
    },
  });
  const metrics = new Metrics(gate, { slots: deps.config.concurrency, queueSize: deps.config.queueSize }, localPath(deps.config.databaseUrl));
  // Key-code mail is counted in imgpress_mail_total. Staff sign-in mail is not: it goes to staff
  // addresses only, so the counter (readable without a session) would tell who is staff.
  const mailer = observedMailer(deps.mailer, (outcome) => metrics.observeMail(outcome));
  const audit = new AuditLog(deps.store, now);
  const lifecycle = new Lifecycle();
  const afterAnswer = (work: Promise<void>) => lifecycle.track(work);
  const issuance = new KeyIssuance({
    store: deps.store,
    keys,
    mailer,
    limiter,
    logger: deps.logger,
    audit,
    pepper: await deriveKey(deps.masterKey, "otp-pepper"),
    allowedEmails: deps.config.allowedEmails,
    now,
    afterAnswer,
  });
  const authenticator = new RequestAuthenticator(
    keys,
    deps.store,
    {
      schemes: deps.config.authSchemes,
      bodyHash: deps.config.signatureBody,
      toleranceS: deps.config.signatureToleranceS,
      // The spec's ENDPOINT may be written with or without the version prefix.
      endpoints: [CONVERT_PATH, API_PREFIX + CONVERT_PATH],
    },
    now,
  );
  const convert = new ConvertService(gate, { maxPixels: deps.config.maxPixels, timeoutS: deps.config.convertTimeoutS, qualityGuard: deps.config.qualityGuard, memoryBudgetBytes }, now);
  const usage = new UsageRecorder(deps.store, deps.logger, {}, now);
  convert.observe(usage.observer);
  convert.observe((event) => metrics.observeConversion(event));
  const readiness = new Readiness(deps.store, databaseFolder(deps.config.databaseUrl), () => lifecycle.draining, deps.logger);
  // In-flight conversions have reported by the time hooks run: write their counts before the store closes.
  lifecycle.onShutdown("usage flush", () => usage.finalFlush());
  // After the counts: a mail server that stalls holds the stop for at most the mail deadline (30 s).
  lifecycle.onShutdown("mail sent after answers", () => lifecycle.settled());
  const staff = new StaffDirectory(deps.store, deps.config.staffEmails, audit, now);
  const sessionLimits = { idleS: deps.config.staffSessionIdleS, maxS: deps.config.staffSessionMaxS };
  const sessions = new SessionService(deps.store, staff, await deriveKey(deps.masterKey, "staff-csrf"), sessionLimits, now);
  const staffSignIn = new StaffSignIn({
    store: deps.store,
    staff,
    sessions,
    mailer: deps.mailer,
    limiter,
    audit,
    logger: deps.logger,
    // Not the issuance pepper: a code of one door hashes to nothing the other door stores.
    pepper: await deriveKey(deps.masterKey, "staff-otp-pepper"),
    now,
    afterAnswer,
  });
  const revocation = new KeyRevocation(keys, audit);
  const usageQueries = new UsageQueries(deps.store, now);
  const requests = new RequestCounter();
  const tls = new TlsStatus();
  const dashboard = new DashboardService({
    usage: usageQueries,
    audit,
    auditTypes: AUDIT_TYPES,
    staff,
    sessions,
    live: () => liveState(gate, requests),
    tls: () => tls.view(),
    config: deps.config,
    now,
  });
  return {
    keys,
    issuance,
    limiter,
    authenticator,
    convert,
    usage,
    usageQueries,
    lifecycle,
    metrics,
    readiness,
    audit,
    staff,
    sessions,
    staffSignIn,
    revocation,
    requests,
    dashboard,
    tls,
  };
}

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
  const clientIp = (request: Request) => clientAddress(request, config.behindProxy);
  const auth = staffAuth(services.sessions, config.behindProxy);
  const staffDeps = { auth, sessions: services.sessions, staff: services.staff, signIn: services.staffSignIn, clientIp };
  const methods = new RouteMethods();
  const app = new Elysia()
    .use(errorHandler(logger, methods))
    .use(httpsGuard(proxies))
    .use(internalGuard(new IpAllowlist(config.internalAllow), clientIp))
    .use(internalResponseHeaders())
    .use(routeRecorder())
    .use(healthRoutes(deps.store, services.readiness))
    .use(docsRoutes(deps.loadDocsAsset, config.authSchemes))
    .use(staffRoutes({ ...staffDeps, behindProxy: config.behindProxy, sessionMaxS: config.staffSessionMaxS }))
    .use(
      internalRoutes({
        ...staffDeps,
        gate: services.convert.gate,
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
        clientIp,
        dashboard: services.dashboard,
      }),
    )
    .use(metricsRoutes(services.metrics, config.metricsToken))
    .group(API_PREFIX, (v1) =>
      v1.use(issuanceRoutes(services.issuance, clientIp)).use(convertRoutes(services.convert, services.authenticator, config.uploadTimeoutS * 1000, clientIp)).use(accountRoutes({ config, store: deps.store, keys: services.keys, usage: services.usageQueries, now: deps.now })),
    );
  methods.learn(app.routes);
  return app;
}

/** The app's type, for tests and entries. */
export type App = ReturnType<typeof createApp>;
