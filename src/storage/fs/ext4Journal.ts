import { readFile, readlink, stat } from 'node:fs/promises';
import { basename } from 'node:path';

export interface Ext4JournalDeps {
  /** sysfs's mount point (a stand-in tree in tests). */
  sysRoot?: string;
  /** The directory's device number, as `stat` gives it (`major:minor` is read from it). */
  deviceOf?: (dir: string) => Promise<bigint>;
}

/** The look at a directory's disk that a start makes (a stand-in in tests). */
export type JournalCheck = (dir: string) => Promise<{ device: string } | undefined>;

/**
 * Whether a directory lies on ext4 mounted without a journal, and on which block device.
 *
 * Why it matters here: every group commit creates files (its pack, the pack's index, the ref's lock) and the
 * compaction deletes packs. Without a journal, ext4 will not reuse an inode freed in the last 5 s, or 300 s while
 * the block holding it is not yet written back (`recently_deleted` in fs/ext4/ialloc.c, only checked when there is
 * no journal), and it skips them one by one on every file it creates. On the test VM that doubled a sequential
 * PUT's CPU (README, "The file system under the data directory"): worth a line in the log at start.
 *
 * How it is told, on Linux only: the directory's device number names the block device in /sys/dev/block, and an
 * ext4 mount of it has /sys/fs/ext4/<device>/journal_task, which reads `<none>` without a journal (the journal
 * thread's pid with one). Anything missing (another file system, another OS, a sysfs not mounted) means "not
 * known to lack one": no warning.
 */
export async function ext4WithoutJournal(dir: string, deps: Ext4JournalDeps = {}): Promise<{ device: string } | undefined> {
  const sysRoot = deps.sysRoot ?? '/sys';
  const deviceOf = deps.deviceOf ?? (async (d: string) => (await stat(d, { bigint: true })).dev);
  try {
    const dev = await deviceOf(dir);
    const link = await readlink(`${sysRoot}/dev/block/${deviceMajor(dev)}:${deviceMinor(dev)}`);
    const device = basename(link);
    const task = await readFile(`${sysRoot}/fs/ext4/${device}/journal_task`, 'utf8');
    return task.trim() === '<none>' ? { device } : undefined;
  } catch {
    return undefined;
  }
}

// glibc's encoding of dev_t (gnu_dev_major/minor, each half taken as 32 bits): 12 bits of major and 20 of minor,
// split across the halves.
export function deviceMajor(dev: bigint): bigint {
  return ((dev >> 8n) & 0xfffn) | ((dev >> 32n) & 0xfffff000n);
}

export function deviceMinor(dev: bigint): bigint {
  return (dev & 0xffn) | ((dev >> 12n) & 0xffffff00n);
}
