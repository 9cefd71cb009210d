import { Buffer } from "node:buffer";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { ConfigError, type Config } from "./config.ts";
import { randomBytes } from "./crypto.ts";
import { readOrCreate } from "./files.ts";

/**
 * The 32-byte key that seals stored secrets and peppers OTP hashes: from IMGPRESS_MASTER_KEY, or a
 * file generated once into the data folder (mode 0600). It never goes into the database, so a copy
 * of the database alone is useless to an attacker.
 */
export async function loadMasterKey(config: Config): Promise<Uint8Array> {
  if (config.masterKey) return decodeKey(config.masterKey, "IMGPRESS_MASTER_KEY");
  const path = masterKeyPath(config);
  const text = await readOrCreate(path, async () => `${Buffer.from(randomBytes(32)).toString("hex")}\n`);
  return decodeKey(text.trim(), path);
}

/** The master key the service would use, without creating one: null when neither the variable nor the file exists. */
export async function existingMasterKey(config: Config): Promise<Uint8Array | null> {
  if (config.masterKey) return decodeKey(config.masterKey, "IMGPRESS_MASTER_KEY");
  const path = masterKeyPath(config);
  const text = await readFile(path, "utf8").catch(() => null);
  return text === null ? null : decodeKey(text.trim(), path);
}

/** Where the generated master key lives. */
export function masterKeyPath(config: Config): string {
  return join(config.dataDir, "master.key");
}

function decodeKey(text: string, origin: string): Uint8Array {
  const bytes = /^[0-9a-fA-F]{64}$/.test(text) ? Buffer.from(text, "hex") : Buffer.from(text, "base64");
  if (bytes.length !== 32) throw new ConfigError(`${origin} is invalid: expected 32 bytes as 64 hex digits or base64.`);
  return new Uint8Array(bytes);
}
