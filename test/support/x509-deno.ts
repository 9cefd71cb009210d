/** Run by test/server/tls/tls.test.ts under Deno: writes a self-signed certificate with src/server/tls and prints its summary as JSON. */
import process from "node:process";
import { selfSignedCertificate } from "../../src/server/tls/selfsigned.ts";
import { summarize } from "./x509.ts";

const [now, ...names] = process.argv.slice(2);
const pair = await selfSignedCertificate(names, 3650, new Date(now!));
console.log(
  JSON.stringify(
    summarize(
      pair.cert,
      names.filter((n) => !/^[\d.:]+$/.test(n)),
      names.filter((n) => /^[\d.:]+$/.test(n)),
    ),
  ),
);
