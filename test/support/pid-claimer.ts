// A process that claims a pid record at a given instant and holds it (test/server/operator-mistakes.test.ts
// starts several at once): prints "OK" or "REFUSED <reason>", then waits, so its record stays live.
import { claimPidFile } from "../../src/server/pidfile.ts";

const [database, at] = [process.argv[2]!, Number(process.argv[3])];
while (Date.now() < at) {
  // Spin to the shared instant: a timer's granularity would spread the claimers apart.
}
try {
  claimPidFile(database);
  console.log("OK");
} catch (err) {
  console.log(`REFUSED ${(err as Error).message}`);
}
await Bun.sleep(500);
