import { expect } from 'chai';
import { silentLogger } from '../../../src/common/log.js';
import { getItem } from '../../../src/domain/itemReads.js';
import { putItem } from '../../../src/domain/items.js';
import type { Actor } from '../../../src/domain/keys.js';
import type { OrgRepo } from '../../../src/storage/repo/orgRepo.js';
import { RepoCaches } from '../../../src/storage/repo/repoCaches.js';
import { OrgStore } from '../../../src/storage/repo/orgStore.js';
import { hostGit } from '../../support/git.js';
import { random } from '../../support/random.js';
import { fs } from '../../support/server.js';
import { tmpDir } from '../../support/tmp.js';

/**
 * The caches an OrgStore's repositories share (KNOWLEDGE_CACHE_MB): what they keep together stays within the
 * bound however many organizations read and write, every read still answers its own organization's text,
 * and the same text in two organizations is kept for each apart.
 */

const ORGS = ['acme', 'beta', 'gamma'];
const BOUND = 256 * 1024;
const actorOf = (orgId: string): Actor => ({ keyId: `key_${orgId}`, keyName: 'admin', orgId, role: 'admin' });

describe('storage: caches shared by an organization store\'s repositories', function () {
  this.timeout(60_000);

  let cleanup: () => Promise<void>;
  let store: OrgStore;

  const repo = async (orgId: string): Promise<OrgRepo> => {
    const found = await store.get(orgId);
    if (!found) throw new Error(`no organization ${orgId}`);
    return found;
  };
  const put = async (orgId: string, path: string, content: string): Promise<void> => {
    await putItem({ repo: await repo(orgId), actor: actorOf(orgId), path, content, maxContentBytes: 1 << 20 });
  };
  const read = async (orgId: string, path: string): Promise<string | undefined> => (await getItem({ repo: await repo(orgId), actor: actorOf(orgId), path })).content;

  beforeEach(async () => {
    let dir: string;
    ({ dir, cleanup } = await tmpDir('ks-caches'));
    const maker = new OrgStore({ fs, dataDir: dir, logger: silentLogger, git: hostGit });
    for (const orgId of ORGS) await maker.create(orgId, new Date('2026-01-01T00:00:00Z'));
    store = new OrgStore({ fs, dataDir: dir, logger: silentLogger, git: hostGit, caches: RepoCaches.shared({ contents: BOUND, windows: BOUND / 4, bases: BOUND / 4 }) });
  });
  afterEach(async () => {
    await store.closeAll();
    await cleanup();
  });

  it('keeps what three organizations write and read within one bound, and answers each its own text', async () => {
    const next = random(20261124);
    const written = new Map<string, string>();
    // 3 × 12 items of ~20 KB: about 1.4 MiB of text as strings, over five times the bound.
    for (const orgId of ORGS) {
      for (let i = 0; i < 12; i++) {
        const content = `# ${orgId} ${i}\n\n${`${orgId} note ${i}, line ${next().toString(36)}\n`.repeat(500)}`;
        await put(orgId, `notes/n${i}.md`, content);
        written.set(`${orgId}:notes/n${i}.md`, content);
      }
    }
    expect(store.cacheBytes().contents).to.be.within(1, BOUND);
    // Read back in a shuffled order, twice: from the cache when kept, from the repository when not.
    const keys = [...written.keys()];
    for (let round = 0; round < 2; round++) {
      for (const key of keys.sort(() => next() - 0.5)) {
        const [orgId, path] = key.split(':') as [string, string];
        expect(await read(orgId, path), key).to.equal(written.get(key));
      }
    }
    expect(store.cacheBytes().contents).to.be.within(1, BOUND);
  });

  it('keeps the same text of two organizations apart: one\'s reads never come from the other\'s entry', async () => {
    const text = `# The handbook\n\n${'Deploys go through staging first. '.repeat(300)}`;
    await put('acme', 'handbook.md', text);
    const once = store.cacheBytes().contents;
    expect(once).to.be.greaterThan(text.length);
    // Written by beta too: kept a second time, under beta's name.
    await put('beta', 'copy/handbook.md', text);
    expect(store.cacheBytes().contents).to.equal(2 * once);
    expect(await read('beta', 'copy/handbook.md')).to.equal(text);
    expect(await read('acme', 'handbook.md')).to.equal(text);
    expect(store.cacheBytes().contents).to.equal(2 * once);
  });
});
