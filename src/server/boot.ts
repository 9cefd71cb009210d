import { existsSync } from "node:fs";
import { type App, createApp } from "../app.ts";
import { type Config, ineffectiveSettings, loadConfig, unknownSettings } from "../core/config.ts";
import { createLogger, type Logger } from "../core/log.ts";
import { logMailer, type Mailer, smtpMailer } from "../core/mail/mailer.ts";
import { scrub } from "../core/redact.ts";
import { driverMessage } from "../data/db/faults.ts";
import { localPath, openStore, type Store } from "../data/db/index.ts";
import { inspectDatabaseFile } from "../data/db/inspect.ts";
import { pendingMigrations } from "../data/db/migrate.ts";
import { sqliteMigrations } from "../data/db/migrations.gen.ts";
import { finishInterruptedRestore, interruptedRestore, restoreInterrupted } from "../data/db/restore-plan.ts";
import { LONGEST_OTP_WINDOW_MS } from "../data/otp/limits.ts";
import { WRONG_CODE_BUCKETS, WRONG_CODE_WINDOW_MS } from "../data/otp/service.ts";
import { createServices, type Services } from "../services.ts";
import { loadMasterKey, masterKeyPath, requireDatabaseKey, requireKeyOfPinnedDatabase } from "./masterkey.ts";
import { serverInUse } from "./pidfile.ts";

// The migration that creates the tables: applied only to a database that had none.
const FIRST_MIGRATION = sqliteMigrations[0]!.tag;

/** A booted service, before any listening socket: shared by every runtime entry and the CLI. */
export interface Booted {
  config: Config;
  logger: Logger;
  store: Store;
  /** The mail transport chosen from the config (the log in development). */
  mailer: Mailer;
  services: Services;
  app: App;
}

/** How a command opens the database; the server and each CLI command differ only here. */
export interface BootOptions {
  env: Record<string, string | undefined>;
  flags?: Record<string, string>;
  loadDocsAsset: () => Promise<Blob>;
  /** Where log lines go (stdout by default; the CLI sends them to stderr). */
  write?: (line: string) => void;
  /** Runs once the config is known, before the database is opened (and migrated): a refusal here has written nothing. */
  beforeOpen?: (config: Config) => Promise<void>;
  /** A command that may run beside a live server on the same file: it refuses to migrate the file under it. */
  besideServer?: boolean;
  /** A command that reads or changes what a database holds: with no database there it refuses, and creates nothing. */
  existingOnly?: boolean;
  /** Finishes a restore a crash interrupted (the server, which holds the folder's pid record); anything else refuses to open such a folder. */
  finishesRestore?: boolean;
}

/** Loads config, opens and migrates the database, and builds the services and the app. */
export async function boot(options: BootOptions): Promise<Booted> {
  const config = loadConfig(options.env, options.flags);
  const logger = createLogger(config.logLevel, options.write);
  warnAboutSettings(options.env, config, logger);
  await options.beforeOpen?.(config);
  // A local file is looked at before it is opened: a refusal then leaves it as it was, unmigrated.
  const path = localPath(config.databaseUrl);
  const facts = path ? await lookBeforeOpening(path, config, options, logger) : null;
  const pending = facts ? pendingMigrations(facts.newestMigration, sqliteMigrations).map((m) => m.tag) : [];
  if (path && options.besideServer) refuseMigratingUnderServer(path, pending);
  if (path && facts?.backup) refuseUnrestoredBackup(path, config, facts.backup);
  await requireDatabaseKey(config, facts);
  const keyFileBefore = !config.masterKey && existsSync(masterKeyPath(config));
  const store = await openConfiguredStore(config, pending, logger);
  if (path && !facts && options.besideServer)
    logger.startup(
      "warn",
      `no database was at ${path}: a new one was created there (if your server uses another folder, check IMGPRESS_DATA_DIR)`,
    );
  reportMigrations(store, config, keyFileBefore, logger);
  const mailer = config.smtpUrl ? smtpMailer(config.smtpUrl, config.mailFrom) : logMailer(options.write);
  await requireKeyOfPinnedDatabase(store, config);
  const deps = {
    config,
    store,
    mailer,
    logger,
    masterKey: await loadMasterKey(config),
    loadDocsAsset: options.loadDocsAsset,
  };
  const services = await createServices(deps);
  return { config, logger, store, mailer, services, app: createApp(deps, services) };
}

/** Settings that would otherwise be ignored without a word: a misspelt variable, or one that has no effect with the others. */
function warnAboutSettings(env: Record<string, string | undefined>, config: Config, logger: Logger): void {
  const unknown = unknownSettings(env);
  if (unknown.length > 0)
    logger.startup(
      "warn",
      `ignored: ${unknown.join(", ")} ${unknown.length === 1 ? "is not an imgpress setting" : "are not imgpress settings"} (see imgpress --help)`,
      { variables: unknown },
    );
  for (const warning of ineffectiveSettings(config)) logger.startup("warn", warning);
}

/**
 * The local file's facts, read before it is opened. An interrupted restore is finished (by the
 * server) or refused (by anything else); a command that needs an existing database refuses a
 * missing one: run in the wrong folder, or with IMGPRESS_DATA_DIR mistyped, it would make a new,
 * empty installation and report on that.
 */
