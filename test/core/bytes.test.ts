/** The one byte-size formatter of the CLI and the dashboard. */
import { expect, test } from "bun:test";
import { formatBytes } from "../../src/core/bytes.ts";

test.each([
  [0, "0 B"],
  [1023, "1023 B"],
  [1024, "1.0 KiB"],
  [1536, "1.5 KiB"],
  // Just under 1 MiB rounds to the next unit's 1.0, never "1024.0 KiB".
  [1024 * 1024 - 10, "1.0 MiB"],
  [20 * 1024 * 1024, "20.0 MiB"],
  [-2_500_000_000, "−2.3 GiB"],
  [3 * 1024 ** 4, "3.0 TiB"],
  [2048 * 1024 ** 4, "2,048.0 TiB"],
])("%p bytes → %p", (n, text) => {
  expect(formatBytes(n)).toBe(text);
});
