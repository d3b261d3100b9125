import { errnoCode } from '../../common/errors.js';
import type { FsPromises } from '../fs/fs.js';
import { fsyncDir } from '../fs/durable.js';
import type { GitCli } from './gitCli.js';
import { PackIndex } from './packIndex.js';

/** A pack of objects/pack: its path without `.idx`, and how many objects it holds. */
export interface PackWeight {
  path: string;
  objects: number;
}

export interface RollupReport {
  /** Packs in objects/pack when it started. */
  listed: number;
  /** Packs folded into one, and the objects they held. */
  packs: number;
  objects: number;
  /** Objects handed to git with their folder's name (trees written by this process). */
  named: number;
  /** The new pack's checksum. */
  pack: string;
}

/**
 * How many neighbours git tries each object against as a delta base. With the names given, the
 * versions of one folder's tree sort next to each other, so 3 finds the version before: measured on
 * 200 one-commit packs at 50,000 items, the same pack (4,072 against 4,068 KiB) for half the CPU of
 * git's default 10 (0.18 against 0.35 s).
 */
const WINDOW = 3;

/** Header and fanout of a version 2 `.idx`: enough to count its objects. */
const FANOUT_END = 8 + 256 * 4;

/**
 * The packs `git repack --geometric=2` folds together, by object count: the largest packs that
 * already grow by a factor of two stay, every smaller one goes into the new pack, and so does each
 * next larger one that is less than twice the new pack so far. (That last rule is what git 2.39.5
 * does, checked against it in test/storage/git/packRollup.test.ts.)
 */
export function geometricRollup(packs: readonly PackWeight[], factor = 2): PackWeight[] {
  const sorted = [...packs].sort((a, b) => a.objects - b.objects);
  if (sorted.length === 0) return [];
  let i = sorted.length - 1;
  for (; i > 0; i--) if ((sorted[i] as PackWeight).objects < factor * (sorted[i - 1] as PackWeight).objects) break;
  let split = i === 0 ? 0 : i + 1;
  let total = sorted.slice(0, split).reduce((sum, p) => sum + p.objects, 0);
  for (let j = split; j < sorted.length; j++) {
    const ours = sorted[j] as PackWeight;
    if (ours.objects >= factor * total) break;
    split++;
    total += ours.objects;
  }
  return sorted.slice(0, split);
}

/**
 * Folds the small packs of `gitdir` (the geometric split above) into one with C git's
 * `pack-objects`, given the exact list of their objects and the folder of every tree this process
 * wrote (`names`), instead of `git repack --geometric`. That one walks every tree of the commits in
 * the small packs to name their objects and checks each entry against the large pack's index: at
 * 50,000 items (thousand-entry folders, two rewritten per commit) 0.7 s of CPU for 200 commits,
 * against 0.18 s here, so that repacks stopped growing with the folders' size. Exactly the listed
 * objects go into the new pack, so the old packs can go once it is durable: its files are fsynced
 * by git and renamed into place, `objects/pack` is fsynced, then each old pack is removed, index
 * first (as git removes them: an index without its pack is never left, a pack without its index is
 * ignored). `git repack -d` does not fsync the directory between the renames and the removals,
 * trusting a journaling file system to keep one directory's changes in order; we do not rely on
 * that, so no crash keeps the removals and loses the new pack's names. A crash at any point leaves
 * every object in some pack. Packs written meanwhile are not touched; readers of a removed pack keep
 * their open descriptor or find the object again by listing the packs. Returns null when there is
 * nothing to fold (fewer than two packs in the split).
 */
export async function rollUpPacks(args: { fs: FsPromises; gitdir: string; git: GitCli; names: ReadonlyMap<string, string> }): Promise<RollupReport | null> {
  const { fs, gitdir, git, names } = args;
  const packDir = `${gitdir}/objects/pack`;
  const listed = await packWeights(fs, packDir);
  const chosen = geometricRollup(listed);
  if (chosen.length < 2) return null;
  const ids: string[] = [];
  for (const pack of chosen) {
    const index = new PackIndex(await fs.readFile(`${pack.path}.idx`), `${pack.path}.idx`);
    for (let i = 0; i < index.count; i++) ids.push(index.idAt(i));
  }
  let named = 0;
  const lines = ids.map((id) => {
    const name = names.get(id);
    if (name === undefined || name.includes('\n')) return id;
    named++;
    return `${id} ${name}`;
  });
  const checksum = await git.packObjects({ gitdir, packDir, input: `${lines.join('\n')}\n`, window: WINDOW });
  const made = new PackIndex(await fs.readFile(`${packDir}/pack-${checksum}.idx`), `pack-${checksum}.idx`);
  if (made.count !== new Set(ids).size) throw new Error(`git pack-objects packed ${made.count} objects of ${new Set(ids).size}: the old packs are kept`);
  // The new pack's names are made durable before any old pack goes (design rule 3), on any file system.
  await fsyncDir(fs, packDir);
  for (const pack of chosen) {
    if (pack.path === `${packDir}/pack-${checksum}`) continue;
    for (const ext of ['.idx', '.pack']) await fs.unlink(`${pack.path}${ext}`).catch((err: unknown) => (errnoCode(err) === 'ENOENT' ? undefined : Promise.reject(err)));
  }
  return { listed: listed.length, packs: chosen.length, objects: ids.length, named, pack: checksum };
}

/** Every pack of `packDir` with its index (dot-files and kept packs left out, as git leaves them), by object count. */
async function packWeights(fs: FsPromises, packDir: string): Promise<PackWeight[]> {
  const files = new Set(await fs.readdir(packDir));
  const packs: PackWeight[] = [];
  for (const file of files) {
    if (!file.endsWith('.idx') || file.startsWith('.')) continue;
    const base = file.slice(0, -'.idx'.length);
    if (!files.has(`${base}.pack`) || files.has(`${base}.keep`)) continue;
    packs.push({ path: `${packDir}/${base}`, objects: await objectCount(fs, `${packDir}/${file}`) });
  }
  return packs;
}

/** The last fanout entry: the index's object count, read without reading the index. */
async function objectCount(fs: FsPromises, idxPath: string): Promise<number> {
  const handle = await fs.open(idxPath, 'r');
  try {
    const head = Buffer.alloc(FANOUT_END);
    const { bytesRead } = await handle.read(head, 0, FANOUT_END, 0);
    if (bytesRead < FANOUT_END) throw new Error(`${idxPath}: too short for a pack index`);
    return head.readUInt32BE(FANOUT_END - 4);
  } finally {
    await handle.close();
  }
}
