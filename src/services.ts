import { statfs } from "node:fs/promises";
import { memoryUsage } from "node:process";
import { KeyIssuance } from "./api/issuance/service.ts";
import { RequestAuthenticator } from "./api/requestauth/service.ts";
import { ConversionGate } from "./conversion/gate.ts";
import { ConvertService } from "./conversion/service.ts";
import type { Config } from "./core/config.ts";
import { deriveKey } from "./core/crypto.ts";
import { RequestCounter } from "./core/http/counter.ts";
import { clientAddress } from "./core/http/meta.ts";
import type { Logger } from "./core/log.ts";
import { type Mailer, observedMailer } from "./core/mail/mailer.ts";
import { AUDIT_TYPES, AuditLog } from "./data/audit/service.ts";
import { databaseFolder, localPath, type Store } from "./data/db/index.ts";
import { KeyRevocation } from "./data/keys/revoke.ts";
import { KeyService } from "./data/keys/service.ts";
import { RateLimiter } from "./data/ratelimit/service.ts";
import { UsageRecorder } from "./data/usage/recorder.ts";
import { RefusalRecorder } from "./data/usage/refusals.ts";
import { RefusalQueries } from "./data/usage/refused-queries.ts";
import { UsageQueries } from "./data/usage/service.ts";
import { Readiness } from "./ops/health/service.ts";
import { Metrics } from "./ops/metrics/service.ts";
import { Lifecycle } from "./server/lifecycle.ts";
import { masterKeyOrigin, pinMasterKey, secretBoxOf } from "./server/masterkey.ts";
import { TlsStatus } from "./server/tls/status.ts";
import { liveState } from "./staff/api/service.ts";
import { DashboardService } from "./staff/dashboard/service.ts";
import { StaffDirectory } from "./staff/directory.ts";
import { LiveHistory } from "./staff/live-history.ts";
import { SessionService } from "./staff/sessions.ts";
import { StaffSignIn } from "./staff/signin.ts";
import { StaffTestMail } from "./staff/test-mail.ts";

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
  /** Places and slots for conversions: admission, queueing, memory budget. */
  gate: ConversionGate;
  convert: ConvertService;
  /** Counts every conversion attempt into hourly buckets; `flush()` writes them. */
  usage: UsageRecorder;
  /** Counts refused public requests (401/403/413/415/429) per hour and key or address; `observer` joins the runtime's response observers. */
  refusals: RefusalRecorder;
  /** Reads the refused-request counts. */
  refusalQueries: RefusalQueries;
  /** The live panel's last 15 minutes in memory (sparklines, the health line); `observer` joins the runtime's response observers. */
  history: LiveHistory;
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
  /** The settings page's "Send a test e-mail". */
  staffTestMail: StaffTestMail;
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

type Clock = () => number;
type Foundation = Pick<Services, "keys" | "limiter" | "audit" | "lifecycle">;

/** Builds the services from their dependencies, area by area: nothing is used before it is built. */
export async function createServices(deps: AppDeps): Promise<Services> {
  const now = deps.now ?? Date.now;
  const foundation = await foundationServices(deps, now);
  const conversion = conversionServices(deps, foundation, now);
  const doors = await clientDoors(deps, foundation, conversion.metrics, conversion.history, now);
  const staff = await staffServices(deps, foundation, now);
  const requests = new RequestCounter();
  const tls = new TlsStatus();
  const usageQueries = new UsageQueries(deps.store, now);
  const refusalQueries = new RefusalQueries(deps.store);
  const dashboard = new DashboardService({
    usage: usageQueries,
    refusals: refusalQueries,
    history: conversion.history,
    readiness: () => conversion.readiness.check(),
    diskFree: () => diskFree(deps.config),
    audit: foundation.audit,
    auditTypes: AUDIT_TYPES,
    staff: staff.staff,
    sessions: staff.sessions,
    live: () => liveState(conversion.gate, requests),
    tls: () => tls.view(),
    config: deps.config,
    now,
  });
  return { ...foundation, ...conversion, ...doors, ...staff, usageQueries, refusalQueries, requests, tls, dashboard };
}

/** Free bytes where the database file lives (the health line's disk headroom); null for a database server. */
async function diskFree(config: Config): Promise<number | null> {
  const folder = databaseFolder(config.databaseUrl);
  if (folder === null) return null;
  const fs = await statfs(folder);
  return Number(fs.bavail) * Number(fs.bsize);
}

/** Keys (after the master key is pinned to this database), rate limits, the audit and the stop's hooks. */
async function foundationServices(deps: AppDeps, now: Clock): Promise<Foundation> {
  const keys = new KeyService(deps.store, await secretBoxOf(deps.masterKey), now);
  await pinMasterKey(deps.store, deps.masterKey, masterKeyOrigin(deps.config), () => keys.opensStoredSecrets());
  return {
    keys,
    limiter: new RateLimiter(deps.store, now),
    audit: new AuditLog(deps.store, now, deps.config.auditRetentionDays),
    lifecycle: new Lifecycle(),
  };
}

