// One-time-code helpers with no runtime imports: shared by the Bun tests and the Deno ones.

/** A six-digit code that is not `code` (`offset` apart, wrapping at a million). */
export function wrongCode(code: string, offset = 1): string {
  return String((Number(code) + offset) % 1_000_000).padStart(6, "0");
}
