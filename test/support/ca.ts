/**
 * A real certificate chain made with the openssl command, as a public CA issues one: a root, an
 * intermediate it signed, and a server certificate the intermediate signed; plus a second CA's
 * intermediate (the wrong one for that server certificate).
 */
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** The PEM files of a chain: certbot's names for what it writes. */
export interface CertificateChain {
  root: string;
  intermediate: string;
  /** The server's certificate alone (certbot's cert.pem). */
  leaf: string;
  /** Its private key. */
  key: string;
  /** The server's certificate, then its intermediate (certbot's fullchain.pem). */
  fullchain: string;
  /** An intermediate of another CA, with the same subject name as `intermediate`. */
  otherIntermediate: string;
}

/** Issues a root, an intermediate and a certificate for `names` (DNS names and IP addresses), valid 90 days. */
export async function certificateChain(names: string[]): Promise<CertificateChain> {
  const dir = await mkdtemp(join(tmpdir(), "imgpress-ca-"));
  try {
    const file = (name: string) => join(dir, name);
    const caExtensions = "basicConstraints=critical,CA:true\nkeyUsage=critical,keyCertSign,cRLSign\n";
    const san = names.map((n) => (/^[\d.]+$|:/.test(n) ? `IP:${n}` : `DNS:${n}`)).join(",");
    await writeFile(file("ca.ext"), caExtensions);
    await writeFile(
      file("leaf.ext"),
      `basicConstraints=critical,CA:false\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\nsubjectAltName=${san}\n`,
    );
    const key = (name: string) =>
      openssl("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", file(`${name}.key`));
    const request = (name: string, subject: string) =>
      openssl("req", "-new", "-key", file(`${name}.key`), "-subj", subject, "-out", file(`${name}.csr`));
    const sign = (name: string, by: string, extensions: string) =>
      openssl(
        "x509",
        "-req",
        "-in",
        file(`${name}.csr`),
        "-CA",
        file(`${by}.pem`),
        "-CAkey",
        file(`${by}.key`),
        "-CAcreateserial",
        "-days",
        "90",
        "-extfile",
        file(extensions),
        "-out",
        file(`${name}.pem`),
      );
    for (const name of ["root", "other-root", "intermediate", "other-intermediate", "leaf"]) await key(name);
    await openssl(
      "req",
      "-x509",
      "-new",
      "-key",
      file("root.key"),
      "-subj",
      "/CN=imgpress test root/O=imgpress tests",
      "-days",
      "90",
      "-addext",
      "basicConstraints=critical,CA:true",
      "-out",
      file("root.pem"),
    );
    await openssl(
      "req",
      "-x509",
      "-new",
      "-key",
      file("other-root.key"),
      "-subj",
      "/CN=another test root/O=imgpress tests",
      "-days",
      "90",
      "-addext",
      "basicConstraints=critical,CA:true",
      "-out",
      file("other-root.pem"),
    );
    await request("intermediate", "/CN=imgpress test intermediate/O=imgpress tests");
    await sign("intermediate", "root", "ca.ext");
    await request("other-intermediate", "/CN=imgpress test intermediate/O=imgpress tests");
    await sign("other-intermediate", "other-root", "ca.ext");
    await request("leaf", `/CN=${names[0]}`);
    await sign("leaf", "intermediate", "leaf.ext");
    const read = (name: string) => readFile(file(name), "utf8");
    const [root, intermediate, leaf, leafKey, otherIntermediate] = await Promise.all([
      read("root.pem"),
      read("intermediate.pem"),
      read("leaf.pem"),
      read("leaf.key"),
      read("other-intermediate.pem"),
    ]);
    return { root, intermediate, leaf, key: leafKey, fullchain: leaf + intermediate, otherIntermediate };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

async function openssl(...args: string[]): Promise<void> {
  const child = Bun.spawn(["openssl", ...args], { stdout: "ignore", stderr: "pipe" });
  const [code, stderr] = await Promise.all([child.exited, new Response(child.stderr).text()]);
  if (code !== 0) throw new Error(`openssl ${args[0]} failed (${code}): ${stderr}`);
}
