/**
 * Storage faults mapped in one place (src/data/db/faults.ts via the error handler): a database that
 * refuses writes (SQLITE_READONLY, here through `PRAGMA query_only`) or stays locked past
 * busy_timeout (SQLITE_BUSY) answers 503 STORAGE_UNAVAILABLE with Retry-After, changes nothing,
 * lets bearer conversions go on, and recovers by itself. The full-disk case runs for real on a
 * tmpfs in test/e2e/storage-faults.e2e.test.ts.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { createClient } from "@libsql/client";
import { createLogger } from "../../../src/core/log.ts";
import { storageFaultCode } from "../../../src/data/db/faults.ts";
import { otpCodes } from "../../../src/data/db/schema.ts";
import { convertForm, postBearer, postSigned } from "../../support/convert-helpers.ts";
import { createHarness, type Harness } from "../../support/harness.ts";
import * as img from "../../support/images.ts";
import { expectStorageUnavailable } from "../../support/ops.ts";

let h: Harness;
beforeEach(async () => {
  h = await createHarness();
});
afterEach(async () => {
  await h.close();
});

describe("a database that refuses writes (SQLITE_READONLY)", () => {
  test("code endpoints answer 503 and change nothing; bearer converts; signed needs its replay record; then recovery", async () => {
    const keys = await h.issueKey("known@example.com");
    const { code } = await h.obtainOtp("pending@example.com");
    const image = await convertForm(await img.photo(64, 48));
    await h.sqlite.client.execute("PRAGMA query_only = 1");
    try {
      const mails = h.smtp.messages.length;
      expectStorageUnavailable(await h.requestOtp({ email: "new@example.com" }));
      expect(h.smtp.messages.length).toBe(mails);
      expectStorageUnavailable(
        await h.request("POST", "/v1/plugin/auth/verify-otp", { json: { email: "pending@example.com", otp: code } }),
      );
      expect((await postBearer(h, keys, image)).status).toBe(200);
      expectStorageUnavailable(await postSigned(h, keys, image));
    } finally {
      await h.sqlite.client.execute("PRAGMA query_only = 0");
    }
    // Nothing was consumed during the fault: the pending code still exchanges once writes work again.
    expect(await h.store.db.select().from(otpCodes)).toHaveLength(1);
    expect(
      (await h.request("POST", "/v1/plugin/auth/verify-otp", { json: { email: "pending@example.com", otp: code } }))
        .status,
    ).toBe(200);
    expect((await postSigned(h, keys, image)).status).toBe(200);
    expect(h.logs.some((l) => l.includes('"storage unavailable"') && l.includes("SQLITE_READONLY"))).toBe(true);
    expect(h.logs.some((l) => l.includes("unhandled error"))).toBe(false);
  });
});

describe("a database locked by another writer past busy_timeout (SQLITE_BUSY)", () => {
  test("answers 503 STORAGE_UNAVAILABLE, then works once the lock is gone", async () => {
    const other = createClient({ url: `file:${h.dbPath}` });
    const tx = await other.transaction("write");
    try {
      expectStorageUnavailable(await h.requestOtp({ email: "busy@example.com" }));
    } finally {
      await tx.rollback();
      tx.close();
      other.close();
    }
    expect((await h.requestOtp({ email: "busy@example.com" })).status).toBe(200);
  }, 20_000);
});

describe("storageFaultCode", () => {
  test.each([
    [{ code: "SQLITE_FULL", rawCode: 13 }, "SQLITE_FULL"],
    [{ code: "SQLITE_IOERR_WRITE", rawCode: 778 }, "SQLITE_IOERR_WRITE"],
    [{ code: "SQLITE_CANTOPEN" }, "SQLITE_CANTOPEN"],
    [{ message: "Failed query", cause: { code: "SQLITE_READONLY", rawCode: 8 } }, "SQLITE_READONLY"],
    // PostgreSQL: a rotated password (28P01) and a dropped database (3D000) are the storage's, not the request's.
    [{ message: "Failed query", cause: { code: "28P01" } }, "28P01"],
    [{ code: "3D000" }, "3D000"],
    [{ code: "08006" }, "08006"],
    [{ code: "23505" }, null],
    [{ code: "SQLITE_CONSTRAINT_PRIMARYKEY", rawCode: 1555 }, null],
    [{ code: "ENOENT" }, null],
    [new Error("boom"), null],
    [undefined, null],
  ])("case %# is classified", (err, expected) => {
    expect(storageFaultCode(err)).toBe(expected);
  });
});

describe("a failed query in the log", () => {
  test("names the driver's words, never the query's parameters (e-mail addresses, key hashes)", () => {
    const lines: string[] = [];
    const logger = createLogger("error", (l) => lines.push(l));
    const driver = Object.assign(new Error('password authentication failed for user "imp"'), { code: "28P01" });
    const wrapped = new Error(
      'Failed query: select "at" from "rate_events" where "bucket" = $1\nparams: otp-email:z@example.com,1700000000000',
      { cause: driver },
    );
    logger.error("unhandled error", { error: wrapped });
    const line = JSON.parse(lines[0]!);
    expect(line.error.message).toBe('database query failed: password authentication failed for user "imp"');
    expect(lines[0]).not.toContain("z@example.com");
    expect(lines[0]).not.toContain("rate_events");
    expect(line.error.stack).toContain("at ");
    // Other errors keep their own message.
    logger.error("unhandled error", { error: new Error("boom") });
    expect(JSON.parse(lines[1]!).error.message).toBe("boom");
  });
});
