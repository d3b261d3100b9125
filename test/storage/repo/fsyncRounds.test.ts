import { promises as nodeFs } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { silentLogger } from '../../../src/common/log.js';
import type { FsPromises } from '../../../src/storage/fs/fs.js';
import { OrgRepo } from '../../../src/storage/repo/orgRepo.js';
import { OrgStore } from '../../../src/storage/repo/orgStore.js';
import { GatedFs } from '../../support/gatedFs.js';
import { fsckStrict, hostGit } from '../../support/git.js';
import { putIntent } from '../../support/intents.js';
import { tmpDir } from '../../support/tmp.js';

/**
 * How often a group commit waits for the disk (issue 17: the 1-writer figure is fsync-bound).
 * Every fsync is held until the test lets it go; once nothing but held fsyncs is in flight, the
 * held ones are one round. A commit must wait three times, in this order: the pack, its index and
 * the ref's next value (staged beside the ref, see stageRefUpdate) side by side; then
 * `objects/pack` (the pack's name durable); then
 * `refs/heads` (the ref's). The ref is renamed into place only after the second round, so no
 * crash can leave it naming a pack that is not on disk.
 */

describe('write pipeline: fsync rounds of a group commit (real disk)', () => {
  let tmp: { dir: string; cleanup: () => Promise<void> };
  let repo: OrgRepo | undefined;
  afterEach(async () => {
    await repo?.close();
    await tmp?.cleanup();
  });

  it('waits for the disk three times: pack, index and the ref staged together; objects/pack; refs/heads', async function () {
    this.timeout(60_000);
    tmp = await tmpDir('fsync-rounds');
    const dataDir = join(tmp.dir, 'data');
    const gitdir = join(dataDir, 'orgs', 'acme.git');
    await new OrgStore({ git: hostGit, fs: nodeFs as unknown as FsPromises, dataDir, logger: silentLogger }).create('acme', new Date('2024-03-01T09:00:00Z'));
    const gated = new GatedFs(gitdir);
    repo = await OrgRepo.open({ orgId: 'acme', fs: gated.fs, gitdir, logger: silentLogger });
    const opened = repo;
    await opened.write((v) => putIntent(v, 'docs/a.md', 'first\n'));

    gated.events.splice(0);
    gated.hold = true;
    let done = false;
    const writing = opened.write((v) => putIntent(v, 'docs/a.md', 'second\n')).finally(() => (done = true));
    const rounds: string[][] = [];
    for (;;) {
      await gated.quiet();
      if (done) break;
      const batch = gated.held.splice(0);
      expect(batch, `stuck after rounds ${JSON.stringify(rounds)}`).to.not.have.length(0);
      rounds.push(batch.map((b) => b.path).sort());
      for (const b of batch) b.release();
    }
    gated.hold = false;
    for (const b of gated.held.splice(0)) b.release();
    const result = await writing;

    expect(rounds).to.deep.equal([['objects/pack/tmp_idx', 'objects/pack/tmp_pack', 'refs/heads/main.next'], ['objects/pack'], ['refs/heads']]);
    // The ref moves after the pack's name is durable, and before its own directory is fsynced.
    const events = gated.events.filter((e) => !e.includes('knowledge-'));
    expect(events.indexOf('rename refs/heads/main')).to.be.above(events.indexOf('synced objects/pack'));
    expect(events.indexOf('rename refs/heads/main')).to.be.below(events.indexOf('synced refs/heads'));
    expect((await nodeFs.readFile(join(gitdir, 'refs/heads/main'), 'utf8')).trim()).to.equal(result.commitId);
    await fsckStrict(gitdir);
  });
});
