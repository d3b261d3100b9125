import { expect } from 'chai';
import { promises as nodeFs } from 'node:fs';
import { join } from 'node:path';
import type { LogFields, Logger } from '../../../src/common/log.js';
import { silentMetrics } from '../../../src/common/metrics.js';
import type { FsPromises } from '../../../src/storage/fs/fs.js';
import { GitCli } from '../../../src/storage/git/gitCli.js';
import { ObjectStager } from '../../../src/storage/git/objectStager.js';
import { ObjectReader } from '../../../src/storage/repo/objectReader.js';
import { RepackSchedule } from '../../../src/storage/repo/repackSchedule.js';
import { git as cgit, fsckStrict, hostGit } from '../../support/git.js';
import { tmpDir } from '../../support/tmp.js';

/**
 * Which automatic repack runs (issue 17): a roll-up of the small packs (packRollup.ts) when every one
 * of them was written by this process, git's geometric repack when loose objects wait (a roll-up does
 * not pack them) or when the repository opened with small packs whose trees it cannot name.
 */

const FS = nodeFs as unknown as FsPromises;

describe('storage/repackSchedule: roll-up or git repack', () => {
  let dir: string;
  let gitdir: string;
  let cleanup: () => Promise<void>;
  let logs: Array<{ msg: string; fields?: LogFields }>;
  const logger: Logger = {
    error: (msg, fields) => logs.push({ msg, fields }),
    warn: (msg, fields) => logs.push({ msg, fields }),
    info: (msg, fields) => logs.push({ msg, fields }),
    debug: () => undefined,
  };
  beforeEach(async () => {
    ({ dir, cleanup } = await tmpDir('repacks'));
    gitdir = join(dir, 'repo.git');
    await cgit(['init', '--bare', '-q', gitdir]);
    logs = [];
  });
  afterEach(() => cleanup());

  /** Writes `n` packs of three blobs each and tells `schedule` (the last one makes a repack due). */
  async function writePacks(schedule: RepackSchedule, n: number): Promise<void> {
    for (let p = 0; p < n; p++) {
      const stager = new ObjectStager();
      for (let i = 0; i < 3; i++) stager.writeBlob(Buffer.from(`pack ${p} blob ${i} ${dir}\n`));
      schedule.wrote(await stager.flush(FS, gitdir));
    }
    await schedule.settled();
  }

  const open = async (): Promise<RepackSchedule> => {
    const schedule = new RepackSchedule({ orgId: 'o', fs: FS, gitdir, git: hostGit, reader: new ObjectReader(FS, gitdir), logger, metrics: silentMetrics, autoRepackObjects: 30 });
    await schedule.start();
    return schedule;
  };
  const repacks = (): Array<LogFields | undefined> => logs.filter((l) => l.msg === 'repacked').map((l) => l.fields);

  it('rolls up the packs it wrote; a loose object (a file item) makes the next one git’s, which packs it', async () => {
    const schedule = await open();
    await writePacks(schedule, 10); // 30 objects: due
    expect(repacks()).to.have.length(1);
    expect(repacks()[0]).to.have.property('rollup');
    await nodeFs.writeFile(join(dir, 'file.bin'), 'a file item\n');
    await cgit(['--git-dir', gitdir, 'hash-object', '-w', join(dir, 'file.bin')]);
    schedule.storedLoose();
    await writePacks(schedule, 10);
    expect(repacks()).to.have.length(2);
    expect(repacks()[1]).not.to.have.property('rollup');
    expect((await hostGit.countObjects(gitdir)).loose).to.equal(0);
    await writePacks(schedule, 10);
    expect(repacks()[2]).to.have.property('rollup');
    expect(logs.filter((l) => l.msg !== 'repacked')).to.deep.equal([]);
    await fsckStrict(gitdir);
  });

  it('opened with several packs (their trees unnamed): git’s repack first, roll-ups after it', async () => {
    await writePacks(await open(), 2); // not due: packs from an earlier run
    const schedule = await open();
    await writePacks(schedule, 10);
    await writePacks(schedule, 10);
    expect(repacks().map((r) => r !== undefined && 'rollup' in r)).to.deep.equal([false, true]);
  });

  it('opened with a loose object left by an earlier run: counted without spawning git, then packed by git’s repack', async () => {
    await writePacks(await open(), 1);
    await nodeFs.writeFile(join(dir, 'file.bin'), 'a file item stored before a restart\n');
    await cgit(['--git-dir', gitdir, 'hash-object', '-w', join(dir, 'file.bin')]);
    const spawned: string[] = [];
    class CountingGit extends GitCli {
      override run(argv: string[], options?: { env?: NodeJS.ProcessEnv; timeoutMs?: number }): Promise<{ code: number; output: string }> {
        spawned.push(argv.join(' '));
        return super.run(argv, options);
      }
    }
    const schedule = new RepackSchedule({ orgId: 'o', fs: FS, gitdir, git: new CountingGit(process.env), reader: new ObjectReader(FS, gitdir), logger, metrics: silentMetrics, autoRepackObjects: 30 });
    await schedule.start();
    expect(spawned, 'an opening spawns no git').to.deep.equal([]);
    await writePacks(schedule, 10);
    expect(repacks().map((r) => r !== undefined && 'rollup' in r)).to.deep.equal([false]);
    expect((await hostGit.countObjects(gitdir)).loose, 'the loose object is packed').to.equal(0);
    await fsckStrict(gitdir);
  });
});
