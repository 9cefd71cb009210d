import { ConfigError, loadConfig } from "../core/config.ts";
import { version } from "../core/version.ts";
import { driverMessage, storageFaultAdvice, storageFaultCode } from "../data/db/faults.ts";
import type { Runtime } from "../server/server.ts";
import { secretFlags } from "../staff/settings-view.ts";
import { checkUsage, parseArgs, UsageError } from "./args.ts";
import {
  migrateReport,
  readAuditCommand,
  readKeysCommand,
  readStaffCommand,
  runAuditCommand,
  runKeysCommand,
  runSettingsCommand,
  runStaffCommand,
} from "./index.ts";
import { commandHelp, findCommand, helpText } from "./usage.ts";

/** Runs the `imgpress` command line; resolves to the exit status (a server resolves when it stops). */
export async function runMain(argv: readonly string[], runtime: Runtime): Promise<number> {
  const out = (line: string) => console.log(line);
  const err = (line: string) => console.error(line);
  try {
    const parsed = parseArgs(argv);
    const { words, flags } = parsed;
    if (flags.help || words[0] === "help") return (out(help(words[0] === "help" ? words.slice(1) : words)), 0);
    if (flags.version) return (out(`imgpress ${version} (${runtime.name})`), 0);
    checkUsage(parsed);
    warnOfSecretFlags(flags, err);
    const [command = "serve", ...rest] = words;
    // The server and the database (which unpack the native libraries) load only now: --help and --version work without them.
    if (command === "serve") return await (await import("../server/server.ts")).serve(flags, runtime);
    // The one-off commands' modules load only when asked for: a server's start-up need not read them.
    if (command === "backup")
      return await (await import("./backup.ts")).runBackup(loadConfig(runtime.env, flags), rest[0], flags, {
        out,
        err,
      });
    if (command === "restore")
      return await (await import("./restore.ts")).runRestore(loadConfig(runtime.env, flags), rest[0], flags, {
        out,
        err,
      });
    if (command === "migrate-data") {
      const config = loadConfig(runtime.env, flags);
      const options = { authToken: config.databaseAuthToken, poolSize: 2, timeoutS: config.databaseTimeoutS };
      return await (await import("./migrate-data.ts")).runMigrateData(rest, flags, options, { out, err });
    }
    if (command === "health")
      return await (await import("./health.ts")).runHealthCommand(flags, runtime.env, { out, err });
    if (!["keys", "migrate", "staff", "audit", "settings"].includes(command))
      throw new UsageError(`unknown command "${command}"`);
    // Words a command cannot take are refused before any database is opened (or created).
    if (command === "keys") readKeysCommand(rest, flags);
    if (command === "audit") readAuditCommand(flags);
    const staff = command === "staff" ? readStaffCommand(rest, flags) : null;
    // Only `migrate`, `staff add` and `keys create` (which may come before the first start) may create the database.
    const existingOnly =
      command !== "migrate" && staff?.action !== "add" && !(command === "keys" && rest[0] === "create");
    const booted = await (await import("../server/boot.ts")).boot({
      env: runtime.env,
      flags,
      loadDocsAsset: runtime.loadDocsAsset,
      write: err,
      besideServer: true,
      existingOnly,
    });
    try {
      if (command === "migrate") return (out(migrateReport(booted.store.migrationsApplied)), 0);
      if (command === "staff") return await runStaffCommand(rest, flags, booted.services, { out, err });
      if (command === "settings") return await runSettingsCommand(flags, booted.config, booted.services, out);
      if (command === "audit") return await runAuditCommand(flags, booted.services, Date.now(), out);
      return await runKeysCommand(rest, flags, booted.services, { out, err });
    } finally {
      booted.store.close();
    }
  } catch (e) {
    return failure(e, argv, err);
  }
}

// The exit status and the one line a failed command ends with: 2 for a command line or setting it
// cannot read, 1 for the rest.
function failure(e: unknown, argv: readonly string[], err: (line: string) => void): number {
  if (e instanceof ConfigError) return (err(`imgpress: ${e.message}`), 2);
  if (e instanceof UsageError)
    return (err(`imgpress: ${e.message.replace(/\.$/, "")}; see imgpress ${helpTopic(argv)}--help`), 2);
  // A statement the database refused: Drizzle's message would print it and its parameters (addresses), not why.
  const message = (e as Error).message;
  const fault = /^Failed query:/.test(message) ? storageFaultCode(e) : null;
  if (fault)
    return (
      err(`imgpress: the database refused this (${fault}: ${driverMessage(e)}); ${storageFaultAdvice(fault)}`), 1
    );
  err(`imgpress: ${/^Failed query:/.test(message) ? driverMessage(e) : message}`);
  return 1;
}

// A secret given as a flag is visible to every user of the machine (ps) and kept in shell history.
function warnOfSecretFlags(flags: Parameters<typeof secretFlags>[0], err: (line: string) => void): void {
  const exposed = secretFlags(flags);
  if (exposed.length === 0) return;
  const flagList = exposed.map((e) => e.flag).join(", ");
  err(
    `imgpress: warning: ${flagList} on the command line ${exposed.length === 1 ? "is" : "are"} visible to every user of this machine (ps) and kept in shell history; use ${exposed.map((e) => e.instead).join("; ")} instead`,
  );
}

// `imgpress help` alone, or with a command that does not exist, prints the overview; an unknown
// command asked about is a usage error, so a typo is not answered with a page that ignores it.
function help(words: readonly string[]): string {
  if (words.length === 0) return helpText();
  const text = commandHelp(words);
  if (text === null) throw new UsageError(`unknown command "${words.join(" ")}"`);
  return text;
}

// Where a usage error points: the command's own help when the words name one (`imgpress keys create --help`).
function helpTopic(argv: readonly string[]): string {
  let words: readonly string[];
  try {
    words = parseArgs(argv).words;
  } catch {
    // An option it cannot read (the error being reported): the words before the first option.
    const firstOption = argv.findIndex((a) => a.startsWith("-"));
    words = firstOption === -1 ? argv : argv.slice(0, firstOption);
  }
  const command = findCommand(words);
  return command ? `${command.name} ` : "";
}
