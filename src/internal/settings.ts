import { settings, type Config } from "../config.ts";

/** Settings whose values are secrets: shown as "(set)" unless revealed on purpose. */
const SECRET_KEYS = new Set<string>(["masterKey", "databaseAuthToken", "metricsToken"]);

/** One effective setting as operators see it. */
export interface SettingView {
  env: string;
  help: string;
  value: unknown;
}

/**
 * The effective settings; secrets (the master key, the database token, the SMTP password) are
 * masked (the metrics token too) unless `reveal`, which callers audit as `settings.secrets_read`.
 */
export function describeSettings(config: Config, reveal: boolean): SettingView[] {
  return settings.map((s) => {
    const value = config[s.key];
    if (reveal || value === undefined) return { env: s.env, help: s.help, value };
    if (SECRET_KEYS.has(s.key)) return { env: s.env, help: s.help, value: "(set)" };
    if (s.key === "smtpUrl") return { env: s.env, help: s.help, value: maskPassword(String(value)) };
    return { env: s.env, help: s.help, value };
  });
}

function maskPassword(url: string): string {
  const parsed = new URL(url);
  if (parsed.password) parsed.password = "xxxxx";
  return parsed.toString();
}
