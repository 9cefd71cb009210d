/** The stopping state shared by the server, readiness and buffered state (src/server/lifecycle.ts). */
import { expect, test } from "bun:test";
import { createLogger } from "../../src/core/log.ts";
import { Lifecycle } from "../../src/server/lifecycle.ts";

test("beginDrain flips `draining` for good", () => {
  const life = new Lifecycle();
  expect(life.draining).toBe(false);
  life.beginDrain();
  life.beginDrain();
  expect(life.draining).toBe(true);
});

test("hooks run in order; a failing one is logged and does not stop the rest", async () => {
  const life = new Lifecycle();
  const ran: string[] = [];
  const lines: string[] = [];
  life.onShutdown("usage flush", async () => void ran.push("usage"));
  life.onShutdown("broken", async () => {
    throw new Error("disk gone");
  });
  life.onShutdown("last", async () => void ran.push("last"));
  expect(await life.runHooks(createLogger("info", (l) => lines.push(l)))).toBe(1);
  expect(ran).toEqual(["usage", "last"]);
  expect(
    lines.some((l) => l.includes('"shutdown step failed"') && l.includes('"step":"broken"') && l.includes("disk gone")),
  ).toBe(true);
});
