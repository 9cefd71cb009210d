import { boot } from "../boot.ts";
import { ConfigError, loadConfig } from "../config.ts";
import { serve, type Runtime } from "../server.ts";
import { version } from "../version.ts";
import { checkUsage, parseArgs, UsageError } from "./args.ts";
import { helpText, migrateReport, runAuditCommand, runKeysCommand, runSettingsCommand, runStaffCommand } from "./index.ts";

/** Runs the `imgpress` command line; resolves to the exit status (a server resolves when it stops). */
export async function runMain(argv: readonly string[], runtime: Runtime): Promise<number> {
  const out = (line: string) => console.log(line);
  const err = (line: string) => console.error(line);
  try {
    const parsed = parseArgs(argv);
    const { words, flags } = parsed;
    if (flags.help) return out(helpText()), 0;
    if (flags.version) return out(`imgpress ${version} (${runtime.name})`), 0;
    checkUsage(parsed);
    const [command = "serve", ...rest] = words;
    if (command === "serve") return await serve(flags, runtime);
    // The one-off commands' modules load only when asked for: a server's start-up need not read them.
    if (command === "backup") return await (await import("./backup.ts")).runBackup(loadConfig(runtime.env, flags), rest[0], flags, { out, err });
    if (command === "restore") return await (await import("./backup.ts")).runRestore(loadConfig(runtime.env, flags), rest[0], { out, err });
    if (command === "migrate-data") {
      const config = loadConfig(runtime.env, flags);
      const options = { authToken: config.databaseAuthToken, poolSize: 2, timeoutS: config.databaseTimeoutS };
      return await (await import("./migrate-data.ts")).runMigrateData(rest, flags, options, { out, err });
    }
    if (command === "health") return await (await import("./health.ts")).runHealthCommand(flags, runtime.env, out);
    if (!["keys", "migrate", "staff", "audit", "settings"].includes(command)) throw new UsageError(`unknown command "${command}"`);
    const booted = await boot({ env: runtime.env, flags, loadDocsAsset: runtime.loadDocsAsset, write: err, besideServer: true });
    try {
      if (command === "migrate") return out(migrateReport(booted.store.migrationsApplied)), 0;
      if (command === "staff") return await runStaffCommand(rest, booted.services, out);
      if (command === "settings") return await runSettingsCommand(flags, booted.config, booted.services, out);
      if (command === "audit") return await runAuditCommand(flags, booted.services, Date.now(), out);
      return await runKeysCommand(rest, flags, booted.services, out);
    } finally {
      booted.store.close();
    }
  } catch (e) {
    if (e instanceof ConfigError) return err(`imgpress: ${e.message}`), 2;
    if (e instanceof UsageError) return err(`imgpress: ${e.message}; see imgpress --help`), 2;
    err(`imgpress: ${(e as Error).message}`);
    return 1;
  }
}
