import { errnoCode } from '../../common/errors.js';
import { CorruptStore } from '../errors.js';
import type { FsPromises } from '../fs/fs.js';

/** What C git needs to call a folder a repository (setup.c, `is_git_directory`): two folders and a file. */
const REQUIRED: ReadonlyArray<{ name: string; folder: boolean }> = [
  { name: 'objects', folder: true },
  { name: 'refs', folder: true },
  { name: 'HEAD', folder: false },
];

/**
 * That `gitdir` is a repository as C git tells one; `CorruptStore` naming what is missing otherwise. An
 * organization's folder that lost its objects is refused at its opening, never taken for an empty one that a
 * write would then fill anew. (The `git count-objects` each opening spawned used to refuse it, by the way.)
 */
export async function checkGitDirectory(fs: FsPromises, gitdir: string): Promise<void> {
  const missing: string[] = [];
  for (const { name, folder } of REQUIRED) {
    try {
      if ((await fs.stat(`${gitdir}/${name}`)).isDirectory() !== folder) missing.push(name);
    } catch (err) {
      const code = errnoCode(err);
      if (code !== 'ENOENT' && code !== 'ENOTDIR') throw err;
      missing.push(name);
    }
  }
  if (missing.length > 0) throw new CorruptStore({ where: gitdir, reason: `not a git repository (no ${missing.join(', ')})` });
}
