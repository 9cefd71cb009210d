/**
 * Preloaded by bunfig.toml for every `bun test` run: stops the private PostgreSQL cluster (if a
 * test started one) once all files have run. `process.on("exit")` never fires under `bun test`,
 * so without this hook the cluster and its temporary folder would outlive the run.
 */
import { afterAll } from "bun:test";
import { stopPostgres } from "./postgres.ts";
import { stopAllWordPress } from "./wordpress.ts";

afterAll(async () => {
  stopAllWordPress();
  await stopPostgres();
});
