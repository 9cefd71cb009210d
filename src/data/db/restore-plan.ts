// A restore replaces the database and maybe the master key with several renames. Signals wait for
// them, but a kill -9, an out-of-memory kill or a power cut does not: between two renames the folder
// held no database (the next start made a new, empty one and called itself ready) or the backup's
// key beside the old database (every start refused). So the renames are written down first, in a
// plan file beside the database, and whoever next claims the folder (a server starting, another
// restore) carries the plan out to its end. Every step can be done again without harm.

import { readdir, readFile, rename, rm } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import { pathExists, replaceFile } from "../../core/files.ts";
import { DATABASE_FILE_SUFFIXES } from "./backup.ts";

/** The renames of one restore, as its plan file holds them. */
export interface RestorePlan {
  /** The checked copy of the backup, to become the database. */
  stage: string;
  /** Appended to the old database's files (and the old key file) to keep them aside. */
  suffix: string;
  keyFile: string;
  /** Where the old key file goes, or null when there is none to keep (or the key stays). */
  asideKey: string | null;
  /** The backup's master key as the key file holds it, or null when the key stays. */
  keyText: string | null;
}

/** The plan file of the database `target`. */
export function restorePlanPath(target: string): string {
  return `${target}.restoring`;
}

/** Writes `plan` beside `target` in one step (a whole file, or none), before the first rename. */
export async function writeRestorePlan(target: string, plan: RestorePlan): Promise<void> {
  await replaceFile(restorePlanPath(target), `${JSON.stringify(plan)}\n`, 0o600);
}

/**
 * Carries out `plan`'s renames from wherever an earlier attempt stopped, then removes the plan;
 * returns the old database's new name, or null when there was none.
 */
export async function carryOutRestore(target: string, plan: RestorePlan): Promise<string | null> {
  if (plan.asideKey && !(await pathExists(plan.asideKey)) && (await pathExists(plan.keyFile)))
    await rename(plan.keyFile, plan.asideKey);
  if (plan.keyText !== null) await replaceFile(plan.keyFile, plan.keyText, 0o600);
  // The staged copy is renamed last, in one step: while it is still there, what sits under the
  // database's names is the old database (or what is left of it), which goes aside file by file.
  if (await pathExists(plan.stage)) {
    for (const ext of DATABASE_FILE_SUFFIXES)
      if (await pathExists(`${target}${ext}`)) await rename(`${target}${ext}`, `${target}${plan.suffix}${ext}`);
    await rename(plan.stage, target);
  }
  await rm(restorePlanPath(target), { force: true });
  return (await pathExists(`${target}${plan.suffix}`)) ? `${target}${plan.suffix}` : null;
}

/**
 * Puts back what `plan`'s renames moved when the restore failed with an error (not a crash) before
 * its staged copy took the database's place; removes the plan. Throws when that copy is in place.
 */
export async function undoRestore(target: string, plan: RestorePlan): Promise<void> {
  if (!(await pathExists(plan.stage))) throw new Error(`the restored database is in place already (${target})`);
  for (const ext of DATABASE_FILE_SUFFIXES)
    if (await pathExists(`${target}${plan.suffix}${ext}`))
      await rename(`${target}${plan.suffix}${ext}`, `${target}${ext}`);
  if (plan.asideKey && (await pathExists(plan.asideKey))) await rename(plan.asideKey, plan.keyFile);
  else if (plan.keyText !== null) await rm(plan.keyFile, { force: true });
  await rm(restorePlanPath(target), { force: true });
}

/** What `finishInterruptedRestore` did, for the log. */
export interface FinishedRestore {
  /** The old database's new name, or null. */
  aside: string | null;
  /** The old key file's new name, or null. */
  asideKey: string | null;
}

/**
 * Finishes a restore a crash interrupted (its plan file is there), and removes the staged copies
 * restores killed before their plan left behind; null when no restore was interrupted. Run only by
 * a process that holds the folder's pid record, so no restore is under way meanwhile.
 */
export async function finishInterruptedRestore(target: string): Promise<FinishedRestore | null> {
  let finished: FinishedRestore | null = null;
  const planFile = restorePlanPath(target);
  const text = await readFile(planFile, "utf8").catch((err: NodeJS.ErrnoException) => {
    if (err.code === "ENOENT") return null;
    throw err;
  });
  if (text !== null) {
    let plan: RestorePlan;
    try {
      plan = JSON.parse(text) as RestorePlan;
    } catch {
      throw new Error(
        `${planFile} (what an interrupted imgpress restore still had to do) cannot be read: run imgpress restore again with the backup, or remove the file and check the folder by hand`,
      );
    }
    finished = { aside: await carryOutRestore(target, plan), asideKey: plan.asideKey };
  }
  // Written before the plan and checked after it: an unplanned copy belongs to a restore that died while staging.
  const stagePrefix = `${basename(target)}.restore-`;
  const folder = dirname(target);
  for (const name of await readdir(folder)) {
    if (name.startsWith(stagePrefix) && /^[0-9a-f-]{36}(-wal|-shm|-journal)?$/.test(name.slice(stagePrefix.length)))
      await rm(join(folder, name), { force: true });
  }
  return finished;
}

/** Why a command other than `serve` or `restore` refuses a folder whose restore was interrupted. */
export function interruptedRestore(target: string): string {
  return `a restore into ${target} was interrupted (${restorePlanPath(target)} says what it still had to do): start the server, or run imgpress restore again, and it is finished first`;
}

/** Whether a restore of `target` was interrupted and must be finished before anything opens it. */
export function restoreInterrupted(target: string): Promise<boolean> {
  return pathExists(restorePlanPath(target));
}
