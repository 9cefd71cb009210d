/**
 * Ports chosen before the server that uses them starts (a PostgreSQL cluster, instances behind
 * nginx, a port nothing answers on), taken below the kernel's ephemeral range: `listen(0)` and
 * outgoing connections draw from that range, so a port outside it cannot be taken by another
 * socket on the machine between the choice and the bind, nor while its server restarts.
 */
import { readFileSync } from "node:fs";
import { createServer } from "node:net";

/** Lowest port of the range picked from (above the well-known and the usual service ports). */
const LOWEST = 20_000;

/** `n` distinct ports on 127.0.0.1 that nothing listens on now, outside the ephemeral range. */
export async function unusedPorts(n: number): Promise<number[]> {
  const [low, high] = pickRange();
  const found = new Set<number>();
  for (let tries = 0; found.size < n; tries++) {
    if (tries > 200) throw new Error(`no ${n} free ports in ${low}–${high}`);
    const port = low + Math.floor(Math.random() * (high - low + 1));
    if (!found.has(port) && (await bindable(port))) found.add(port);
  }
  return [...found];
}

/** A 127.0.0.1 port that nothing listens on: "SMTP server down", or the port of a private server. */
export async function closedPort(): Promise<number> {
  return (await unusedPorts(1))[0]!;
}

/** Below the ephemeral range when there is room there (Linux), else the ephemeral range itself. */
function pickRange(): [number, number] {
  let ephemeralLow = 32_768;
  try {
    ephemeralLow =
      Number(readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8").trim().split(/\s+/)[0]) || ephemeralLow;
  } catch {
    // not Linux: the usual default
  }
  return ephemeralLow - LOWEST >= 1_000 ? [LOWEST, ephemeralLow - 1] : [49_152, 65_535];
}

function bindable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = createServer();
    probe.once("error", () => resolve(false));
    probe.listen({ port, host: "127.0.0.1", exclusive: true }, () => probe.close(() => resolve(true)));
  });
}
