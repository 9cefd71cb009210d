import { lookup } from "node:dns/promises";
import { isIP } from "node:net";
import { dirname } from "node:path";
import { boot, startMaintenance, type Booted } from "./boot.ts";
import { releaseWhenIdle } from "../conversion/idle.ts";
import type { Config } from "../core/config.ts";
import { driverMessage } from "../data/db/faults.ts";
import { localPath } from "../data/db/index.ts";
import { prepareDatabaseFolder } from "../data/db/sqlite.ts";
import { readableByOthers } from "../core/files.ts";
import { masterKeyPath } from "./masterkey.ts";
import { clearTextMailWarning, DEVELOPMENT_MAIL_WARNING } from "../core/mail/mailer.ts";
import { createFetchHandler } from "../core/http/serve.ts";
import { claimPidFile, pidFilePath } from "./pidfile.ts";
import { isoSeconds, loadTls, urlHost, type ServedTls } from "./tls/index.ts";
import { describeServed, servedWarnings, watchCertificate } from "./tls/watch.ts";
import { version } from "../core/version.ts";
import type { Logger } from "../core/log.ts";
import type { Services } from "../app.ts";

/** A listening server as the runtime reports it. */
export interface Listening {
  port: number;
  /** Stops accepting, lets in-flight requests finish, then resolves. */
  stop(): Promise<void>;
  /**
   * Closes the connections `stop` still waits on once every request has been answered (Bun
   * counts one whose request was refused before its body was read, until the client sends the
   * rest or leaves), or lets `stop` resolve without them (Deno: the process's exit closes them).
   */
  closeAnswered?(): void;
}

/**
 * The signals that stop the service in order. SIGHUP too: closing the terminal or SSH session a
 * server was started from sends it, and its default (die at once) would cut every request.
 */
export type ShutdownSignal = "SIGTERM" | "SIGINT" | "SIGHUP";

const signalNumbers: Record<ShutdownSignal, number> = { SIGHUP: 1, SIGINT: 2, SIGTERM: 15 };

/** How often the log says what a drain is still waiting for. */
const DRAIN_STATUS_EVERY_MS = 2000;
/** How often a drain looks whether everything has been answered. */
const IDLE_LOOK_MS = 250;
/** How long everything must have been answered before a drain closes the connections left. */
const ANSWERED_GRACE_MS = 5000;

/** What differs between Bun and Deno; everything else is shared. */
export interface Runtime {
  name: string;
  env: Record<string, string | undefined>;
  loadDocsAsset(): Promise<Blob>;
  listen(options: {
    host: string;
    port: number;
    tls?: { cert: string; key: string };
    /** Seconds a connection may stay silent (must outlast a queued conversion). */
    idleTimeoutS: number;
    maxBodyBytes: number;
    fetch: (request: Request, peer: string | undefined) => Promise<Response>;
  }): Promise<Listening>;
  /** Calls `handler` on every SIGTERM, SIGINT and SIGHUP (the process must not exit by itself). */
  onShutdownSignal(handler: (signal: ShutdownSignal) => void): void;
  /** The longest a connection may stay silent, whatever `idleTimeoutS` asks (Bun: 255 s); absent where there is no such cap. */
  maxSilentS?: number;
  /** Frees the garbage and hands freed heap memory back to the system (Bun: a full GC, then glibc's malloc_trim); absent where the runtime has no such hook. */
  releaseFreedMemory?: () => void;
}

