import { expect } from 'chai';
import { commitCount, fsckStrict, git } from './support/git.js';
import { api, startTestServer, type ApiResponse, type TestServer } from './support/server.js';

/**
 * Concurrent writes over HTTP: the per-organization
 * queue and the compare-and-swap of main must neither lose nor merge commits.
 */

const N = 40;
const SHARED = 'race/shared.md';
const distinctPath = (i: number): string => `race/distinct/item-${String(i).padStart(2, '0')}.md`;
const distinctContent = (i: number): string => `distinct item ${i}\n`;
const sharedContent = (i: number): string => `shared version ${i}\n`;

interface Item {
  id: string;
  path: string;
  content: string;
}

describe('concurrent writes (real server, real git)', function () {
  this.timeout(30_000);

  let server: TestServer;
  let writer: string;
  let gitdir: string;

  before(async () => {
    server = await startTestServer();
    writer = await server.key('writer', 'default', 'racer');
    gitdir = server.gitdir();
    // One request first, so the server has read the new key before the races below (the key store's own race is tested last).
    expect((await api(`${server.url}/api/v1/knowledge`, { key: writer })).status).to.equal(200);
  });

  after(async () => {
    await server?.close();
  });

  const url = (path: string): string => `${server.url}/api/v1/knowledge/items/${path}`;
  const put = (path: string, content: string, headers?: Record<string, string>): Promise<ApiResponse> =>
    api(url(path), { method: 'PUT', key: writer, body: { content }, headers });

  describe(`${N} PUTs to distinct paths and ${N} PUTs to one path, all at once`, () => {
    let startCount: number;
    let distinct: ApiResponse[];
    let shared: ApiResponse[];

    before(async () => {
      startCount = await commitCount(gitdir);
      const distinctCalls = Array.from({ length: N }, (_, i) => put(distinctPath(i), distinctContent(i)));
      const sharedCalls = Array.from({ length: N }, (_, i) => put(SHARED, sharedContent(i)));
      const all = await Promise.all([...distinctCalls, ...sharedCalls]);
      distinct = all.slice(0, N);
      shared = all.slice(N);
    });

    it('answers 200 to every one of them', () => {
      const statuses = [...distinct, ...shared].map((r) => r.status);
      expect(statuses.filter((s) => s !== 200), JSON.stringify(statuses)).to.deep.equal([]);
    });

    it('stores every distinct path with its own content and its own id', async () => {
      const ids = new Set<string>();
      for (let i = 0; i < N; i++) {
        const res = await api(url(distinctPath(i)), { key: writer });
        expect(res.status, distinctPath(i)).to.equal(200);
        const item = res.body?.data?.item as unknown as Item;
        expect(item.content).to.equal(distinctContent(i));
        expect(item.id).to.equal((distinct[i]?.body?.data?.item as unknown as Item).id);
        ids.add(item.id);
        expect(await git(['show', `main:${distinctPath(i)}`], { gitdir })).to.equal(distinctContent(i));
      }
      expect(ids.size).to.equal(N);
    });

    it('leaves the shared path holding one of the contents sent, the same in the API and in git, under one id', async () => {
      const res = await api(url(SHARED), { key: writer });
      expect(res.status).to.equal(200);
      const item = res.body?.data?.item as unknown as Item;
      const sent = Array.from({ length: N }, (_, i) => sharedContent(i));
      expect(sent).to.include(item.content);
      expect(await git(['show', `main:${SHARED}`], { gitdir })).to.equal(item.content);
      const ids = new Set(shared.map((r) => (r.body?.data?.item as unknown as Item).id));
      expect([...ids]).to.deep.equal([item.id]);
      // Each PUT was answered with what it wrote.
      shared.forEach((r, i) => expect((r.body?.data?.item as unknown as Item).content).to.equal(sharedContent(i)));
    });

    it(`grows main by exactly ${2 * N} commits: one per create and one per update`, async () => {
      expect(await commitCount(gitdir)).to.equal(startCount + 2 * N);
    });

    it(`records ${N} commits for the shared path (1 create, ${N - 1} updates), each with a distinct content`, async () => {
      const log = (await git(['log', '--format=%H %(trailers:key=Item-Action,valueonly,separator=)', '--', SHARED], { gitdir }))
        .trim()
        .split('\n');
      expect(log).to.have.length(N);
      const actions = log.map((l) => l.split(' ')[1]);
      expect(actions.filter((a) => a === 'create')).to.have.length(1);
      expect(actions.filter((a) => a === 'update')).to.have.length(N - 1);
      expect(actions[actions.length - 1]).to.equal('create');
      const contents = await Promise.all(log.map((l) => git(['show', `${l.split(' ')[0]}:${SHARED}`], { gitdir })));
      expect(new Set(contents).size).to.equal(N);
      expect([...contents].sort()).to.deep.equal(Array.from({ length: N }, (_, i) => sharedContent(i)).sort());
      // The newest commit for the path is the content being served.
      expect(contents[0]).to.equal(await git(['show', `main:${SHARED}`], { gitdir }));
    });

    it('keeps each distinct path to exactly one commit, and passes git fsck --strict', async () => {
      for (const i of [0, 17, N - 1]) {
        const log = (await git(['log', '--format=%H', '--', distinctPath(i)], { gitdir })).trim().split('\n');
        expect(log, distinctPath(i)).to.have.length(1);
      }
      await fsckStrict(gitdir);
    });
  });

  it('two concurrent PUTs with If-None-Match: * to the same new path: exactly one 200 and one 412', async () => {
    for (let round = 0; round < 5; round++) {
      const path = `race/exclusive-${round}.md`;
      const count = await commitCount(gitdir);
      const [a, b] = await Promise.all([
        put(path, `first ${round}\n`, { 'If-None-Match': '*' }),
        put(path, `second ${round}\n`, { 'If-None-Match': '*' }),
      ]);
      const statuses = [a?.status, b?.status].sort();
      expect(statuses, `round ${round}`).to.deep.equal([200, 412]);
      const loser = a?.status === 412 ? a : b;
      const winner = a?.status === 200 ? a : b;
      expect(loser?.body?.success).to.equal(false);
      const stored = await api(url(path), { key: writer });
      expect((stored.body?.data?.item as unknown as Item).content).to.equal((winner?.body?.data?.item as unknown as Item).content);
      expect(await commitCount(gitdir)).to.equal(count + 1);
    }
    await fsckStrict(gitdir);
  });

  it('accepts a key created by another process (1.2 s earlier) on concurrent first requests', async () => {
    // The key is written by a separate KeyStore over the same data dir, as `knowledge-store key create` does.
    const fresh = await server.key('writer', 'default', 'latecomer');
    await new Promise((resolve) => setTimeout(resolve, 1200));
    const results = await Promise.all(Array.from({ length: 10 }, () => api(`${server.url}/api/v1/knowledge?limit=1`, { key: fresh })));
    expect(results.map((r) => r.status)).to.deep.equal(Array.from({ length: 10 }, () => 200));
  });
});
