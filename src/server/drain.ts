import { driverMessage } from "../data/db/faults.ts";
import { localPath } from "../data/db/index.ts";
import type { Booted } from "./boot.ts";
import type { Listening, ShutdownSignal } from "./server.ts";

/** How often the log says what a drain is still waiting for. */
const DRAIN_STATUS_EVERY_MS = 2000;
/** How often a drain looks whether everything has been answered. */
const IDLE_LOOK_MS = 250;
/** How long everything must have been answered before a drain closes the connections left. */
const ANSWERED_GRACE_MS = 5000;

/** Counts requests between arrival and answer, so a drain can say what it waits for. */
export interface InFlight {
  count: number;
}

/** Wraps a fetch handler so `inFlight` counts its requests. */
export function counting(fetch: (request: Request, peer: string | undefined) => Promise<Response>, inFlight: InFlight) {
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
export async function drain(
  booted: Pick<Booted, "config" | "logger" | "store" | "services">,
  server: Listening,
  inFlight: InFlight,
  signal: ShutdownSignal,
): Promise<number> {
  const { config, logger, store, services } = booted;
  services.lifecycle.beginDrain();
  const status = () => {
    const gate = services.gate.stats();
    const receiving = Math.max(0, gate.admitted - gate.running - gate.waiting);
    return { conversions: gate.running, queued: gate.waiting, uploading: receiving, requests: inFlight.count };
  };
  const describe = (s: ReturnType<typeof status>) =>
    `draining: ${s.conversions} conversions in flight, ${s.queued} queued, ${s.uploading} uploading, ${s.requests} requests open`;
  if (config.drainDelayS > 0) {
    logger.info(
      `${signal} received: readiness answers 503; the listener closes in ${config.drainDelayS} s (IMGPRESS_DRAIN_DELAY_S)`,
      { delayS: config.drainDelayS, ...status() },
    );
    await new Promise((resolve) => setTimeout(resolve, config.drainDelayS * 1000));
    logger.info(`closing the listener: ${describe(status())}`, { timeoutS: config.shutdownTimeoutS, ...status() });
  } else logger.info(`${signal} received: ${describe(status())}`, { timeoutS: config.shutdownTimeoutS, ...status() });
  const ticker = setInterval(() => logger.info(describe(status()), status()), DRAIN_STATUS_EVERY_MS);
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timedOut = new Promise<"timed out">(
    (resolve) => (timer = setTimeout(() => resolve("timed out"), config.shutdownTimeoutS * 1000)),
  );
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
  const cut = (await Promise.race([stopped, timedOut])) === "timed out";
  clearInterval(idleWatch);
  clearInterval(ticker);
  clearTimeout(timer);
  if (cut) logger.warn(`shutdown timeout (${config.shutdownTimeoutS} s) reached: cutting what is left`, status());
  else logger.info("all requests answered");
  const failedHooks = await services.lifecycle.runHooks(logger);
  // The driver's words: an operator's matter (a read-only file, a full disk), not a bug with a stack.
  // Nothing is lost then (what the checkpoint could not copy stays in the write-ahead log beside the
  // file, which the next start reads), but the file alone is not complete: a failed stop.
  const walHint = localPath(config.databaseUrl)
    ? ": keep the -wal file beside the database (the next start reads it)"
    : "";
  const unclosed = await store.shutdown().then(
    () => false,
    (err: Error) => (logger.error(`closing the database failed${walHint}`, { error: driverMessage(err) }), true),
  );
  const exitCode = cut || failedHooks || unclosed ? 1 : 0;
  logger.info("stopped", { exitCode });
  return exitCode;
}
