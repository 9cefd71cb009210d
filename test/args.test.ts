/** The command-line splitter (src/cli/args.ts): the command lines imgpress has always accepted, read by `node:util` parseArgs. */
import { describe, expect, test } from "bun:test";
import { parseArgs } from "../src/cli/args.ts";
import { flagName, settings } from "../src/config.ts";

describe("parseArgs", () => {
  const cases: { argv: string[]; words: string[]; flags: Record<string, string> }[] = [
    { argv: ["-h"], words: [], flags: { help: "true" } },
    { argv: ["-v"], words: [], flags: { version: "true" } },
    { argv: ["keys", "list", "--all", "--json"], words: ["keys", "list"], flags: { all: "true", json: "true" } },
    { argv: ["keys", "list", "--email", "BOB@example.com"], words: ["keys", "list"], flags: { email: "BOB@example.com" } },
    { argv: ["--port", "5", "serve"], words: ["serve"], flags: { port: "5" } },
    { argv: ["--port=5"], words: [], flags: { port: "5" } },
    { argv: ["--behind-proxy"], words: [], flags: { "behind-proxy": "true" } },
    { argv: ["--behind-proxy=false"], words: [], flags: { "behind-proxy": "false" } },
    { argv: ["--not-a-setting", "a"], words: [], flags: { "not-a-setting": "a" } },
    { argv: ["-x"], words: ["-x"], flags: {} },
    { argv: ["-hv"], words: ["-hv"], flags: {} },
    { argv: ["keys", "revoke", "key_1"], words: ["keys", "revoke", "key_1"], flags: {} },
  ];
  test.each(cases)("$argv", ({ argv, words, flags }) => {
    expect(parseArgs(argv)).toEqual({ words, flags });
  });

  test.each([["--port"], ["--not-a-setting"]])("%s without a value is refused", (flag) => {
    expect(() => parseArgs([flag])).toThrow(`${flag} needs a value`);
  });

  test("every setting has its flag", () => {
    for (const s of settings) expect(parseArgs([`--${flagName(s.env)}=x`]).flags).toEqual({ [flagName(s.env)]: "x" });
  });
});
