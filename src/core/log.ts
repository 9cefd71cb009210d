/** Severity levels, least to most severe. */
export type LogLevel = "debug" | "info" | "warn" | "error";

/** Structured one-line-per-event logger. */
export interface Logger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
  /** A start-up line (where it listens, what is wrong with the configuration): written at any level, since an operator needs it once. */
  startup(lvl: "info" | "warn", msg: string, fields?: Record<string, unknown>): void;
}

const order: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };
// A safety net: callers never pass secrets, but a field with one of these names is blanked anyway.
const secretField = /otp|code_hash|secret|api_?key|authorization|signature|password|token|master/i;

/** Writes JSON lines (`{time, level, msg, …fields}`) at or above `level` to `write`. */
export function createLogger(level: LogLevel = "info", write: (line: string) => void = (l) => console.log(l)): Logger {
  const line = (lvl: LogLevel, msg: string, fields: Record<string, unknown>) => {
    const safe: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(fields))
      safe[k] = secretField.test(k) ? "[redacted]" : v instanceof Error ? errorFields(v) : v;
    write(JSON.stringify({ time: new Date().toISOString(), level: lvl, msg, ...safe }));
  };
  const emit =
    (lvl: LogLevel) =>
    (msg: string, fields: Record<string, unknown> = {}) => {
      if (order[lvl] >= order[level]) line(lvl, msg, fields);
    };
  return {
    debug: emit("debug"),
    info: emit("info"),
    warn: emit("warn"),
    error: emit("error"),
    startup: (lvl, msg, fields = {}) => line(lvl, msg, fields),
  };
}

function errorFields(err: Error): Record<string, unknown> {
  // Drizzle wraps a driver's error as "Failed query: <sql> params: <values>": the values are e-mail
  // addresses and key hashes, so the driver's own words (the cause) stand for it, and the stack's
  // header, which repeats the message, is left out.
  if (err.message.startsWith("Failed query:") && err.cause instanceof Error) {
    const frames = err.stack?.split("\n").filter((line) => line.trimStart().startsWith("at ")) ?? [];
    return {
      name: err.name,
      message: `database query failed: ${err.cause.message.split("\n")[0]}`,
      stack: frames.slice(0, 7).join("\n"),
    };
  }
  return { name: err.name, message: err.message, stack: err.stack?.split("\n").slice(0, 8).join("\n") };
}
