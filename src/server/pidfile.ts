import {
  closeSync,
  linkSync,
  openSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  renameSync,
  rmSync,
  statSync,
  unlinkSync,
  writeSync,
} from "node:fs";
import { pid } from "node:process";
import { cannotWrite, realFile } from "../core/files.ts";

/**
 * `<database file>.pid`: written by a serving process (or by `imgpress restore` while it replaces
 * the file), removed when it stops. A second server on the same file is refused (it would hide the
 * first from this record), and so is `imgpress restore` while the process named there is alive. A
 * crash leaves the file behind, but its process is then gone, so it is ignored; so is a record
 * whose number now belongs to another process (after a reboot or a power cut), told by the boot,
 * the pid namespace and the start time the record carries beside the number (Linux).
 */
export function pidFilePath(databasePath: string): string {
  // The file itself, not the name it was reached by: a server on a symbolic link to the database
  // and restore by its real path (or the other way round) must find the same record.
  return `${realFile(databasePath)}.pid`;
}

/**
 * Records this process as the server of `databasePath`, or throws when a live server already is
 * (restore relies on knowing it); returns the function that removes the record.
 */
export function claimPidFile(databasePath: string, role: Role = "serve"): () => void {
  const path = pidFilePath(databasePath);
  const text = `${pid}\n${identityLine(role)}`;
  // Judging a record stale and replacing it is one step for one process at a time: two doing it at
  // once could each remove the record the other had just written, and both go on.
  const claimed = underLock(path, (): boolean => {
    for (let attempt = 0; ; attempt++) {
      try {
        // Exclusive create: of two servers starting at once (or a server and a restore), one gets the record.
        writeRecord(path, text);
        return true;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== "EEXIST" || attempt > 0) throw err;
        const holder = recordedServer(databasePath);
        // A restore refuses whatever may hold the record, and anything refuses a restore that may be under way.
        const refusal =
          role === "restore" || (holder?.role === "restore" && holder.alive !== false)
            ? holderInUse(holder, databasePath)
            : null;
        if (refusal) throw new Error(refusal);
        if (holder?.alive) {
          throw new Error(
            `another server (pid ${holder.pid}) is already serving ${databasePath}; stop it first, or give this one its own IMGPRESS_DATA_DIR (if no server runs, delete ${path})`,
          );
        }
        // Cannot tell (Deno without --allow-run): refusing would stop every restart after a crash, and
        // taking the record over would hide a live first server from restore and migrate-data; this
        // server runs without a record of its own, and leaves that one alone.
        if (holder && holder.alive === undefined) return false;
        // Left by a crash (or half written): its process is gone.
        rmSync(path, { force: true });
      }
    }
  });
  // The record written above, by the name it was written under (the database file may have come into being since),
  // and only while it is still this one (a process of another pid namespace may have the same number).
  return () => {
    if (claimed && readText(path) === text) unlinkSync(path);
  };
}

/** How long a claim may hold `<record>.lock` (a few file operations): older, its claimer died holding it. */
const STALE_LOCK_MS = 10_000;

// `work` while holding `<record>.lock`, a file made with an exclusive create, which holds a value of
// this claim's own: a lock left by a claimer that died holding it is broken by renaming it aside
// and checking that what was moved is the lock judged stale (two breakers at once must not remove
// a fresh one between them); one moved by mistake is put back.
function underLock<T>(record: string, work: () => T): T {
  const lock = `${record}.lock`;
  const mine = `${pid} ${crypto.randomUUID()}\n`;
  const givenUpAt = Date.now() + 2 * STALE_LOCK_MS;
  for (;;) {
    try {
      writeRecord(lock, mine, 0o600);
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
      const held = readText(lock);
      const since = statSync(lock, { throwIfNoEntry: false })?.mtimeMs;
      // Either way round: a clock set back after the crash must not keep the lock young for good.
      if (held !== null && since !== undefined && Math.abs(Date.now() - since) > STALE_LOCK_MS) breakLock(lock, held);
      else if (Date.now() > givenUpAt)
        throw new Error(
          `${lock} stays held: another imgpress is starting on this folder; if none is, delete that file`,
        );
      else Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 20);
    }
  }
  try {
    return work();
  } finally {
    if (readText(lock) === mine) rmSync(lock, { force: true });
  }
}

// Removes `lock` if it still holds `stale`.
function breakLock(lock: string, stale: string): void {
  const aside = `${lock}.${crypto.randomUUID()}`;
  try {
    renameSync(lock, aside);
  } catch {
    return; // another breaker was first
  }
  // A fresh lock taken between the look and the rename goes back, unless yet another was taken
  // meanwhile (the link then fails, and that claimer holds it).
  if (readText(aside) !== stale) {
    try {
      linkSync(aside, lock);
    } catch {}
  }
  rmSync(aside, { force: true });
}

// Created here or not at all; a file this process created but could not fill (a full disk) is removed again.
function writeRecord(path: string, text: string, mode = 0o644): void {
  let fd: number;
  try {
    fd = openSync(path, "wx", mode);
  } catch (err) {
    throw cannotWrite(path, err);
  }
  try {
    writeSync(fd, text);
  } catch (err) {
    unlinkSync(path);
    throw cannotWrite(path, err);
  } finally {
    closeSync(fd);
  }
}

/** Who wrote a pid record: a server, or `imgpress restore` while it replaces the database. */
export type Role = "serve" | "restore";

interface Recorded {
  pid: number;
  role: Role;
  /** This boot's id, the pid namespace and the process's start time in clock ticks since boot (Linux), when the writer could read them. */
  boot?: string;
  ns?: string;
  start?: string;
}

