import { Buffer } from "node:buffer";
import { boot, startMaintenance } from "./boot.ts";
import { sha256Hex } from "./crypto.ts";
import { createFetchHandler } from "./http/serve.ts";
import { loadTls } from "./tls/index.ts";
import { version } from "./version.ts";

/** A listening server as the runtime reports it. */
export interface Listening {
  port: number;
  /** Stops accepting, lets in-flight requests finish, then resolves. */
  stop(): Promise<void>;
}

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
  onShutdownSignal(handler: () => void): void;
}

/** Boots the service, listens, and runs until a shutdown signal has let in-flight requests finish; resolves to the exit status. */
export async function serve(flags: Record<string, string>, runtime: Runtime): Promise<number> {
  const { config, logger, store, services, app } = await boot({ env: runtime.env, flags, loadDocsAsset: runtime.loadDocsAsset });
  const tls = config.behindProxy ? undefined : await loadTls(config);
  const server = await runtime.listen({
    host: config.host,
    port: config.port,
    tls,
    idleTimeoutS: Math.min(255, Math.ceil(config.queueTimeoutS + config.convertTimeoutS + config.uploadTimeoutS)),
    maxBodyBytes: 1024 * 1024 * 1024,
    fetch: createFetchHandler((request) => app.handle(request), logger, { hsts: !config.behindProxy, counter: services.requests }),
  });
  const stopMaintenance = startMaintenance(services, config, logger);
  const scheme = config.behindProxy ? "http (behind a TLS proxy)" : "https";
  logger.info("imgpress listening", {
    version,
    runtime: runtime.name,
    url: `${config.behindProxy ? "http" : "https"}://${config.host}:${server.port}`,
    scheme,
    dataDir: config.dataDir,
    ...(tls?.generated ? { selfSignedCert: tls.certPath, certSha256: await fingerprint(tls.cert) } : {}),
  });
  return new Promise((resolve) => {
    let stopping = false;
    runtime.onShutdownSignal(async () => {
      if (stopping) return;
      stopping = true;
      logger.info("shutting down: finishing in-flight requests");
      stopMaintenance();
      await server.stop();
      // In-flight conversions have reported by now: write their counts before the store closes.
      await services.usage.flush().catch(async () => {
        // A connection that once failed busy cannot commit again (libsql-client-ts#352); with
        // nothing else in flight, fresh connections are safe: one more try.
        await store.client.reconnect();
        await services.usage.flush().catch((err: Error) => logger.error("usage counts lost at shutdown", { error: err.message, buckets: services.usage.pendingBuckets }));
      });
      store.close();
      logger.info("stopped");
      resolve(0);
    });
  });
}

async function fingerprint(pem: string): Promise<string> {
  const der = Buffer.from(pem.replace(/-----[^-]+-----|\s/g, ""), "base64");
  return (await sha256Hex(der)).match(/../g)!.join(":").toUpperCase();
}
