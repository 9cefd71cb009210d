/**
 * The HTTPS guard behind a proxy: which refusals say "Use HTTPS" and which name the missing
 * X-Forwarded-Proto header (and log it, at most once a minute).
 */
import { describe, expect, test } from "bun:test";
import { Elysia } from "elysia";
import { httpsGuard, MISSING_PROTO_MESSAGE } from "../../../src/core/http/guards.ts";
import { attachMeta } from "../../../src/core/http/meta.ts";
import { IpAllowlist } from "../../../src/core/ipallow.ts";

function guarded() {
  const warnings: { msg: string; fields?: Record<string, unknown> }[] = [];
  const app = new Elysia()
    .use(httpsGuard(new IpAllowlist(["127.0.0.1"]), { warn: (msg, fields) => warnings.push({ msg, fields }) }))
    .get("/health", () => ({ status: "ok" }));
  const send = async (peer: string, headers: Record<string, string>) => {
    const request = new Request("http://imgpress.test/health", { headers });
    attachMeta(request, peer);
    const res = await app.handle(request);
    return { status: res.status, body: (await res.json()) as { code?: string; message?: string; status?: string } };
  };
  return { send, warnings };
}

describe("httpsGuard", () => {
  test.each([
    {
      name: "trusted proxy, X-Forwarded-Proto: https",
      peer: "127.0.0.1",
      headers: { "x-forwarded-proto": "https" },
      status: 200,
      message: undefined,
      logged: 0,
    },
    {
      name: "trusted proxy, no X-Forwarded-Proto",
      peer: "127.0.0.1",
      headers: {},
      status: 403,
      message: MISSING_PROTO_MESSAGE,
      logged: 1,
    },
    {
      name: "trusted proxy, X-Forwarded-Proto: http (the client used HTTP)",
      peer: "127.0.0.1",
      headers: { "x-forwarded-proto": "http" },
      status: 403,
      message: "Use HTTPS: this service does not answer plain HTTP.",
      logged: 0,
    },
    {
      name: "untrusted peer, no header",
      peer: "203.0.113.9",
      headers: {},
      status: 403,
      message: "Use HTTPS: this service does not answer plain HTTP.",
      logged: 0,
    },
    {
      name: "untrusted peer claiming https",
      peer: "203.0.113.9",
      headers: { "x-forwarded-proto": "https" },
      status: 403,
      message: "Use HTTPS: this service does not answer plain HTTP.",
      logged: 0,
    },
  ])("$name", async ({ peer, headers, status, message, logged }) => {
    const { send, warnings } = guarded();
    const res = await send(peer, headers as Record<string, string>);
    expect(res.status).toBe(status);
    if (status === 403) expect(res.body).toMatchObject({ code: "HTTPS_REQUIRED", message });
    expect(warnings.length).toBe(logged);
  });

  test("the message and the log line name the header; a stream of such refusals logs one line, not one each", async () => {
    const { send, warnings } = guarded();
    for (let i = 0; i < 5; i++) expect((await send("127.0.0.1", {})).status).toBe(403);
    expect(MISSING_PROTO_MESSAGE).toContain("X-Forwarded-Proto");
    expect(warnings).toHaveLength(1);
    expect(warnings[0]!.msg).toContain("X-Forwarded-Proto");
    expect(warnings[0]!.fields).toEqual({ refused: 1 });
  });
});