async function lookBeforeOpening(path: string, config: Config, options: BootOptions, logger: Logger) {
  if (options.finishesRestore) {
    const finished = await finishInterruptedRestore(path);
    if (finished) {
      const kept = [
        finished.aside && `the database before it kept as ${finished.aside}`,
        finished.asideKey && `the master key before it as ${finished.asideKey}`,
      ]
        .filter(Boolean)
        .join(", ");
      logger.startup(
        "warn",
        `an imgpress restore into ${path} had been interrupted (killed, or the power went): it was finished now${kept ? `; ${kept}` : ""}`,
      );
    }
  } else if (await restoreInterrupted(path)) {
    throw new Error(interruptedRestore(path));
  }
  const facts = await inspectDatabaseFile(path).catch((err) => cannotOpen(config, err, []));
  if (!facts && options.existingOnly) {
    throw new Error(
      `no database at ${path} (no file, or an empty one): check IMGPRESS_DATA_DIR (or IMGPRESS_DATABASE_URL) and the folder you run this in (the default data folder is ./imgpress-data, relative to it); nothing was created`,
    );
  }
  return facts;
}

/** A command beside a live server must not migrate the file under it. */
function refuseMigratingUnderServer(path: string, pending: readonly string[]): void {
  if (pending.length === 0) return;
  const server = serverInUse(path);
  // Exit 1 like restore's refusal, not the 2 of a command line imgpress cannot read.
  if (server)
    throw new Error(
      `this imgpress would migrate the database (${pending.join(", ")}) under a running server: ${server}, then start this version, which migrates at start`,
    );
}

/** A backup file put in place by hand: its master key may be in it in clear, which restore puts right. */
function refuseUnrestoredBackup(path: string, config: Config, backup: { withKey: boolean }): never {
  const why = backup.withKey
    ? "it still holds the master key in clear"
    : "a --without-key backup, so the master key it was made with must be in place too";
  const does = backup.withKey ? `moves the key into ${masterKeyPath(config)}` : "takes the backup's table out";
  throw new Error(
    `${path} is a file written by imgpress backup, put in place without imgpress restore (${why}): stop imgpress, then run imgpress restore ${path}, which checks it, ${does} and keeps a copy of the file aside`,
  );
}

/** After an upgrade the operator sees what changed in the database, once, at the start that did it; and a new empty database beside an old key is named. */
function reportMigrations(store: Store, config: Config, keyFileBefore: boolean, logger: Logger): void {
  if (store.migrationsApplied.length > 0)
    logger.startup("info", "database migrated", { migrations: store.migrationsApplied });
  // A new, empty database beside a master key of earlier runs: the old database file is gone or was replaced (an empty copy).
  if (keyFileBefore && store.migrationsApplied[0] === FIRST_MIGRATION) {
    logger.startup(
      "warn",
      `a new, empty database was created beside the existing ${masterKeyPath(config)}: if this folder held keys before, its database file is missing or was replaced by an empty one (restore it from a backup)`,
    );
  }
}

/**
 * Opens and migrates the configured database. A failure (server down, wrong password, unknown
 * database) becomes one line naming the database, its password masked: the driver's own message
 * does not say which database it could not reach.
 */
async function openConfiguredStore(config: Config, pending: readonly string[], logger: Logger): Promise<Store> {
  // One line when the file goes (every request is then refused 503 without a line of its own).
  const onFileLost = (why: string | null) =>
    why === null
      ? logger.warn("database file is the one this server opened again: writes resume")
      : logger.error("database file lost: every statement is refused until it is back or the server restarts", {
          fault: why,
        });
  try {
    return await openStore(config.databaseUrl, {
      authToken: config.databaseAuthToken,
      poolSize: config.databasePoolSize,
      timeoutS: config.databaseTimeoutS,
      onFileLost,
    });
  } catch (err) {
    return cannotOpen(config, err, pending);
  }
}

// The one line for a database that would not open, with the likely cause where the driver gives none.
function cannotOpen(config: Config, err: unknown, pending: readonly string[]): never {
  const message = driverMessage(err);
  // SQLite's code 14 (CANTOPEN) says nothing of why: on a local file it is the folder's permissions or a read-only mount.
  const local = localPath(config.databaseUrl) !== null;
  const hint =
    local && pending.length > 0 && /readonly|read-only/i.test(message)
      ? ` (this version must first migrate it (${pending.join(", ")}), which needs it writable: use a writable copy, or the version that wrote it)`
      : local && /CANTOPEN|unable to open database|: 14\b/i.test(message)
        ? " (are the data folder and its files readable and writable by this user, and not on a read-only mount? A command run as root may have left them owned by root)"
        : "";
  throw new Error(scrub(`cannot open the database ${config.databaseUrl}: ${message}${hint}`, [config.databaseUrl]), {
    cause: err,
  });
}

/**
 * Deletes expired codes and staff sessions, old rate events, stale replay records and usage buckets past their
 * retention every minute, and flushes the usage counters every `usageFlushS`; returns a stopper.
 */
export function startMaintenance(services: Services, config: Config, logger: Logger): () => void {
  const timer = setInterval(() => {
    Promise.all([
      services.issuance.prune(),
      services.staffSignIn.prune(),
      services.sessions.prune(),
      services.limiter.prune(LONGEST_OTP_WINDOW_MS, { prefix: WRONG_CODE_BUCKETS, windowMs: WRONG_CODE_WINDOW_MS }),
      services.authenticator.prune(),
      services.usage.prune(),
      services.refusals.prune(),
      services.audit.prune(),
    ]).catch((err: Error) => logger.warn("maintenance failed", { error: err.message }));
  }, 60_000);
  // A retention set (or shortened) takes effect at this start, not a minute later.
  services.audit.prune().catch((err: Error) => logger.warn("maintenance failed", { error: err.message }));
  const stopFlushing = services.usage.start(config.usageFlushS, () => services.refusals.flushLogged());
  const stopSampling = services.history.start();
  return () => {
    clearInterval(timer);
    stopFlushing();
    stopSampling();
  };
}
