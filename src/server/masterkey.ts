import { Buffer } from "node:buffer";
import { readFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { eq } from "drizzle-orm";
import { type Config, ConfigError } from "../core/config.ts";
import { deriveKey, randomBytes, SecretBox, timingSafeEqual, toHex } from "../core/crypto.ts";
import { readOrCreate } from "../core/files.ts";
import type { Store } from "../data/db/index.ts";
import type { DatabaseFacts } from "../data/db/inspect.ts";

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
  // Only a missing file is "no key": one that cannot be read (root-owned after a command run as root) must say so.
  const text = await readFile(path, "utf8").catch((err: NodeJS.ErrnoException) => {
    if (err.code === "ENOENT") return null;
    if (err.code === "ENOTDIR")
      throw new Error(
        `cannot read the master key file ${path}: ${dirname(path)} is not a folder (check IMGPRESS_DATA_DIR)`,
      );
    throw new Error(
      `cannot read the master key file ${path} (${err.code ?? err.message}): give this user read access to it, e.g. chown it to the user the service runs as`,
    );
  });
  return text === null ? null : decodeKey(text.trim(), path);
}

/** Where the generated master key lives. */
export function masterKeyPath(config: Config): string {
  return join(config.dataDir, "master.key");
}

/** Where the master key in use comes from, for messages: the variable or the file's path. */
export function masterKeyOrigin(config: Config): string {
  return config.masterKey ? "IMGPRESS_MASTER_KEY" : masterKeyPath(config);
}

const CHECK_NAME = "master_key_check";

/** The one-way check value of a master key that a database keeps (HKDF output: tells keys apart, reveals none). */
async function masterKeyCheck(key: Uint8Array): Promise<string> {
  return toHex(await deriveKey(key, "master-key-check"));
}

/** The box stored secret keys are sealed in: a key derived from the master key for that one use. */
export async function secretBoxOf(key: Uint8Array): Promise<SecretBox> {
  return SecretBox.create(await deriveKey(key, "secret-box"));
}

/**
 * Whether `key` is the master key of the database `facts` describe: by its pin, or, in a database
 * from before the pin, by opening its newest sealed secret. Null when nothing tells (no pin and no
 * key pair: any key will do).
 */
export async function keyFitsDatabase(facts: DatabaseFacts, key: Uint8Array): Promise<boolean | null> {
  if (facts.keyCheck !== null) return timingSafeEqual(facts.keyCheck, await masterKeyCheck(key));
  if (facts.newestSealed === null) return null;
  const box = await secretBoxOf(key);
  return box.open(facts.newestSealed.sealed, facts.newestSealed.id).then(
    () => true,
    () => false,
  );
}

/**
 * Refuses, before a local database is opened (and so before anything migrates it), a master key
 * that is not its own, and a missing key file of a database used with one: a key generated now
 * would be refused and left behind as if it were the right one. Nothing is written either way.
 */
export async function requireDatabaseKey(config: Config, facts: DatabaseFacts | null): Promise<void> {
  if (!facts) return;
  const key = await existingMasterKey(config);
  if (key === null) {
    if (facts.keyCheck !== null || facts.newestSealed !== null) throw missingKeyFile(config);
    return;
  }
  if ((await keyFitsDatabase(facts, key)) === false) throw masterKeyMismatch(masterKeyOrigin(config));
}

/**
 * Throws when no master key is configured and its file is missing although the database was
 * pinned to a key: loadMasterKey would generate a new one, which pinMasterKey then refuses, and
 * the new file would stay behind as if it were the right key. Nothing is written.
 */
export async function requireKeyOfPinnedDatabase(store: Store, config: Config): Promise<void> {
  if (config.masterKey) return;
  const {
    db,
    tables: { databaseFacts },
  } = store;
  // The pin first, the file second: a process starting beside this one writes its key file before
  // it pins, so a pin seen here means that file exists by now (the other order raced: a file not
  // yet written, then the other process's pin, refused a concurrent first start).
  const pinned = (await db.select().from(databaseFacts).where(eq(databaseFacts.name, CHECK_NAME)))[0];
  if (pinned === undefined || (await existingMasterKey(config))) return;
  throw missingKeyFile(config);
}

function missingKeyFile(config: Config): ConfigError {
  return new ConfigError(
    `the master key file ${masterKeyPath(config)} is missing, and this database was created with a master key: put that file back (it is kept with your backups), ` +
      "or set IMGPRESS_MASTER_KEY to the key; a new key could not open the stored secret keys. Nothing was written (docs/operations.md#the-master-key).",
  );
}

/**
 * Refuses to go on with a master key other than the one the database was first used with (a
 * restored `--without-key` backup, an instance configured with another key). The first start
 * stores a one-way check value; a database from before the check is pinned only if the key opens
 * its stored secrets (`opensStoredSecrets`). Throws a ConfigError naming `origin`.
 */
export async function pinMasterKey(
  store: Store,
  key: Uint8Array,
  origin: string,
  opensStoredSecrets: () => Promise<boolean>,
): Promise<void> {
  const check = await masterKeyCheck(key);
  const {
    db,
    tables: { databaseFacts },
  } = store;
  const pinned = async () =>
    (await db.select().from(databaseFacts).where(eq(databaseFacts.name, CHECK_NAME)))[0]?.value;
  let stored = await pinned();
  if (stored === undefined) {
    if (!(await opensStoredSecrets())) throw masterKeyMismatch(origin);
    await db.insert(databaseFacts).values({ name: CHECK_NAME, value: check }).onConflictDoNothing();
    // Another process starting at the same moment may have pinned its key first.
    stored = await pinned();
  }
  if (stored === undefined || !timingSafeEqual(stored, check)) throw masterKeyMismatch(origin);
}

/** The refusal of a master key (from `origin`) that is not the database's: exit 2, naming where the key came from. */
export function masterKeyMismatch(origin: string): ConfigError {
  return new ConfigError(
    `the master key (${origin}) is not the one this database was created with, so its stored secret keys and codes cannot be opened. ` +
      "Start with the original key: the master.key kept with your backup, or IMGPRESS_MASTER_KEY set to it (docs/operations.md#the-master-key).",
  );
}

function decodeKey(text: string, origin: string): Uint8Array {
  // Hex digits only but not 64 of them: a hex key cut short (43 of them would also read as base64,
  // as another key). A real base64 key of hex digits alone is a 1-in-10^20 chance.
  if (/^[0-9a-fA-F]+$/.test(text) && text.length !== 64) {
    throw new ConfigError(
      `${origin} is invalid: it has ${text.length} hex digits, and a master key in hex has 64; was it cut short when copied?`,
    );
  }
  // Buffer's base64 decoder skips what it cannot read: a mistyped character would give another key.
  const base64 = /^[A-Za-z0-9+/]{43}=?$|^[A-Za-z0-9_-]{43}=?$/.test(text);
  const bytes = /^[0-9a-fA-F]{64}$/.test(text)
    ? Buffer.from(text, "hex")
    : base64
      ? Buffer.from(text, "base64")
      : Buffer.alloc(0);
  if (bytes.length !== 32) throw new ConfigError(`${origin} is invalid: expected 32 bytes as 64 hex digits or base64.`);
  return new Uint8Array(bytes);
}
