import { expect } from 'chai';
import { existsSync, readdirSync } from 'node:fs';
import { mkdir, readlink, stat, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { deviceMajor, deviceMinor, ext4WithoutJournal } from '../../../src/storage/fs/ext4Journal.js';
import { tmpDir } from '../../support/tmp.js';

/** Telling ext4 without a journal under the data directory, from sysfs (README, "The file system under the data directory"). */

/** glibc's makedev, for device numbers with high bits in both halves. */
const makedev = (major: bigint, minor: bigint): bigint =>
  ((major & 0xfffn) << 8n) | ((major & 0xfffff000n) << 32n) | (minor & 0xffn) | ((minor & 0xffffff00n) << 12n);

describe('storage/ext4Journal', () => {
  let sys: { dir: string; cleanup: () => Promise<void> };

  /** A stand-in sysfs: block device `major:minor` named `name`, ext4 mounted with `journal_task` reading `task`. */
  async function device(major: number, minor: number, name: string, task?: string): Promise<void> {
    await mkdir(join(sys.dir, 'dev/block'), { recursive: true });
    await symlink(`../../devices/virtual/block/${name}`, join(sys.dir, `dev/block/${major}:${minor}`));
    if (task === undefined) return;
    await mkdir(join(sys.dir, 'fs/ext4', name), { recursive: true });
    await writeFile(join(sys.dir, 'fs/ext4', name, 'journal_task'), task);
  }

  beforeEach(async () => {
    sys = await tmpDir('sysfs');
  });
  afterEach(() => sys.cleanup());

  it('splits device numbers as glibc does, high bits included', () => {
    for (const [major, minor] of [[254n, 0n], [7n, 1n], [259n, 3n], [4095n, 1048575n], [0x12345n, 0x6789an]] as const) {
      const dev = makedev(major, minor);
      expect([deviceMajor(dev), deviceMinor(dev)]).to.deep.equal([major, minor]);
    }
    expect(deviceMajor(65024n)).to.equal(254n); // what stat gives for /dev/vda (254:0)
  });

  it('names the device of an ext4 mount whose journal_task reads <none>', async () => {
    await device(254, 0, 'vda', '<none>\n');
    const found = await ext4WithoutJournal('/data', { sysRoot: sys.dir, deviceOf: async () => makedev(254n, 0n) });
    expect(found).to.deep.equal({ device: 'vda' });
  });

  it('says nothing of a journalled ext4, another file system, or a device sysfs does not know', async () => {
    await device(7, 0, 'loop0', '3497\n'); // the journal thread's pid
    await device(8, 1, 'sda1'); // not ext4: no /sys/fs/ext4/sda1
    await device(259, 3, 'nvme0n1p3', ''); // empty: not known to lack one
    for (const [major, minor] of [[7n, 0n], [8n, 1n], [259n, 3n], [9n, 9n]] as const) {
      expect(await ext4WithoutJournal('/data', { sysRoot: sys.dir, deviceOf: async () => makedev(major, minor) })).to.equal(undefined);
    }
    expect(await ext4WithoutJournal('/data', { sysRoot: join(sys.dir, 'absent'), deviceOf: async () => makedev(254n, 0n) })).to.equal(undefined);
  });

  it('says nothing of a directory that does not exist', async () => {
    expect(await ext4WithoutJournal(join(sys.dir, 'no', 'such'), { sysRoot: sys.dir })).to.equal(undefined);
  });

  it('agrees with the kernel\'s list of journals on this machine', async () => {
    // The real sysfs, against what jbd2 lists: an internal journal of device X is /proc/fs/jbd2/X-<inode>.
    const dev = (await stat(tmpdir(), { bigint: true })).dev;
    const link = `/sys/dev/block/${deviceMajor(dev)}:${deviceMinor(dev)}`;
    if (!existsSync(link)) {
      // Not Linux, or the temp dir is not on a block device (tmpfs, overlay): nothing is known, nothing said.
      expect(await ext4WithoutJournal(tmpdir())).to.equal(undefined);
      return;
    }
    const name = basename(await readlink(link));
    if (!existsSync(`/sys/fs/ext4/${name}`)) {
      expect(await ext4WithoutJournal(tmpdir())).to.equal(undefined); // not ext4
      return;
    }
    const journalled = existsSync('/proc/fs/jbd2') && readdirSync('/proc/fs/jbd2').some((entry) => entry.startsWith(`${name}-`));
    expect(await ext4WithoutJournal(tmpdir())).to.deep.equal(journalled ? undefined : { device: name });
  });
});
