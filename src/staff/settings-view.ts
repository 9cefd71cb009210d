import { type Config, flagName, type SettingGroup, settings } from "../core/config.ts";
import { hasCredentials, redactUrl } from "../core/redact.ts";

/** A value written as a URL with an authority (`scheme://…`). */
const URL_LIKE = /^[a-z][a-z0-9+.-]*:\/\//i;

/** How a masked secret is shown: only that it is set. */
const SET = "(set)";
/** Settings whose whole value is secret, by variable name; also covers rows other features add later. */
const SECRET_NAME = /TOKEN|SECRET|PASSWORD|PASSPHRASE|MASTER_KEY|PEPPER|PRIVATE|API_KEY|CREDENTIAL/i;

/** One effective setting as operators see it. */
export interface SettingView {
  env: string;
  /** Where the settings page shows it. */
  group: SettingGroup;
  help: string;
  value: unknown;
}

/**
 * The effective settings; secrets are masked unless `reveal`, which callers audit as
 * `settings.secrets_read`: a setting whose variable names a secret (the master key, the database
 * token, …) shows "(set)", a URL keeps its host and user but not its password or credential-like
 * query parameters (the SMTP password, a libSQL `authToken`).
 */
export function describeSettings(config: Config, { reveal }: { reveal: boolean }): SettingView[] {
  return settings.map((s) => {
    const value = config[s.key];
    const setting = { env: s.env, group: s.group, help: s.help };
    if (reveal || value === undefined) return { ...setting, value };
    if (SECRET_NAME.test(s.env)) return { ...setting, value: SET };
    // file: URLs hold a path only (and URL would rewrite file:x as file:///x).
    if (typeof value === "string" && URL_LIKE.test(value) && !value.startsWith("file:"))
      return { ...setting, value: redactUrl(value) };
    return { ...setting, value };
  });
}

/**
 * The flags in `flags` that carry a secret (a secret setting, or a URL with a password or token,
 * migrate-data's `--from` and `--to` included), each with what to use instead: on the command line
 * they are visible to every user of the machine (`ps`, /proc) and kept in shell history.
 */
export function secretFlags(flags: Record<string, string>): { flag: string; instead: string }[] {
  const found = settings
    .filter((s) => {
      const value = flags[flagName(s.env)];
      return value !== undefined && (SECRET_NAME.test(s.env) || (URL_LIKE.test(value.trim()) && hasCredentials(value)));
    })
    .map((s) => ({ flag: `--${flagName(s.env)}`, instead: `${s.env} in the environment (an env file)` }));
  for (const name of ["from", "to"]) {
    const value = flags[name];
    if (value === undefined || !hasCredentials(value)) continue;
    const instead = /^\s*postgres(ql)?:/i.test(value)
      ? "PGPASSWORD in the environment"
      : "IMGPRESS_DATABASE_AUTH_TOKEN in the environment";
    found.push({ flag: `--${name}`, instead: `the URL of --${name} without its password or token, and ${instead}` });
  }
  return found;
}
