/**
 * The one way imgpress writes a byte size for people, in the CLI and the dashboard alike: binary
 * units with their IEC symbols (1 KiB = 1024 bytes), the units of its own limits (20 MiB uploads,
 * IMGPRESS_MEMORY_BUDGET_MB) and of memory figures, so the same number never reads as MB in one
 * place and MiB in another. Machine-readable output (`--json`, metrics) keeps plain byte counts.
 */

const UNITS = ["KiB", "MiB", "GiB", "TiB"] as const;

/** A byte size: 950 B, 12.3 KiB, 4.1 MiB, 2.0 GiB; a minus sign (U+2212) when negative. */
export function formatBytes(n: number): string {
  const sign = n < 0 ? "−" : "";
  let value = Math.abs(n);
  if (value < 1024) return `${sign}${Math.round(value)} B`;
  for (const unit of UNITS) {
    value /= 1024;
    // 1023.96 KiB would print as "1024.0 KiB": it is written as the next unit's 1.0.
    if (value < 1023.95 || unit === "TiB") return `${sign}${grouped(value.toFixed(1))} ${unit}`;
  }
  return `${sign}${value} B`;
}

// Thousands separators (en-US) for the integer part: only a size of 1,000 TiB or more has one.
function grouped(text: string): string {
  return text.replace(/^\d+/, (whole) => whole.replace(/\B(?=(\d{3})+$)/g, ","));
}