/** The process recorded for `databasePath`, or null: alive, gone, or undefined where this runtime may not tell (Deno without --allow-run). */
function recordedServer(databasePath: string): (Recorded & { alive: boolean | undefined }) | null {
  const record = readRecord(pidFilePath(databasePath));
  if (record === null) return null;
  // Pid numbers start again at every boot: after a power cut the one recorded may be another daemon's.
  if (record.boot !== undefined && bootId() !== undefined && record.boot !== bootId())
    return { ...record, alive: false };
  // Written in another pid namespace (a container, or the host seen from one): its number means
  // nothing here. The recorder is looked for by namespace and start time among the processes this
  // one can see (a namespace sees those of the namespaces inside it); not seen, it is gone, or runs
  // where no check from here can reach (docs/operations.md).
  if (record.ns !== undefined && pidNamespace() !== undefined && record.ns !== pidNamespace()) {
    const seen = record.start === undefined ? undefined : findProcess(record.ns, record.start);
    return seen === undefined ? { ...record, alive: false } : { ...record, pid: seen, alive: true };
  }
  // This process's own number, in its own namespace: nobody else holds it now.
  if (record.pid === pid) return null;
  try {
    process.kill(record.pid, 0);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    // EPERM: alive but someone else's process, so still a server unless its start time says otherwise; no code at all: not allowed to ask.
    if (code !== "EPERM") return { ...record, alive: code === undefined ? undefined : false };
  }
  const stat = procStat(record.pid);
  // A server killed with kill -9 whose parent has not reaped it yet still answers kill(pid, 0), but
  // serves nothing; a process started at another time than the recorded one is not the recorder
  // (Linux; elsewhere, or where /proc cannot be read, it counts as alive).
  const other = stat !== null && (stat.state === "Z" || (record.start !== undefined && stat.start !== record.start));
  return { ...record, alive: !other };
}

// The number (as this namespace sees it) of the live process of pid namespace `ns` started at `start`,
// if this process can see it. One started then whose namespace this user may not read (another
// user's process) counts too: taking a live server's record over is worse than asking to delete it.
function findProcess(ns: string, start: string): number | undefined {
  let entries: string[];
  try {
    entries = readdirSync("/proc").filter((name) => /^\d+$/.test(name));
  } catch {
    return undefined;
  }
  for (const name of entries) {
    const stat = procStat(Number(name));
    if (stat?.start !== start || stat.state === "Z") continue;
    const its = namespaceOf(name);
    if (its === ns || its === undefined) return Number(name);
  }
  return undefined;
}

// The inode of a process's pid namespace (`pid:[4026531836]` → 4026531836), or undefined where it cannot be read.
function namespaceOf(of: string): string | undefined {
  try {
    return /\[(\d+)\]/.exec(readlinkSync(`/proc/${of}/ns/pid`))?.[1];
  } catch {
    return undefined;
  }
}

let ownNamespace: string | null | undefined;
function pidNamespace(): string | undefined {
  if (ownNamespace === undefined) ownNamespace = namespaceOf("self") ?? null;
  return ownNamespace ?? undefined;
}

// The fields of /proc/PID/stat after the command name (which may hold spaces and parentheses).
function procStat(of: number | "self"): { state: string; start: string } | null {
  try {
    const stat = readFileSync(`/proc/${of}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    // Field 3 is the state, field 22 the start time.
    return fields[19] ? { state: fields[0]!, start: fields[19] } : null;
  } catch {
    return null;
  }
}

let boot: string | null | undefined;
function bootId(): string | undefined {
  if (boot === undefined) {
    try {
      boot = readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim() || null;
    } catch {
      boot = null;
    }
  }
  return boot ?? undefined;
}

// The record's second line: what tells this process from a later one given the same number.
function identityLine(role: Role): string {
  const start = procStat("self")?.start;
  const parts = [
    `role=${role}`,
    bootId() && `boot=${bootId()}`,
    pidNamespace() && `ns=${pidNamespace()}`,
    start && `start=${start}`,
  ].filter(Boolean);
  return `${parts.join(" ")}\n`;
}

/** Why `databasePath` must not be replaced or copied now (a live server uses it, or one may), or null when no server does. */
export function serverInUse(databasePath: string): string | null {
  return holderInUse(recordedServer(databasePath), databasePath);
}

function holderInUse(holder: ReturnType<typeof recordedServer>, databasePath: string): string | null {
  const record = pidFilePath(databasePath);
  if (holder?.alive && holder.role === "restore")
    return `imgpress restore (pid ${holder.pid}) is replacing ${databasePath}; wait until it has finished (if it no longer runs, delete ${record})`;
  if (holder?.alive)
    return `a server (pid ${holder.pid}) is using ${databasePath}; stop it first (if no server runs, delete ${record})`;
  if (holder !== null && holder.alive === undefined) {
    return `${record} names process ${holder.pid}, and this runtime may not ask whether it runs (Deno without --allow-run): stop that server first; if none runs, delete ${record}`;
  }
  return null;
}

function readText(record: string): string | null {
  try {
    return readFileSync(record, "utf8");
  } catch {
    return null;
  }
}

// The number on the first line; records written before the second line existed carry the number alone.
function readRecord(record: string): Recorded | null {
  const [first, second = ""] = (readText(record) ?? "").split("\n");
  const value = Number(first!.trim());
  if (!Number.isInteger(value) || value <= 0) return null;
  const fields = new Map(
    second
      .trim()
      .split(/\s+/)
      .map((field) => field.split("=", 2) as [string, string]),
  );
  return {
    pid: value,
    role: fields.get("role") === "restore" ? "restore" : "serve",
    boot: fields.get("boot") || undefined,
    ns: fields.get("ns") || undefined,
    start: fields.get("start") || undefined,
  };
}
