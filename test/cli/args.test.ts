/** The command-line splitter (src/cli/args.ts): the command lines imgpress has always accepted, read by `node:util` parseArgs. */
import { describe, expect, test } from "bun:test";
import { checkUsage, parseArgs, UsageError } from "../../src/cli/args.ts";
import { flagName, settings } from "../../src/core/config.ts";

describe("parseArgs", () => {
  const cases: { argv: string[]; words: string[]; flags: Record<string, string> }[] = [
    { argv: ["-h"], words: [], flags: { help: "true" } },
    { argv: ["-v"], words: [], flags: { version: "true" } },
    { argv: ["keys", "list", "--all", "--json"], words: ["keys", "list"], flags: { all: "true", json: "true" } },
    {
      argv: ["keys", "list", "--email", "BOB@example.com"],
      words: ["keys", "list"],
      flags: { email: "BOB@example.com" },
    },
    { argv: ["--port", "5", "serve"], words: ["serve"], flags: { port: "5" } },
    { argv: ["--port=5"], words: [], flags: { port: "5" } },
    { argv: ["--behind-proxy"], words: [], flags: { "behind-proxy": "true" } },
    { argv: ["--behind-proxy=false"], words: [], flags: { "behind-proxy": "false" } },
    { argv: ["backup", "b.db", "--without-key=YES"], words: ["backup", "b.db"], flags: { "without-key": "true" } },
    { argv: ["keys", "list", "--all=0"], words: ["keys", "list"], flags: { all: "false" } },
    { argv: ["health", "--url", "https://x:1/"], words: ["health"], flags: { url: "https://x:1/" } },
    { argv: ["-x"], words: ["-x"], flags: {} },
    { argv: ["-hv"], words: ["-hv"], flags: {} },
    { argv: ["keys", "revoke", "key_1"], words: ["keys", "revoke", "key_1"], flags: {} },
  ];
  test.each(cases)("$argv", ({ argv, words, flags }) => {
    expect(parseArgs(argv)).toEqual({ words, flags });
  });

  test.each([["--port"], ["--email"], ["--port="], ["--email= "]])("%s without a value is refused", (flag) => {
    expect(() => parseArgs([flag])).toThrow(new UsageError(`${flag.split("=")[0]} needs a value`));
  });

  // A typo used to take the next word as its value: `backup --withoutkey /srv/b.db` wrote a backup
  // with the master key into the working folder.
  test.each([[["--withoutkey", "/srv/b.db"]], [["--emial", "a@example.com"]], [["--frob"]], [["--frob=1"]]])(
    "unknown option %j is refused",
    (argv: string[]) => {
      expect(() => parseArgs(["backup", ...argv])).toThrow(new UsageError(`unknown option ${argv[0]!.split("=")[0]}`));
    },
  );

  test.each(["1x", "", "maybe"])("a switch given %j is refused", (value) => {
    expect(() => parseArgs([`--without-key=${value}`])).toThrow(UsageError);
  });

  test("every setting has its flag", () => {
    for (const s of settings) expect(parseArgs([`--${flagName(s.env)}=x`]).flags).toEqual({ [flagName(s.env)]: "x" });
  });
});

describe("checkUsage", () => {
  test.each([
    [["keys", "revoke", "key_a", "key_b"], 'unexpected argument after "imgpress keys revoke": key_b'],
    [["keys", "list", "-a"], 'unexpected argument after "imgpress keys list": -a'],
    [["migrate", "extra", "words"], 'unexpected arguments after "imgpress migrate": extra words'],
    [["backup", "a.db", "b.db"], 'unexpected argument after "imgpress backup": b.db'],
    [["backup", "--all"], '"imgpress backup" does not take --all'],
    [["serve", "--json", "--secrets"], '"imgpress serve" does not take --json, --secrets'],
  ])("%j is refused", (argv, message) => {
    expect(() => checkUsage(parseArgs(argv))).toThrow(new UsageError(message));
  });

  test.each([
    [["keys", "list", "--all", "--email", "a@b.c", "--json"]],
    [["backup"]],
    [["backup", "b.db", "--without-key", "--port", "9"]],
    [["restore", "f.db"]],
    [[]],
    [["--port", "5"]],
    [["keys", "nonsense"]],
    [["frobnicate"]],
  ])("%j passes (unknown commands are refused by the command itself)", (argv) => {
    expect(() => checkUsage(parseArgs(argv))).not.toThrow();
  });
});