/** Boots the service, listens, and runs until a shutdown signal has let in-flight requests finish; resolves to the exit status. */
export async function serve(flags: Record<string, string>, runtime: Runtime): Promise<number> {
  let releasePid = () => {};
  // The record is claimed before the database is opened, so a second server refused here has not
  // migrated the first one's database under it (an upgraded binary started beside the old one).
  const claim = async (config: Config) => {
    const dbPath = localPath(config.databaseUrl);
    if (!dbPath) return;
    await prepareDatabaseFolder(dbPath);
    try {
      releasePid = claimPidFile(dbPath);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code !== "EROFS" && code !== "EACCES" && code !== "EPERM") throw err;
      throw new Error(`cannot write ${pidFilePath(dbPath)} (${code}): the data folder must be writable by this user and not on a read-only mount`);
    }
  };
  const { config, logger, store, mailer, services, app } = await boot({ env: runtime.env, flags, loadDocsAsset: runtime.loadDocsAsset, beforeOpen: claim, finishesRestore: true }).catch((err) => {
    releasePid();
    throw err;
  });
  if (mailer.isDevelopment) logger.startup("warn", DEVELOPMENT_MAIL_WARNING);
  const clearText = config.smtpUrl ? clearTextMailWarning(config.smtpUrl) : null;
  if (clearText) logger.startup("warn", clearText);
  // Waiting for room and converting send nothing: the runtime would close the connection unanswered.
  const silentS = config.queueTimeoutS + config.convertTimeoutS;
  if (runtime.maxSilentS !== undefined && silentS > runtime.maxSilentS) {
    logger.startup(
      "warn",
      `IMGPRESS_QUEUE_TIMEOUT_S + IMGPRESS_CONVERT_TIMEOUT_S is ${silentS} s, but ${runtime.name.split(" ")[0]} closes a connection silent for ${runtime.maxSilentS} s: a request that waits and converts longer gets no answer (not 503 or 504); keep the sum within ${runtime.maxSilentS} s`,
    );
  }
  // Whatever stops the start from here (a bad certificate, the port taken) gives the record back.
  const started = async () => {
    // A name that does not resolve: Bun would report it as "Is port … in use?".
    if (!isIP(config.host)) {
      await lookup(config.host).catch(() => {
        throw new Error(`cannot listen on ${config.host}:${config.port} (IMGPRESS_HOST, IMGPRESS_PORT): no address has that name (IMGPRESS_HOST takes an IP address of this machine, 0.0.0.0 or ::)`);
      });
    }
    const tls = config.behindProxy ? undefined : await loadTls(config);
    const server = await runtime
      .listen({
        host: config.host,
        port: config.port,
        tls,
        idleTimeoutS: Math.min(runtime.maxSilentS ?? 255, Math.ceil(config.queueTimeoutS + config.convertTimeoutS + config.uploadTimeoutS)),
        maxBodyBytes: 1024 * 1024 * 1024,
        fetch: counting(createFetchHandler((request) => app.handle(request), logger, { hsts: !config.behindProxy, counter: services.requests, observe: services.metrics.observeResponse, draining: () => services.lifecycle.draining }), inFlight),
      })
      .catch((err: Error) => {
        // Bun says only "Failed to start server" or ENOENT (an unresolvable host): name the address.
        throw new Error(`cannot listen on ${urlHost(config.host)}:${config.port} (IMGPRESS_HOST, IMGPRESS_PORT): ${err.message}`);
      });
    return { tls, server };
  };
  const inFlight: InFlight = { count: 0 };
  const { tls, server } = await started().catch((err) => {
    releasePid();
    throw err;
  });
  const stopMaintenance = startMaintenance(services, config, logger);
  const stopWatching = await watchServedCertificate(tls, config.host, logger, services);
  const { releaseFreedMemory } = runtime;
  if (releaseFreedMemory) {
    const release = () => {
      const startedAt = performance.now();
      releaseFreedMemory();
      logger.debug("conversions idle: freed memory handed back", { ms: Math.round((performance.now() - startedAt) * 10) / 10 });
    };
    services.convert.observe(releaseWhenIdle(services.convert.gate, release));
  }
  for (const warning of await exposedSecrets(config, tls)) logger.startup("warn", warning);
  // The handlers first: a service manager may send SIGTERM the moment it reads the listening line.
  const stopped = new Promise<number>((resolve) => {
    let stopping = false;
    runtime.onShutdownSignal((signal) => {
      if (stopping) {
        // The operator asked twice: they want out now, whatever is still running.
        logger.warn(`second ${signal}: exiting at once`, { requestsCut: inFlight.count });
        releasePid();
        resolve(128 + signalNumbers[signal]);
        return;
      }
      stopping = true;
      stopMaintenance();
      stopWatching();
      drain({ config, logger, store, services }, server, inFlight, signal).then((code) => {
        releasePid();
        resolve(code);
      });
    });
  });
  const scheme = config.behindProxy ? "http (behind a TLS proxy)" : "https";
  logger.startup("info", "imgpress listening", {
    version,
    runtime: runtime.name,
    url: `${config.behindProxy ? "http" : "https"}://${urlHost(config.host)}:${server.port}`,
    scheme,
    dataDir: config.dataDir,
    ...(tls?.generated ? { selfSignedCert: tls.certPath, certSha256: services.tls.view()?.sha256, certNames: tls.facts?.names } : {}),
    ...(tls?.facts ? { certValidUntil: isoSeconds(tls.facts.notAfter) } : {}),
  });
  return stopped;
}

