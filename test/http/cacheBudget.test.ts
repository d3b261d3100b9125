import { expect } from 'chai';
import { loadConfig } from '../../src/app/config.js';
import { shareCacheBytes } from '../../src/common/cacheBudget.js';
import { random } from '../support/random.js';
import { api, startTestServer, type TestServer } from '../support/server.js';
import { ITEMS } from './helpers.js';

/**
 * KNOWLEDGE_CACHE_MB over real HTTP: a server whose organizations write and read far more than its caches may hold
 * answers every read with its own organization's content, and GET /metrics shows each cache within its share.
 */

const MIB = 1024 * 1024;
const ORGS = ['c0', 'c1', 'c2'];

const cacheBytes = (text: string, cache: string): number => Number(new RegExp(`^knowledge_cache_bytes\\{cache="${cache}"\\} (\\S+)$`, 'm').exec(text)?.[1] ?? NaN);

describe('HTTP: one cache budget for all organizations (KNOWLEDGE_CACHE_MB)', function () {
  this.timeout(120_000);

  let server: TestServer | undefined;
  after(() => server?.close());

  it('KNOWLEDGE_CACHE_MB and --cache-mb: 104 by default, at least 8, anything else refused', () => {
    expect(loadConfig({}).cacheBytes).to.equal(104 * MIB);
    expect(loadConfig({ KNOWLEDGE_CACHE_MB: '512' }).cacheBytes).to.equal(512 * MIB);
    expect(loadConfig({ KNOWLEDGE_CACHE_MB: '512' }, { cacheMb: '16' }).cacheBytes).to.equal(16 * MIB);
    for (const bad of ['0', '7', '-1', 'lots', '1.5']) {
      expect(() => loadConfig({ KNOWLEDGE_CACHE_MB: bad })).to.throw(`KNOWLEDGE_CACHE_MB must be an integer from 8 to 1048576 (got "${bad}")`);
    }
    // Shared out whole: nothing over the total, nothing lost but rounding.
    for (const total of [8 * MIB, 104 * MIB, 8 * MIB + 25]) {
      const shares = shareCacheBytes(total);
      const sum = shares.answers + shares.contents + shares.windows + shares.bases;
      expect(sum).to.be.within(total - 25, total);
      expect(shares.contents).to.equal(2 * shares.answers);
      expect(shares.windows).to.equal(shares.bases).and.to.equal(shares.answers / 8);
    }
    // The default keeps what one organization kept when each had caches of its own.
    expect(shareCacheBytes(104 * MIB)).to.deep.equal({ answers: 32 * MIB, contents: 64 * MIB, windows: 4 * MIB, bases: 4 * MIB });
  });

  it('answers every read right while the caches of three organizations stay within 8 MiB, each within its share', async () => {
    server = await startTestServer({ config: { cacheBytes: 8 * MIB } });
    const shares = shareCacheBytes(8 * MIB);
    const keys = new Map<string, string>();
    for (const orgId of ORGS) keys.set(orgId, await server.org(orgId));
    const next = random(20261124);
    const written = new Map<string, string>();
    // Per organization 6 items of ~400 KB (written: their text is kept as contents) and 30 small ones: ~7 MB of
    // text, ~14 MiB as strings, against 4 MiB for contents; each read also makes an answer (2 MiB for those).
    for (const orgId of ORGS) {
      for (let i = 0; i < 36; i++) {
        const large = i < 6;
        const line = `${orgId} ${large ? 'report' : 'note'} ${i}: ${next().toString(36)}\n`;
        const content = `# ${orgId} ${i}\n\n${line.repeat(large ? 400_000 / line.length : 20)}`;
        const path = `${large ? 'reports' : 'notes'}/i${i}.md`;
        const res = await api(`${server.url}${ITEMS}/${path}`, { method: 'PUT', key: keys.get(orgId), body: { content } });
        expect(res.status, `PUT ${orgId} ${path}: ${res.body?.error}`).to.equal(200);
        written.set(`${orgId}:${path}`, content);
      }
    }
    const metrics = async (): Promise<string> => (await fetch(`${server?.url}/metrics`)).text();
    const within = (text: string): void => {
      expect(cacheBytes(text, 'answers'), 'answers').to.be.within(0, shares.answers);
      expect(cacheBytes(text, 'contents'), 'contents').to.be.within(1, shares.contents);
      expect(cacheBytes(text, 'windows'), 'windows').to.be.within(0, shares.windows);
      expect(cacheBytes(text, 'bases'), 'bases').to.be.within(0, shares.bases);
    };
    within(await metrics());
    // Read back in a shuffled order, twice, with the organizations' reads interleaved.
    const all = [...written.keys()];
    for (let round = 0; round < 2; round++) {
      for (const key of all.sort(() => next() - 0.5)) {
        const [orgId, path] = key.split(':') as [string, string];
        const res = await api(`${server.url}${ITEMS}/${path}`, { key: keys.get(orgId) });
        expect(res.status, key).to.equal(200);
        // Compared as a boolean, not printed: a failure would print ~400 KB twice.
        const item = res.body?.data?.item as { content?: string } | undefined;
        expect(item?.content === written.get(key), `${key}: the content read is not the one written`).to.equal(true);
      }
    }
    const after = await metrics();
    within(after);
    expect(cacheBytes(after, 'answers'), 'answers kept once read').to.be.greaterThan(0);
  });
});
