import { lookup } from "node:dns/promises";
import { isIP } from "node:net";
import { dirname } from "node:path";
import { openIssuanceWarning } from "../api/issuance/service.ts";
import { createRequestHandler } from "../app.ts";
import { releaseWhenIdle } from "../conversion/idle.ts";
import type { Config } from "../core/config.ts";
import { readableByOthers } from "../core/files.ts";
import type { Logger } from "../core/log.ts";
import { clearTextMailWarning, DEVELOPMENT_MAIL_WARNING } from "../core/mail/mailer.ts";
import { version } from "../core/version.ts";
import { localPath } from "../data/db/index.ts";
import { prepareDatabaseFolder } from "../data/db/sqlite.ts";
import type { Services } from "../services.ts";
import { type Booted, boot, startMaintenance } from "./boot.ts";
import { counting, drain, type InFlight } from "./drain.ts";
import { masterKeyPath } from "./masterkey.ts";
import { claimPidFile, pidFilePath } from "./pidfile.ts";
import { holdServingLock } from "./servinglock.ts";
import { isoSeconds, loadTls, type ServedTls, urlHost } from "./tls/index.ts";
import { describeServed, servedWarnings, watchCertificate } from "./tls/watch.ts";

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
  const pid = pidRecord();
  const booted = await boot({
    env: runtime.env,
    flags,
    loadDocsAsset: runtime.loadDocsAsset,
    beforeOpen: pid.claim,
    finishesRestore: true,
  }).catch((err) => {
    pid.release();
    throw err;
  });
  const { config, logger, services } = booted;
  warnAtStart(booted, runtime);
  const inFlight: InFlight = { count: 0 };
  // Whatever stops the start from here (a bad certificate, the port taken) gives the record back.
  const { tls, server } = await listen(booted, runtime, inFlight).catch((err) => {
    pid.release();
    throw err;
  });
  const stopMaintenance = startMaintenance(services, config, logger);
  const stopWatching = await watchServedCertificate(tls, config.host, logger, services);
  releaseMemoryWhenIdle(runtime, services, logger);
  for (const warning of await exposedSecrets(config, tls)) logger.startup("warn", warning);
  // The handlers first: a service manager may send SIGTERM the moment it reads the listening line.
  const stopped = stopOnSignals(runtime, logger, inFlight, async (signal) => {
    stopMaintenance();
    stopWatching();
    return drain(booted, server, inFlight, signal);
  }).finally(pid.release);
  logListening(booted, runtime, tls, server.port);
  return stopped;
}

/**
 * The pid record of a local database, claimed before the database is opened, so a second server
 * refused here has not migrated the first one's database under it (an upgraded binary started
 * beside the old one), and the serving lock beside it (src/server/servinglock.ts): the record can
 * be deleted by hand, the lock cannot outlive this process. `release` gives both back and may be
 * called more than once; it resolves once the lock is given back.
 */
function pidRecord(): { claim: (config: Config) => Promise<void>; release: () => Promise<void> } {
  let release = async () => {};
  const claim = async (config: Config) => {
    const dbPath = localPath(config.databaseUrl);
    if (!dbPath) return;
    await prepareDatabaseFolder(dbPath);
    let releaseRecord: () => void;
    try {
      releaseRecord = claimPidFile(dbPath);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code !== "EROFS" && code !== "EACCES" && code !== "EPERM") throw err;
      throw new Error(
        `cannot write ${pidFilePath(dbPath)} (${code}): the data folder must be writable by this user and not on a read-only mount`,
      );
    }
    const unlock = await holdServingLock(dbPath).catch((err) => {
      releaseRecord();
      throw err;
    });
    let released: Promise<void> | undefined;
    release = () => {
      releaseRecord();
      // Its failure changes nothing: the lock goes with the process.
      released ??= unlock().catch(() => {});
      return released;
    };
  };
  return { claim, release: () => release() };
}

/** The start's warnings about the configuration: mail printed to the log or sent in clear, timeouts the runtime cannot honour. */
function warnAtStart({ config, logger, mailer }: Booted, runtime: Runtime): void {
  if (mailer.isDevelopment) logger.startup("warn", DEVELOPMENT_MAIL_WARNING);
  const clearText = config.smtpUrl ? clearTextMailWarning(config.smtpUrl) : null;
  if (clearText) logger.startup("warn", clearText);
  const openIssuance = openIssuanceWarning(config);
  if (openIssuance) logger.startup("warn", openIssuance);
  // Waiting for room and converting send nothing: the runtime would close the connection unanswered.
  const silentS = config.queueTimeoutS + config.convertTimeoutS;
  if (runtime.maxSilentS !== undefined && silentS > runtime.maxSilentS) {
    logger.startup(
      "warn",
      `IMGPRESS_QUEUE_TIMEOUT_S + IMGPRESS_CONVERT_TIMEOUT_S is ${silentS} s, but ${runtime.name.split(" ")[0]} closes a connection silent for ${runtime.maxSilentS} s: a request that waits and converts longer gets no answer (not 503 or 504); keep the sum within ${runtime.maxSilentS} s`,
    );
  }
}