/** The files another user of this machine could read that give secrets away, each with the chmod that fixes it. */
async function exposedSecrets(config: Config, tls: ServedTls | undefined): Promise<string[]> {
  const dbPath = localPath(config.databaseUrl);
  const tlsKey = tls?.keyPath;
  const found = await Promise.all([
    dbPath ? readableByOthers(dbPath, "the database", `it holds e-mail addresses and key hashes; make the folder owner-only with chmod 700 ${dirname(dbPath)}`) : null,
    config.masterKey ? null : readableByOthers(masterKeyPath(config), "the master key", `it unseals every secret stored in the database; make it owner-only with chmod 600 ${masterKeyPath(config)}`),
    tlsKey ? readableByOthers(tlsKey, "the TLS private key", `with it anyone can pose as this server; make it owner-only with chmod 600 ${tlsKey}`) : null,
  ]);
  return found.filter((warning) => warning !== null);
}

/**
 * Says at start what is wrong with the served certificate (and that a new self-signed one was made),
 * then keeps watching it; the metric lets Prometheus alert before it ends, and the dashboard shows
 * it. Returns the stop.
 */
async function watchServedCertificate(tls: ServedTls | undefined, host: string, logger: Logger, services: Pick<Services, "metrics" | "tls">): Promise<() => void> {
  if (!tls) {
    await services.tls.serving(undefined, []);
    return () => {};
  }
  if (tls.facts) services.metrics.observeCertificate(tls.facts.notAfter);
  else logger.startup("warn", `cannot read the validity of ${describeServed(tls)}: no warning will come before it expires, and imgpress_tls_certificate_expiry_timestamp_seconds is absent`);
  if (tls.replaced) {
    const { reason, previousSha256, keptAt } = tls.replaced;
    logger.startup("warn", `made a new self-signed certificate because ${reason}: give clients the new ${tls.certPath} (its fingerprint is on the listening line)`, {
      certNames: tls.facts?.names,
      ...(previousSha256 ? { previousCertSha256: previousSha256 } : {}),
      previousPairKeptAt: keptAt,
    });
  }
  // The operator's file cannot have changed since it was read a moment ago: not read again now.
  const said = servedWarnings(tls, new Date(), host);
  for (const message of said) logger.startup("warn", message);
  await services.tls.serving(tls, said);
  return watchCertificate(tls, (message) => logger.warn(message), { host, said, checked: (warnings) => services.tls.warn(warnings) });
}

/** Counts requests between arrival and answer, so a drain can say what it waits for. */
interface InFlight {
  count: number;
}

function counting(fetch: (request: Request, peer: string | undefined) => Promise<Response>, inFlight: InFlight) {
  return async (request: Request, peer: string | undefined) => {
    inFlight.count++;
    try {
      return await fetch(request, peer);
    } finally {
      inFlight.count--;
    }
  };
}

