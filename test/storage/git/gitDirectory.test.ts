import { expect } from 'chai';
import { promises as nodeFs } from 'node:fs';
import { join } from 'node:path';
import { silentLogger } from '../../../src/common/log.js';
import type { FsPromises } from '../../../src/storage/fs/fs.js';
import { checkGitDirectory } from '../../../src/storage/git/gitDirectory.js';
import { OrgRepo } from '../../../src/storage/repo/orgRepo.js';
import { git as cgit } from '../../support/git.js';
import { tmpDir } from '../../support/tmp.js';

/** A folder is a repository when C git says it is; an organization's folder that is not one is refused at its opening. */

const FS = nodeFs as unknown as FsPromises;

describe('storage/gitDirectory: a repository as C git tells one', () => {
  let gitdir: string;
  let cleanup: () => Promise<void>;
  beforeEach(async () => {
    let dir: string;
    ({ dir, cleanup } = await tmpDir('gitdir'));
    gitdir = join(dir, 'repo.git');
    await cgit(['init', '--bare', '-q', gitdir]);
  });
  afterEach(() => cleanup());

  const gitAccepts = (): Promise<boolean> => cgit(['--git-dir', gitdir, 'rev-parse', '--git-dir']).then(() => true, () => false);
  const ours = (): Promise<string> => checkGitDirectory(FS, gitdir).then(() => 'ok', (err: unknown) => `${(err as { code?: string }).code}: ${(err as Error).message}`);

  it('accepts what git accepts', async () => {
    expect(await gitAccepts()).to.equal(true);
    expect(await ours()).to.equal('ok');
  });

  for (const [what, breakIt, missing] of [
    ['objects/ gone', (d: string) => nodeFs.rm(join(d, 'objects'), { recursive: true }), 'objects'],
    ['refs/ gone', (d: string) => nodeFs.rm(join(d, 'refs'), { recursive: true }), 'refs'],
    ['HEAD a folder', async (d: string) => (await nodeFs.rm(join(d, 'HEAD')), nodeFs.mkdir(join(d, 'HEAD'))), 'HEAD'],
    ['only HEAD left', async (d: string) => {
      for (const name of await nodeFs.readdir(d)) if (name !== 'HEAD') await nodeFs.rm(join(d, name), { recursive: true });
    }, 'objects, refs'],
  ] as const) {
    it(`refuses what git refuses: ${what}`, async () => {
      await breakIt(gitdir);
      expect(await gitAccepts()).to.equal(false);
      expect(await ours()).to.equal(`CORRUPT_STORE: ${gitdir}: not a git repository (no ${missing})`);
    });
  }

  it('an organization whose folder lost its objects is not opened as an empty one', async () => {
    await nodeFs.rm(join(gitdir, 'objects'), { recursive: true });
    const err = await OrgRepo.open({ orgId: 'o', fs: FS, gitdir, logger: silentLogger }).then(() => undefined, (e: unknown) => e);
    expect((err as { code?: string } | undefined)?.code, String(err)).to.equal('CORRUPT_STORE');
    expect(await nodeFs.stat(join(gitdir, 'objects')).then(() => true, () => false), 'nothing made anew').to.equal(false);
  });
});
