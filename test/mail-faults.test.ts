/**
 * An SMTP server that accepts the TCP connection and then never answers, or drops it, or greets with
 * a refusal: request-otp answers 502 MAIL_DELIVERY_FAILED within a bounded time (the transport's
 * 10 s greeting timeout for the silent one), leaves no usable code, and conversions go on meanwhile.
 * (Refusals at RCPT/DATA and a closed port are in test/issuance.test.ts.)
 */
import { afterEach, describe, expect, test } from "bun:test";
import { createServer, type Server, type Socket } from "node:net";
import { otpCodes } from "../src/db/schema.ts";
import { convertForm, postBearer } from "./support/convert-helpers.ts";
import { createHarness, expectError, type Harness } from "./support/harness.ts";
import * as img from "./support/images.ts";

type Behaviour = "silent" | "drop" | "refuse";

/** A TCP server on 127.0.0.1 that misbehaves as an SMTP server would. */
async function badSmtp(behaviour: Behaviour): Promise<{ url: string; close: () => Promise<void> }> {
  const sockets = new Set<Socket>();
  const server: Server = createServer((socket) => {
    sockets.add(socket);
    socket.on("error", () => {});
    socket.on("close", () => sockets.delete(socket));
    if (behaviour === "drop") socket.destroy();
    if (behaviour === "refuse") socket.end("554 5.3.2 no service here\r\n");
    // "silent": hold the connection open and say nothing.
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as { port: number }).port;
  return {
    url: `smtp://127.0.0.1:${port}`,
    close: () => {
      for (const s of sockets) s.destroy();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

let h: Harness | undefined;
let smtp: Awaited<ReturnType<typeof badSmtp>> | undefined;
afterEach(async () => {
  await h?.close();
  await smtp?.close();
});

describe("an SMTP server that misbehaves", () => {
  test.each(["silent", "drop", "refuse"] as const)("%s: 502 MAIL_DELIVERY_FAILED, no usable code, conversions unaffected", async (behaviour) => {
    smtp = await badSmtp(behaviour);
    h = await createHarness({ env: { IMGPRESS_SMTP_URL: smtp.url } });
    const keys = await h.services.keys.issue("known@example.com", "");
    const mail = h.requestOtp({ email: "owner@example.com" });
    // While the code request waits on the mail server, a conversion is answered.
    const converted = await postBearer(h, keys.apiKey, await convertForm(await img.photo(320, 240)));
    expect(converted.status).toBe(200);
    expectError(await mail, 502, "MAIL_DELIVERY_FAILED");
    expect(await h.store.db.select().from(otpCodes)).toEqual([]);
    // Bounded by the test's 30 s limit: the transport gives up on a silent server after its 10 s greeting timeout.
  }, 30_000);
});
