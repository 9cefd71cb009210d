/** The /internal/ allowlist matcher and path reading, table-driven (the HTTP side is in test/staff/staff.test.ts). */
import { describe, expect, test } from "bun:test";
import { isInternalPath } from "../../src/core/http/guards.ts";
import { clientGroup, IpAllowlist, parseAllowEntry, rateLimitSubject } from "../../src/core/ipallow.ts";

describe("IpAllowlist", () => {
  const list = new IpAllowlist([
    "127.0.0.1",
    "::1",
    "192.168.1.0/24",
    "fd00::/8",
    "::ffff:10.0.0.0/104",
    "2001:db8::/126",
  ]);
  test.each([
    ["127.0.0.1", true],
    ["::ffff:127.0.0.1", true],
    ["::1", true],
    ["[::1]", true],
    ["192.168.1.255", true],
    ["192.168.2.0", false],
    ["::ffff:192.168.1.5", true],
    ["::ffff:c0a8:0105", true],
    ["fd12:3456::1", true],
    ["fe80::1%eth0", false],
    ["10.255.0.1", true],
    ["11.0.0.1", false],
    ["2001:db8::3", true],
    ["2001:db8::4", false],
    ["::2", false],
    ["unknown", false],
    ["", false],
  ] as const)("%s → %p", (address, allowed) => {
    expect(list.has(address)).toBe(allowed);
  });

  test.each([
    "10.0.0.0/33",
    "fd00::/129",
    "10.0.0.0/8/8",
    "10.0.0.0/",
    "10.0.0.0/x",
    "localhost",
    "::ffff:10.0.0.0/95",
    "300.1.1.1",
  ])("%s is refused, naming it", (entry) => {
    expect(() => parseAllowEntry(entry)).toThrow(entry);
  });
});

describe("isInternalPath", () => {
  test.each([
    ["/internal", true],
    ["/internal/login", true],
    ["/INTERNAL/login", true],
    ["/%69nternal/login", true],
    ["/%2569nternal/login", true],
    ["/v1/../internal/login", true],
    ["/v1/%2e%2e/internal/login", true],
    ["//internal//login", true],
    ["/./internal", true],
    ["/%5cinternal", true],
    // The router keeps `%2f..` inside one segment: resolved away, these would look like `/`.
    ["/internal/status%2f..%2f..", true],
    ["/internal/keys/x%2f..%2f..%2f..", true],
    ["/internal/%2e%2e%2f..%2fhealth", true],
    ["/internal/x%5c..%5c..", true],
    ["/internal/x%252f..%252f..", true],
    ["/v1/internal", false],
    ["/health", false],
    ["/v1/docs", false],
  ] as const)("%s → %p", (path, internal) => {
    expect(isInternalPath(`http://localhost${path}`)).toBe(internal);
  });

  test("a URL that cannot be read counts as internal (the allowlist decides)", () => {
    expect(isInternalPath("/health")).toBe(true);
  });
});

describe("clientGroup", () => {
  test.each([
    ["2001:db8:aa:ff00::1", 48, "2001:db8:aa:0:0:0:0:0/48"],
    ["2001:db8:aa:1::1", 48, "2001:db8:aa:0:0:0:0:0/48"],
    ["2001:db8:ab::1", 48, "2001:db8:ab:0:0:0:0:0/48"],
    ["2001:db8:aa:ff00::1", 56, "2001:db8:aa:ff00:0:0:0:0/56"],
    ["2001:db8:aa:ff80::1", 52, "2001:db8:aa:f000:0:0:0:0/52"],
    ["2001:db8:aa:1:2:3:4:5", 128, "2001:db8:aa:1:2:3:4:5/128"],
    ["203.0.113.9", 48, "203.0.113.9"],
    ["::ffff:203.0.113.9", 48, "203.0.113.9"],
    ["unknown", 48, "unknown"],
  ] as const)("%s at /%i counts as %s", (address, bits, group) => expect(clientGroup(address, bits)).toBe(group));
});

describe("rateLimitSubject", () => {
  test.each([
    ["198.51.100.7", "198.51.100.7"],
    ["::ffff:198.51.100.7", "198.51.100.7"],
    ["2001:db8:1:2::5", "2001:db8:1:2::/64"],
    ["2001:DB8:1:2:aaaa:bbbb:cccc:dddd", "2001:db8:1:2::/64"],
    ["::1", "0:0:0:0::/64"],
    ["unknown", "unknown"],
  ])("%s counts as %s", (address, subject) => expect(rateLimitSubject(address)).toBe(subject));
});