/**
 * The orderly stop: readiness fails at once; after IMGPRESS_DRAIN_DELAY_S (0 by default: a load
 * balancer probing /health/ready sees 503 meanwhile, and requests still arriving are served) the
 * listener closes (no new connections); accepted requests (uploading, queued or converting) finish
 * within IMGPRESS_SHUTDOWN_TIMEOUT_S, the shutdown hooks run (usage flush), the WAL is checkpointed
 * and the database closed. Resolves to the exit status: 0, or 1 when the timeout cut requests, a
 * hook failed or the database could not be closed.
 */
async function drain(booted: Pick<Booted, "config" | "logger" | "store" | "services">, server: Listening, inFlight: InFlight, signal: ShutdownSignal): Promise<number> {
  const { config, logger, store, services } = booted;
  services.lifecycle.beginDrain();
  const status = () => {
    const gate = services.convert.gate.stats();
    const receiving = Math.max(0, gate.admitted - gate.running - gate.waiting);
    return { conversions: gate.running, queued: gate.waiting, uploading: receiving, requests: inFlight.count };
  };
  const describe = (s: ReturnType<typeof status>) =>
    `draining: ${s.conversions} conversions in flight, ${s.queued} queued, ${s.uploading} uploading, ${s.requests} requests open`;
  if (config.drainDelayS > 0) {
    logger.info(`${signal} received: readiness answers 503; the listener closes in ${config.drainDelayS} s (IMGPRESS_DRAIN_DELAY_S)`, { delayS: config.drainDelayS, ...status() });
    await new Promise((resolve) => setTimeout(resolve, config.drainDelayS * 1000));
    logger.info(`closing the listener: ${describe(status())}`, { timeoutS: config.shutdownTimeoutS, ...status() });
  } else logger.info(`${signal} received: ${describe(status())}`, { timeoutS: config.shutdownTimeoutS, ...status() });
  const ticker = setInterval(() => logger.info(describe(status()), status()), DRAIN_STATUS_EVERY_MS);
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timedOut = new Promise<true>((resolve) => (timer = setTimeout(() => resolve(true), config.shutdownTimeoutS * 1000)));
  const stopped = server.stop().then(
    () => false,
    (err: Error) => (logger.error("closing the listener failed", { error: err }), false),
  );
  // Nothing open for ANSWERED_GRACE_MS: what the stop still waits on are connections holding only
  // the unread body of an answered request. Not sooner: an answer under 1 MiB is handed to the
  // connection whole and holds nothing here while a slow client still reads it.
  let idleSince: number | undefined;
  const idleWatch = setInterval(() => {
    // A result over 1 MiB still being delivered holds its gate place, so it counts as uploading here.
    if (!Object.values(status()).every((n) => n === 0)) idleSince = undefined;
    else if ((idleSince ??= performance.now()) <= performance.now() - ANSWERED_GRACE_MS) server.closeAnswered?.();
  }, IDLE_LOOK_MS);
  const cut = await Promise.race([stopped, timedOut]);
  clearInterval(idleWatch);
  clearInterval(ticker);
  clearTimeout(timer);
  if (cut) logger.warn(`shutdown timeout (${config.shutdownTimeoutS} s) reached: cutting what is left`, status());
  else logger.info("all requests answered");
  const failedHooks = await services.lifecycle.runHooks(logger);
  // The driver's words: an operator's matter (a read-only file, a full disk), not a bug with a stack.
  // Nothing is lost then (what the checkpoint could not copy stays in the write-ahead log beside the
  // file, which the next start reads), but the file alone is not complete: a failed stop.
  const walHint = localPath(config.databaseUrl) ? ": keep the -wal file beside the database (the next start reads it)" : "";
  const unclosed = await store.shutdown().then(
    () => false,
    (err: Error) => (logger.error(`closing the database failed${walHint}`, { error: driverMessage(err) }), true),
  );
  const exitCode = cut || failedHooks || unclosed ? 1 : 0;
  logger.info("stopped", { exitCode });
  return exitCode;
}