/** Loads the certificate (unless a proxy terminates TLS) and listens; a failure names the address and the settings to change. */
async function listen(
  { config, logger, services, app }: Booted,
  runtime: Runtime,
  inFlight: InFlight,
): Promise<{ tls: ServedTls | undefined; server: Listening }> {
  // A name that does not resolve: Bun would report it as "Is port … in use?".
  if (!isIP(config.host)) {
    await lookup(config.host).catch(() => {
      throw new Error(
        `cannot listen on ${config.host}:${config.port} (IMGPRESS_HOST, IMGPRESS_PORT): no address has that name (IMGPRESS_HOST takes an IP address of this machine, 0.0.0.0 or ::)`,
      );
    });
  }
  const tls = config.behindProxy ? undefined : await loadTls(config);
  const handler = createRequestHandler(app, services, config, logger);
  const server = await runtime
    .listen({
      host: config.host,
      port: config.port,
      tls,
      idleTimeoutS: Math.min(
        runtime.maxSilentS ?? 255,
        Math.ceil(config.queueTimeoutS + config.convertTimeoutS + config.uploadTimeoutS),
      ),
      maxBodyBytes: 1024 * 1024 * 1024,
      fetch: counting(handler, inFlight),
    })
    .catch((err: Error) => {
      // Bun says only "Failed to start server" or ENOENT (an unresolvable host): name the address.
      throw new Error(
        `cannot listen on ${urlHost(config.host)}:${config.port} (IMGPRESS_HOST, IMGPRESS_PORT): ${err.message}`,
      );
    });
  return { tls, server };
}

/** Hands freed memory back to the system once conversions go idle, where the runtime can. */
function releaseMemoryWhenIdle(runtime: Runtime, services: Services, logger: Logger): void {
  const { releaseFreedMemory } = runtime;
  if (!releaseFreedMemory) return;
  const release = () => {
    const startedAt = performance.now();
    releaseFreedMemory();
    logger.debug("conversions idle: freed memory handed back", {
      ms: Math.round((performance.now() - startedAt) * 10) / 10,
    });
  };
  services.convert.observe(releaseWhenIdle(services.gate, release));
}

/**
 * Runs `stop` at the first shutdown signal and resolves to its exit status; a second signal
 * resolves at once (the operator wants out now, whatever is still running).
 */
function stopOnSignals(
  runtime: Runtime,
  logger: Logger,
  inFlight: InFlight,
  stop: (signal: ShutdownSignal) => Promise<number>,
): Promise<number> {
  return new Promise<number>((resolve) => {
    let stopping = false;
    runtime.onShutdownSignal((signal) => {
      if (stopping) {
        logger.warn(`second ${signal}: exiting at once`, { requestsCut: inFlight.count });
        resolve(128 + signalNumbers[signal]);
        return;
      }
      stopping = true;
      stop(signal).then(resolve);
    });
  });
}

/** The one line that says the service is up: where, how, and the fingerprint of a generated certificate. */
function logListening(
  { config, logger, services }: Booted,
  runtime: Runtime,
  tls: ServedTls | undefined,
  port: number,
): void {
  const scheme = config.behindProxy ? "http (behind a TLS proxy)" : "https";
  logger.startup("info", "imgpress listening", {
    version,
    runtime: runtime.name,
    url: `${config.behindProxy ? "http" : "https"}://${urlHost(config.host)}:${port}`,
    scheme,
    dataDir: config.dataDir,
    ...(tls?.generated
      ? { selfSignedCert: tls.certPath, certSha256: services.tls.view()?.sha256, certNames: tls.facts?.names }
      : {}),
    ...(tls?.facts ? { certValidUntil: isoSeconds(tls.facts.notAfter) } : {}),
  });
}

/** The files another user of this machine could read that give secrets away, each with the chmod that fixes it. */
async function exposedSecrets(config: Config, tls: ServedTls | undefined): Promise<string[]> {
  const dbPath = localPath(config.databaseUrl);
  const tlsKey = tls?.keyPath;
  const found = await Promise.all([
    dbPath
      ? readableByOthers(
          dbPath,
          "the database",
          `it holds e-mail addresses and key hashes; make the folder owner-only with chmod 700 ${dirname(dbPath)}`,
        )
      : null,
    config.masterKey
      ? null
      : readableByOthers(
          masterKeyPath(config),
          "the master key",
          `it unseals every secret stored in the database; make it owner-only with chmod 600 ${masterKeyPath(config)}`,
        ),
    tlsKey
      ? readableByOthers(
          tlsKey,
          "the TLS private key",
          `with it anyone can pose as this server; make it owner-only with chmod 600 ${tlsKey}`,
        )
      : null,
  ]);
  return found.filter((warning) => warning !== null);
}

/**
 * Says at start what is wrong with the served certificate (and that a new self-signed one was made),
 * then keeps watching it; the metric lets Prometheus alert before it ends, and the dashboard shows
 * it. Returns the stop.
 */
async function watchServedCertificate(
  tls: ServedTls | undefined,
  host: string,
  logger: Logger,
  services: Pick<Services, "metrics" | "tls">,
): Promise<() => void> {
  if (!tls) {
    await services.tls.serving(undefined, []);
    return () => {};
  }
  if (tls.facts) services.metrics.observeCertificate(tls.facts.notAfter);
  else
    logger.startup(
      "warn",
      `cannot read the validity of ${describeServed(tls)}: no warning will come before it expires, and imgpress_tls_certificate_expiry_timestamp_seconds is absent`,
    );
  if (tls.replaced) {
    const { reason, previousSha256, keptAt } = tls.replaced;
    logger.startup(
      "warn",
      `made a new self-signed certificate because ${reason}: give clients the new ${tls.certPath} (its fingerprint is on the listening line)`,
      {
        certNames: tls.facts?.names,
        ...(previousSha256 ? { previousCertSha256: previousSha256 } : {}),
        previousPairKeptAt: keptAt,
      },
    );
  }
  // The operator's file cannot have changed since it was read a moment ago: not read again now.
  const said = servedWarnings(tls, new Date(), host);
  for (const message of said) logger.startup("warn", message);
  await services.tls.serving(tls, said);
  return watchCertificate(tls, (message) => logger.warn(message), {
    host,
    said,
    checked: (warnings) => services.tls.warn(warnings),
  });
}