/** The gate, the conversion service and what observes it (usage, metrics), and readiness. */
function conversionServices(deps: AppDeps, { lifecycle }: Foundation, now: Clock) {
  const { config, logger } = deps;
  const memoryBudgetBytes = config.memoryBudgetMb * 2 ** 20;
  const gate = new ConversionGate({
    concurrency: config.concurrency,
    memoryBudgetBytes,
    queueSize: config.queueSize,
    maxAdmittedPerOwner: config.keyMaxAdmitted,
    uploadBudgetBytes: config.uploadBudgetMb * 2 ** 20,
    // An eighth: four clients (an attacker's four addresses, or one /48) leave the others half.
    uploadShareBytes: (config.uploadBudgetMb * 2 ** 20) / 8,
    queueTimeoutMs: config.queueTimeoutS * 1000,
    abandonAfterMs: config.convertTimeoutS * 1000 * ABANDON_AFTER_LIMITS,
  });
  const metrics = new Metrics(
    gate,
    { slots: config.concurrency, queueSize: config.queueSize },
    localPath(config.databaseUrl),
  );
  gate.onAbandoned((weight) => {
    metrics.observeAbandoned();
    logger.error(
      `a conversion that timed out had still not stopped ${ABANDON_AFTER_LIMITS} × IMGPRESS_CONVERT_TIMEOUT_S later: its slot is given back; its memory may stay in use until it stops`,
      { weight, abandoned: gate.stats().abandoned },
    );
  });
  const convert = new ConvertService(
    gate,
    {
      maxPixels: config.maxPixels,
      timeoutS: config.convertTimeoutS,
      qualityGuard: config.qualityGuard,
      memoryBudgetBytes,
    },
    now,
  );
  const usage = new UsageRecorder(deps.store, logger, {}, now);
  convert.observe(usage.observer);
  convert.observe((event) => metrics.observeConversion(event));
  const history = new LiveHistory(() => {
    const g = gate.stats();
    return { slotsBusy: g.slotsBusy, waiting: g.waiting, rssBytes: memoryUsage.rss() };
  }, now);
  convert.observe(history.conversions);
  const refusals = new RefusalRecorder(
    deps.store,
    logger,
    (request) => clientAddress(request, config.behindProxy),
    now,
  );
  const readiness = new Readiness(deps.store, databaseFolder(config.databaseUrl), () => lifecycle.draining, logger);
  // In-flight conversions have reported by the time hooks run: write their counts before the store closes.
  lifecycle.onShutdown("usage flush", () => usage.finalFlush());
  // Bounded like the usage flush: a frozen database must not hold the stop.
  lifecycle.onShutdown("refused-request counts", () => deps.store.bounded(refusals.flush()));
  // After the counts: a mail server that stalls holds the stop for at most the mail deadline (30 s).
  lifecycle.onShutdown("mail sent after answers", () => lifecycle.settled());
  return { gate, metrics, convert, usage, readiness, history, refusals };
}

/** The clients' two doors: key issuance (e-mailed code → key pair) and request authentication (bearer or signature). */
async function clientDoors(
  deps: AppDeps,
  { keys, limiter, audit, lifecycle }: Foundation,
  metrics: Metrics,
  history: LiveHistory,
  now: Clock,
) {
  const { config } = deps;
  // Key-code mail is counted in imgpress_mail_total. Staff sign-in mail is not: it goes to staff
  // addresses only, so the counter (readable without a session) would tell who is staff.
  const mailer = observedMailer(deps.mailer, (outcome) => {
    metrics.observeMail(outcome);
    if (outcome === "failed") history.mailFailed();
  });
  const issuance = new KeyIssuance({
    store: deps.store,
    keys,
    mailer,
    limiter,
    logger: deps.logger,
    audit,
    pepper: await deriveKey(deps.masterKey, "otp-pepper"),
    allowedEmails: config.allowedEmails,
    now,
    afterAnswer: (work) => lifecycle.track(work),
  });
  const signatures = {
    schemes: config.authSchemes,
    bodyHash: config.signatureBody,
    toleranceS: config.signatureToleranceS,
  };
  const authenticator = new RequestAuthenticator(keys, deps.store, signatures, now);
  return { issuance, authenticator };
}

/** The staff door (e-mailed code → session) and what staff may do to keys. */
async function staffServices(deps: AppDeps, { keys, limiter, audit, lifecycle }: Foundation, now: Clock) {
  const { config } = deps;
  const staff = new StaffDirectory(deps.store, config.staffEmails, audit, now);
  const sessionLimits = { idleS: config.staffSessionIdleS, maxS: config.staffSessionMaxS };
  const sessions = new SessionService(
    deps.store,
    staff,
    await deriveKey(deps.masterKey, "staff-csrf"),
    sessionLimits,
    now,
  );
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
    afterAnswer: (work) => lifecycle.track(work),
  });
  const staffTestMail = new StaffTestMail({ mailer: deps.mailer, limiter, audit, logger: deps.logger, now });
  return { staff, sessions, staffSignIn, staffTestMail, revocation: new KeyRevocation(keys, audit) };
}
