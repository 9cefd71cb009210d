// The smoke test's checks: each prints one line, and the report counts them.

/** Thrown by a check whose failure makes the remaining checks of a binary pointless. */
export class Fatal extends Error {}

/** `12 ms` or `1.2 s`. */
export const fmtMs = (ms: number) => (ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(1)} s`);

/** Throws `message` unless `condition` holds. */
export function assert(condition: unknown, message: string): asserts condition {
  if (!condition) throw new Error(message);
}

/** Counts passed and failed checks; its last line is exactly "N passed, N failed". */
export class Report {
  passed = 0;
  failed = 0;

  /** Runs one check and prints one line; returns its value, or undefined when it failed. */
  async check<T>(
    tag: string,
    name: string,
    fn: () => Promise<T | string> | T | string,
    describe?: (v: T) => string,
  ): Promise<T | undefined> {
    const t0 = performance.now();
    try {
      const value = await fn();
      const detail = describe ? describe(value as T) : typeof value === "string" ? value : "";
      this.passed++;
      console.log(`ok   [${tag}] ${name}${detail ? `: ${detail}` : ""} (${fmtMs(performance.now() - t0)})`);
      return value as T;
    } catch (err) {
      this.fail(tag, `${name}: ${err instanceof Error ? err.message : String(err)} (${fmtMs(performance.now() - t0)})`);
      return undefined;
    }
  }

  /** Like `check`, but a failure throws Fatal (the binary's remaining checks are skipped). */
  async must<T>(tag: string, name: string, fn: () => Promise<T> | T, describe?: (v: T) => string): Promise<T> {
    const value = await this.check<T>(tag, name, fn as () => Promise<T>, describe);
    if (value === undefined) throw new Fatal(`${name} failed`);
    return value;
  }

  /** Counts and prints a failure that is not a check of its own. */
  fail(tag: string, message: string): void {
    this.failed++;
    console.log(`FAIL [${tag}] ${message.split("\n").join("\n       ")}`);
  }

  /** The summary line. */
  summary(): string {
    return `${this.passed} passed, ${this.failed} failed`;
  }
}
