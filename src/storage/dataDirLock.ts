import { errnoCode } from '../errors.js';
import { writeAndSync } from './durable.js';
import { DataDirInUse } from './errors.js';
import type { FsPromises } from './fs.js';

/**
 * One server per data directory (contract §1): `<dataDir>/server.lock` holds
 * the owner's pid. A lock whose pid is gone was left by a crash and is taken
 * over, so a restart after SIGKILL needs no manual repair.
 */
export async function lockDataDir(fs: FsPromises, dataDir: string): Promise<{ release(): Promise<void> }> {
  const path = `${dataDir}/server.lock`;
  await fs.mkdir(dataDir, { recursive: true });
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      await writeAndSync(fs, path, `${process.pid}\n`, 'wx');
      return {
        release: async () => {
          const owner = await fs.readFile(path, 'utf8').catch(() => '');
          if (owner.trim() === String(process.pid)) await fs.unlink(path).catch(() => undefined);
        },
      };
    } catch (err) {
      if (errnoCode(err) !== 'EEXIST') throw err;
    }
    const pid = Number((await fs.readFile(path, 'utf8').catch(() => '')).trim());
    if (Number.isSafeInteger(pid) && pid > 0 && pid !== process.pid && isAlive(pid)) throw new DataDirInUse({ dataDir, pid });
    await fs.unlink(path).catch(() => undefined);
  }
  throw new DataDirInUse({ dataDir, pid: 0 });
}

/** The pid of the live server using `dataDir`, or null when none is. */
export async function serverPid(fs: FsPromises, dataDir: string): Promise<number | null> {
  const pid = Number((await fs.readFile(`${dataDir}/server.lock`, 'utf8').catch(() => '')).trim());
  return Number.isSafeInteger(pid) && pid > 0 && isAlive(pid) ? pid : null;
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return errnoCode(err) === 'EPERM';
  }
}
