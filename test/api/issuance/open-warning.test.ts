/**
 * The start-up warning for open registration: real mail, IMGPRESS_ALLOWED_EMAILS=* and a bind
 * address other than loopback mean anyone who can reach the port may obtain keys.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { openIssuanceWarning } from "../../../src/api/issuance/service.ts";
import { type RunningServer, startServer } from "../../support/server.ts";

const SMTP = "smtp://127.0.0.1:2525";

describe("openIssuanceWarning", () => {
  test.each([
    { name: "SMTP, *, 0.0.0.0", config: { smtpUrl: SMTP, allowedEmails: ["*"], host: "0.0.0.0" }, warns: true },
    { name: "SMTP, *, ::", config: { smtpUrl: SMTP, allowedEmails: ["*"], host: "::" }, warns: true },
    {
      name: "SMTP, * among others, a LAN address",
      config: { smtpUrl: SMTP, allowedEmails: ["@example.com", "*"], host: "192.168.1.20" },
      warns: true,
    },
    { name: "no SMTP (codes only in the log)", config: { allowedEmails: ["*"], host: "0.0.0.0" }, warns: false },
    {
      name: "a list of addresses",
      config: { smtpUrl: SMTP, allowedEmails: ["owner@example.com", "@example.org"], host: "0.0.0.0" },
      warns: false,
    },
    {
      name: "loopback 127.0.0.1 (behind a proxy on this machine)",
      config: { smtpUrl: SMTP, allowedEmails: ["*"], host: "127.0.0.1" },
      warns: false,
    },
    { name: "loopback ::1", config: { smtpUrl: SMTP, allowedEmails: ["*"], host: "::1" }, warns: false },
    { name: "localhost", config: { smtpUrl: SMTP, allowedEmails: ["*"], host: "localhost" }, warns: false },
  ])("$name", ({ config, warns }) => {
    const warning = openIssuanceWarning(config);
    if (!warns) return expect(warning).toBeNull();
    expect(warning).toContain("ANYONE who can reach this port may request a code and obtain API keys");
    expect(warning).toContain(config.host);
    expect(warning).toContain("IMGPRESS_ALLOWED_EMAILS");
  });
});

describe("at start", () => {
  let server: RunningServer | undefined;
  afterEach(async () => {
    await server?.stop();
    server = undefined;
  });
  const warnings = (s: RunningServer) =>
    s.logs.filter((l) => l.json?.level === "warn" && String(l.json.msg).includes("obtain API keys"));

  test("a server on 0.0.0.0 with SMTP and the default * logs the warning once, before it listens", async () => {
    server = await startServer({ env: { IMGPRESS_HOST: "0.0.0.0", IMGPRESS_SMTP_URL: SMTP } });
    const listening = server.logs.findIndex((l) => l.json?.msg === "imgpress listening");
    expect(warnings(server)).toHaveLength(1);
    expect(server.logs.indexOf(warnings(server)[0]!)).toBeLessThan(listening);
  });

  test("the same on 127.0.0.1 says nothing of it (start-up warnings all come before the listening line)", async () => {
    server = await startServer({ env: { IMGPRESS_HOST: "127.0.0.1", IMGPRESS_SMTP_URL: SMTP } });
    expect(server.logs.some((l) => l.json?.msg === "imgpress listening")).toBe(true);
    expect(warnings(server)).toEqual([]);
  });
});
