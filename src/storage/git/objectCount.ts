import { errnoCode } from '../../common/errors.js';
import type { FsPromises } from '../fs/fs.js';

/** A loose object's file name in its `objects/xx/` folder: the rest of its id. */
const LOOSE_NAME = /^[0-9a-f]{38}$/;
const FANOUT_DIR = /^[0-9a-f]{2}$/;

/** The names in a folder, none when it does not exist. */
async function namesIn(fs: FsPromises, dir: string): Promise<string[]> {
  try {
    return await fs.readdir(dir);
  } catch (err) {
    if (errnoCode(err) === 'ENOENT') return [];
    throw err;
  }
}

/** A pack's index in objects/pack (C git ignores dot-files there: `.tmp-*` packs it is writing or left behind). */
const isPackIndex = (name: string): boolean => name.endsWith('.idx') && !name.startsWith('.');

/** The `.idx` files of objects/pack. */
export async function packIndexPaths(fs: FsPromises, gitdir: string): Promise<string[]> {
  const packDir = `${gitdir}/objects/pack`;
  return (await namesIn(fs, packDir)).filter(isPackIndex).map((n) => `${packDir}/${n}`);
}

/** Packs with both files, as git counts them: an index and its `.pack`. */
function completePacks(names: string[]): number {
  const present = new Set(names);
  return names.filter((n) => isPackIndex(n) && present.has(`${n.slice(0, -'.idx'.length)}.pack`)).length;
}

/**
 * The loose objects and the packs of a repository, counted as `git count-objects` counts them (`count` and
 * `packs`), in-process: only the fan-out folders that exist are read, usually none, as every group commit
 * writes a pack. Spawning git for this at each opening cost the server ~6 ms of its event loop per
 * organization (forking a process of a few hundred MiB), most of the time a readiness probe took to open
 * 200 of them.
 */
export async function countLooseAndPacked(fs: FsPromises, gitdir: string): Promise<{ loose: number; packs: number }> {
  const objects = `${gitdir}/objects`;
  const fanout = (await namesIn(fs, objects)).filter((n) => FANOUT_DIR.test(n));
  const [packs, ...looseCounts] = await Promise.all([
    namesIn(fs, `${objects}/pack`).then(completePacks),
    ...fanout.map(async (dir) => (await namesIn(fs, `${objects}/${dir}`)).filter((n) => LOOSE_NAME.test(n)).length),
  ]);
  return { loose: looseCounts.reduce((a, b) => a + b, 0), packs: packs ?? 0 };
}
