// The peer: ipx (npm, sharp-based image server) as its users run it, under Node, serving the
// corpus folder over HTTPS with the service's certificate, so the bench's client talks to both the
// same way. Same sharp (package.json overrides ipx's sharp with the project's) and the same sharp
// settings as the service: operation cache off, thread count as sharp chooses from the
// environment. Prints {"port":N} once listening.
import { readFileSync } from "node:fs";
import https from "node:https";
import { createIPX, createIPXNodeServer, ipxFSStorage } from "ipx";
import sharp from "sharp";

sharp.cache(false);

const [dirList, pemPath] = process.argv.slice(2);
const dir = dirList.split(",");
const pem = readFileSync(pemPath, "utf8");
const cert = pem.slice(pem.indexOf("-----BEGIN CERTIFICATE-----"));
const key = pem.slice(0, pem.indexOf("-----BEGIN CERTIFICATE-----"));

const ipx = createIPX({ storage: ipxFSStorage({ dir }) });
const server = https.createServer({ key, cert }, createIPXNodeServer(ipx));
server.listen(0, "127.0.0.1", () => {
  console.log(
    JSON.stringify({
      port: server.address().port,
      sharp: sharp.versions.sharp,
      vips: sharp.versions.vips,
      concurrency: sharp.concurrency(),
      node: process.version,
    }),
  );
});
process.on("SIGTERM", () => server.close(() => process.exit(0)));
