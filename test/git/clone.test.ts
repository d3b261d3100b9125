import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { expect } from 'chai';
import { killAllChildren, spawnServe } from '../support/child.js';
import { commitCount, fsckStrict, git } from '../support/git.js';
import { api, startTestServer, type TestServer } from '../support/server.js';
import { tmpDir } from '../support/tmp.js';
import { del, get, itemOf, itemsOf, list, put } from '../http/helpers.js';
import { basicAuth, cloneUrl, gitOk, runGit } from './support.js';

/**
 * Clone and fetch over smart HTTP, with real C git against a
 * real server: what a clone holds, that fetch brings new commits (protocol v2
 * and v0), who is refused and how git reports it, and that nothing can be pushed.
 */

const exists = (p: string): Promise<boolean> => stat(p).then(
  () => true,
  () => false,
);

describe('git over HTTP: clone, fetch, refusals', function () {
  this.timeout(30_000);

  let server: TestServer;
  let work: { dir: string; cleanup: () => Promise<void> };
  let writerKey: string;
  let readerKey: string;
  /** The first clone, made with the admin key; later tests fetch into it. */
  let clone: string;

  const GUIDE = 'docs/guide.md';
  const DEEP = 'notes/deep/a/b/c/leaf.txt';
  const GONE = 'old/gone.md';
  const SECRET = 'secret/admin-only.md';

  const serverHead = async (): Promise<string> => (await git(['rev-parse', 'main'], { gitdir: server.gitdir() })).trim();

  before(async () => {
    server = await startTestServer();
    work = await tmpDir('ks-clone');
    writerKey = await server.key('writer', 'default', 'Wendy Writer');
    readerKey = await server.key('reader');
    const ok = async (p: Promise<Awaited<ReturnType<typeof put>>>): Promise<void> => {
      const res = await p;
      expect(res.status, JSON.stringify(res.body)).to.equal(200);
    };
    await ok(put(server, writerKey, GUIDE, { content: 'Guide v1\n' }));
    await ok(put(server, writerKey, GUIDE, { content: 'Guide v2\n', message: 'Second draft of the guide' }));
    await ok(put(server, server.adminKey, GUIDE, { content: 'Guide v3\n' }));
    await ok(put(server, writerKey, DEEP, { content: 'deep leaf — ünïcödé ✓\nline 2\n' }));
    await ok(put(server, writerKey, 'readme.md', { content: '' }));
    await ok(put(server, server.adminKey, SECRET, { content: 'admins only\n', requiredReadPermission: 'knowledge:admin' }));
    await ok(put(server, writerKey, GONE, { content: 'soon deleted\n' }));
    await ok(del(server, server.adminKey, GONE));
    clone = join(work.dir, 'clone');
    const run = await runGit(['clone', '--quiet', cloneUrl(server.url, server.adminKey), clone]);
    expect(run.code, run.stderr).to.equal(0);
  });

  after(async () => {
    await server?.close();
    await work?.cleanup();
  });

  describe('a clone with an admin key', () => {
    it('holds every item the API lists, at its path, with the same content, and nothing else outside .knowledge/ and .trash/', async () => {
      const items = itemsOf(await list(server, server.adminKey));
      expect(items.map((i) => i.path)).to.deep.equal(['docs/guide.md', 'notes/deep/a/b/c/leaf.txt', 'readme.md', 'secret/admin-only.md']);
      for (const item of items) {
        expect(await readFile(join(clone, item.path), 'utf8'), item.path).to.equal(item.content);
      }
      const files = (await gitOk(['ls-files'], { cwd: clone })).split('\n').filter(Boolean);
      const itemFiles = files.filter((f) => !f.startsWith('.knowledge/') && !f.startsWith('.trash/')).sort();
      expect(itemFiles).to.deep.equal(items.map((i) => i.path).sort());
      expect(files).to.include('.knowledge/config.json');
    });

    it('is checked out on main at the server head', async () => {
      expect((await gitOk(['rev-parse', 'HEAD'], { cwd: clone })).trim()).to.equal(await serverHead());
      expect((await gitOk(['symbolic-ref', '--short', 'HEAD'], { cwd: clone })).trim()).to.equal('main');
      expect(Number((await gitOk(['rev-list', '--count', 'HEAD'], { cwd: clone })).trim())).to.equal(await commitCount(server.gitdir()));
    });

    it('`git log -- <path>` shows each version of an item: the commits /history lists, newest first', async () => {
      const res = await api(`${server.url}/api/v1/knowledge/history/${GUIDE}`, { key: server.adminKey });
      expect(res.status).to.equal(200);
      const versions = res.body?.data?.versions as Array<{ version: number; commitId: string; message: string }>;
      expect(versions.map((v) => v.version)).to.deep.equal([3, 2, 1]);
      const ids = (await gitOk(['log', '--format=%H', '--', GUIDE], { cwd: clone })).trim().split('\n');
      expect(ids).to.deep.equal(versions.map((v) => v.commitId));
      const subjects = (await gitOk(['log', '--format=%s', '--', GUIDE], { cwd: clone })).trim().split('\n');
      expect(subjects).to.have.length(3);
      expect(subjects[1]).to.equal('Second draft of the guide');
      expect(subjects[0]).to.match(/guide\.md/);
      expect(subjects[2]).to.match(/guide\.md/);
      // Each of those commits holds the content of that version.
      const contents = await Promise.all(ids.map((id) => gitOk(['show', `${id}:${GUIDE}`], { cwd: clone })));
      expect(contents).to.deep.equal(['Guide v3\n', 'Guide v2\n', 'Guide v1\n']);
      // The author is the key's name.
      const authors = (await gitOk(['log', '--format=%an', '--', GUIDE], { cwd: clone })).trim().split('\n');
      expect(authors[1]).to.equal('Wendy Writer');
      expect(authors[2]).to.equal('Wendy Writer');
    });

    it('holds a deleted item under .trash/<path>, not at its path; its log shows the create and the delete', async () => {
      expect(await readFile(join(clone, '.trash', GONE), 'utf8')).to.equal('soon deleted\n');
      expect(await exists(join(clone, GONE))).to.equal(false);
      const subjects = (await gitOk(['log', '--format=%s', '--', GONE], { cwd: clone })).trim().split('\n');
      expect(subjects).to.have.length(2);
      const trash = await api(`${server.url}/api/v1/knowledge/trash`, { key: server.adminKey });
      expect((trash.body?.data?.items as Array<{ path: string }>).map((i) => i.path)).to.deep.equal([GONE]);
    });

    it('passes git fsck --strict', async () => {
      await fsckStrict(join(clone, '.git'));
      const run = await runGit(['fsck', '--strict', '--no-progress', '--no-dangling'], { cwd: clone });
      expect(run.code, run.stderr).to.equal(0);
      expect(run.stderr.trim()).to.equal('');
    });
  });

  describe('fetch', () => {
    it('`git fetch` brings commits written after the clone (protocol v2)', async () => {
      expect(itemOf(await put(server, writerKey, GUIDE, { content: 'Guide v4\n', message: 'Fourth' })).path).to.equal(GUIDE);
      expect((await put(server, writerKey, 'later/new.md', { content: 'new after clone\n' })).status).to.equal(200);
      const head = await serverHead();
      expect((await gitOk(['rev-parse', 'origin/main'], { cwd: clone })).trim()).to.not.equal(head);
      const run = await runGit(['-c', 'protocol.version=2', 'fetch', 'origin'], { cwd: clone, env: { GIT_TRACE_PACKET: '1' } });
      expect(run.code, run.stderr).to.equal(0);
      // The server answered in protocol v2.
      expect(run.stderr).to.match(/git< version 2/);
      expect((await gitOk(['rev-parse', 'origin/main'], { cwd: clone })).trim()).to.equal(head);
      await gitOk(['merge', '--ff-only', '--quiet', 'origin/main'], { cwd: clone });
      expect(await readFile(join(clone, GUIDE), 'utf8')).to.equal('Guide v4\n');
      expect(await readFile(join(clone, 'later/new.md'), 'utf8')).to.equal('new after clone\n');
      expect((await gitOk(['log', '-1', '--format=%s', '--', GUIDE], { cwd: clone })).trim()).to.equal('Fourth');
    });

    it('`git -c protocol.version=0 fetch` works too', async () => {
      expect((await put(server, writerKey, 'later/v0.md', { content: 'fetched with protocol v0\n' })).status).to.equal(200);
      expect((await del(server, server.adminKey, 'later/new.md')).status).to.equal(200);
      const head = await serverHead();
      const run = await runGit(['-c', 'protocol.version=0', 'fetch', 'origin'], { cwd: clone, env: { GIT_TRACE_PACKET: '1' } });
      expect(run.code, run.stderr).to.equal(0);
      expect(run.stderr).to.not.match(/version 2/);
      expect(run.stderr).to.match(/# service=git-upload-pack/);
      expect((await gitOk(['rev-parse', 'origin/main'], { cwd: clone })).trim()).to.equal(head);
      await gitOk(['merge', '--ff-only', '--quiet', 'origin/main'], { cwd: clone });
      expect(await readFile(join(clone, 'later/v0.md'), 'utf8')).to.equal('fetched with protocol v0\n');
      expect(await exists(join(clone, 'later/new.md'))).to.equal(false);
      expect(await readFile(join(clone, '.trash/later/new.md'), 'utf8')).to.equal('new after clone\n');
      await fsckStrict(join(clone, '.git'));
    });

    it('a protocol v0 clone gets the same history as a v2 one', async () => {
      const dir = join(work.dir, 'clone-v0');
      const run = await runGit(['-c', 'protocol.version=0', 'clone', '--quiet', cloneUrl(server.url, server.adminKey), dir]);
      expect(run.code, run.stderr).to.equal(0);
      expect((await gitOk(['rev-parse', 'HEAD'], { cwd: dir })).trim()).to.equal(await serverHead());
      expect(Number((await gitOk(['rev-list', '--count', 'HEAD'], { cwd: dir })).trim())).to.equal(await commitCount(server.gitdir()));
    });
  });

  describe('refused', () => {
    /** A clone that must fail: non-zero, nothing left behind, and git's stderr says why. */
    async function refusedClone(url: string, label: string, why: RegExp): Promise<string> {
      const dir = join(work.dir, `refused-${label}`);
      const run = await runGit(['clone', url, dir]);
      expect(run.code, `${label}: ${run.stderr}`).to.not.equal(0);
      expect(run.stderr, label).to.match(why);
      expect(await exists(dir), `${label}: clone dir left behind`).to.equal(false);
      // Whatever git printed, it never shows a stack or a server path.
      expect(run.stderr).to.not.match(/\n\s+at .+:\d+:\d+/);
      return run.stderr;
    }

    it('a writer key: 403, "requires knowledge:admin" relayed by git', async () => {
      const stderr = await refusedClone(cloneUrl(server.url, writerKey), 'writer', /403/);
      expect(stderr).to.match(/remote: .*knowledge:admin/);
    });

    it('a reader key: 403, "requires knowledge:admin" relayed by git', async () => {
      const stderr = await refusedClone(cloneUrl(server.url, readerKey), 'reader', /403/);
      expect(stderr).to.match(/remote: .*knowledge:admin/);
    });

    it('no key (prompts disabled): git asks for credentials and gives up', async () => {
      await refusedClone(cloneUrl(server.url, undefined), 'nokey', /could not read Username|terminal prompts disabled|Authentication failed/i);
    });

    it('a wrong key: authentication failed, with the server\'s explanation', async () => {
      const stderr = await refusedClone(cloneUrl(server.url, `ks_${'A'.repeat(43)}`), 'wrongkey', /Authentication failed/);
      expect(stderr).to.match(/remote: Invalid API key/);
    });

    it('a revoked admin key', async () => {
      const created = await api(`${server.url}/api/v1/knowledge/keys`, { method: 'POST', key: server.adminKey, body: { name: 'soon revoked', role: 'admin' } });
      expect(created.status).to.equal(200);
      const secret = created.body?.data?.secret as string;
      const id = (created.body?.data?.key as { id: string }).id;
      // It works before it is revoked...
      const before = await runGit(['ls-remote', cloneUrl(server.url, secret)]);
      expect(before.code, before.stderr).to.equal(0);
      expect((await api(`${server.url}/api/v1/knowledge/keys/${id}`, { method: 'DELETE', key: server.adminKey })).status).to.equal(200);
      await refusedClone(cloneUrl(server.url, secret), 'revoked', /Authentication failed/);
    });

    it('an admin key of ANOTHER organization: the repository is not there (404), though it clones its own', async () => {
      const otherKey = await server.org('other');
      const stderr = await refusedClone(cloneUrl(server.url, otherKey, 'default'), 'otherorg', /not found/i);
      expect(stderr).to.match(/remote: Repository not found/);
      // Control: the same key clones its own organization.
      const own = join(work.dir, 'other-own');
      const run = await runGit(['clone', '--quiet', cloneUrl(server.url, otherKey, 'other'), own]);
      expect(run.code, run.stderr).to.equal(0);
      expect(await exists(join(own, '.knowledge/config.json'))).to.equal(true);
      expect(await exists(join(own, GUIDE))).to.equal(false);
    });

    it('an organization that does not exist (and one whose id is not an org id)', async () => {
      const stderr = await refusedClone(cloneUrl(server.url, server.adminKey, 'nope'), 'nope', /not found/i);
      expect(stderr).to.match(/remote: Repository not found/);
      await refusedClone(cloneUrl(server.url, server.adminKey, 'Bad_Org'), 'badid', /not found/i);
    });

    it('`git push` from a clone: refused as read-only, and the server repository is unchanged', async () => {
      const headBefore = await serverHead();
      const countBefore = await commitCount(server.gitdir());
      await gitOk(['fetch', '--quiet', 'origin'], { cwd: clone });
      await gitOk(['reset', '--quiet', '--hard', 'origin/main'], { cwd: clone });
      await gitOk(['rm', '--quiet', GUIDE], { cwd: clone });
      await gitOk(['commit', '--quiet', '-m', 'pushed from a clone'], { cwd: clone });
      const run = await runGit(['push', 'origin', 'HEAD:main'], { cwd: clone });
      expect(run.code, run.stderr).to.not.equal(0);
      expect(run.stderr).to.match(/remote: .*read-only/);
      const force = await runGit(['push', '--force', 'origin', 'HEAD:refs/heads/other'], { cwd: clone });
      expect(force.code, force.stderr).to.not.equal(0);
      expect(force.stderr).to.match(/read-only/);
      expect(await serverHead()).to.equal(headBefore);
      expect(await commitCount(server.gitdir())).to.equal(countBefore);
      const refs = (await git(['for-each-ref', '--format=%(refname)'], { gitdir: server.gitdir() })).trim().split('\n');
      expect(refs).to.deep.equal(['refs/heads/main']);
      const still = await get(server, server.adminKey, GUIDE);
      expect(itemOf(still).content).to.equal('Guide v4\n');
    });
  });

  describe('raw HTTP', () => {
    const base = (): string => `${server.url}/git/default.git`;

    it('GET info/refs?service=git-receive-pack: 403, text/plain', async () => {
      const res = await fetch(`${base()}/info/refs?service=git-receive-pack`, { headers: { Authorization: basicAuth(server.adminKey) } });
      expect(res.status).to.equal(403);
      expect(res.headers.get('content-type')).to.match(/^text\/plain/);
      expect(await res.text()).to.match(/read-only/);
    });

    it('POST git-receive-pack: 403', async () => {
      const res = await fetch(`${base()}/git-receive-pack`, {
        method: 'POST',
        headers: { Authorization: basicAuth(server.adminKey), 'Content-Type': 'application/x-git-receive-pack-request' },
        body: '0000',
      });
      expect(res.status).to.equal(403);
      expect(res.headers.get('content-type')).to.match(/^text\/plain/);
    });

    it('GET info/refs without service (dumb HTTP): 400', async () => {
      const res = await fetch(`${base()}/info/refs`, { headers: { Authorization: basicAuth(server.adminKey) } });
      expect(res.status).to.equal(400);
      expect(res.headers.get('content-type')).to.match(/^text\/plain/);
    });

    it('401 carries a WWW-Authenticate: Basic challenge (no credentials, a Bearer header, a wrong key)', async () => {
      const cases: Array<Record<string, string>> = [
        {},
        { Authorization: `Bearer ${server.adminKey}` },
        { Authorization: basicAuth(`ks_${'B'.repeat(43)}`) },
        { Authorization: 'Basic !!!' },
      ];
      for (const headers of cases) {
        const res = await fetch(`${base()}/info/refs?service=git-upload-pack`, { headers });
        expect(res.status, JSON.stringify(headers)).to.equal(401);
        expect(res.headers.get('www-authenticate'), JSON.stringify(headers)).to.match(/^Basic\b/);
        expect(res.headers.get('content-type')).to.match(/^text\/plain/);
        expect(await res.text()).to.match(/Invalid API key/);
      }
      const post = await fetch(`${base()}/git-upload-pack`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/x-git-upload-pack-request' },
        body: '0000',
      });
      expect(post.status).to.equal(401);
      expect(post.headers.get('www-authenticate')).to.match(/^Basic\b/);
    });

    it('the v0 advertisement starts with the service line and names main at the server head', async () => {
      const res = await fetch(`${base()}/info/refs?service=git-upload-pack`, { headers: { Authorization: basicAuth(server.adminKey) } });
      expect(res.status).to.equal(200);
      expect(res.headers.get('content-type')).to.equal('application/x-git-upload-pack-advertisement');
      const text = await res.text();
      expect(text.startsWith('001e# service=git-upload-pack\n0000')).to.equal(true);
      expect(text).to.contain(`${await serverHead()} refs/heads/main`);
    });

    /** A protocol v0 fetch request for main: one want, then done. */
    const wantMain = (head: string): Buffer => {
      const pkt = (s: string): string => `${(s.length + 4).toString(16).padStart(4, '0')}${s}`;
      return Buffer.from(`${pkt(`want ${head} ofs-delta\n`)}0000${pkt('done\n')}`, 'latin1');
    };

    /** Indexes a pack into a fresh bare repository and checks the head commit and its tree arrived. */
    async function packHolds(pack: Buffer, head: string): Promise<void> {
      const repo = join(work.dir, `unpack-${Math.random().toString(36).slice(2)}`);
      await gitOk(['init', '--quiet', '--bare', repo]);
      await gitOk(['index-pack', '--stdin', '--strict'], { gitdir: repo, input: pack });
      expect((await gitOk(['cat-file', '-t', head], { gitdir: repo })).trim()).to.equal('commit');
      await gitOk(['update-ref', 'refs/heads/main', head], { gitdir: repo });
      await gitOk(['fsck', '--strict', '--no-progress', '--no-dangling'], { gitdir: repo });
    }

    async function uploadPack(body: Buffer, headers: Record<string, string>): Promise<{ status: number; type: string | null; body: Buffer }> {
      const res = await fetch(`${base()}/git-upload-pack`, {
        method: 'POST',
        headers: { Authorization: basicAuth(server.adminKey), 'Content-Type': 'application/x-git-upload-pack-request', ...headers },
        body,
      });
      return { status: res.status, type: res.headers.get('content-type'), body: Buffer.from(await res.arrayBuffer()) };
    }

    it('an upload-pack POST, plain and gzip-encoded, returns a complete pack of main', async () => {
      const head = await serverHead();
      const request = wantMain(head);
      for (const [label, body, headers] of [
        ['identity', request, {}],
        ['gzip', gzipSync(request), { 'Content-Encoding': 'gzip' }],
        ['x-gzip', gzipSync(request), { 'Content-Encoding': 'x-gzip' }],
      ] as const) {
        expect(label === 'identity' || !body.equals(request), label).to.equal(true);
        const res = await uploadPack(body, headers);
        expect(res.status, `${label}: ${res.body.toString('latin1').slice(0, 200)}`).to.equal(200);
        expect(res.type).to.equal('application/x-git-upload-pack-result');
        expect(res.body.subarray(0, 8).toString('latin1'), label).to.equal('0008NAK\n');
        expect(res.body.subarray(8, 12).toString('latin1'), label).to.equal('PACK');
        await packHolds(res.body.subarray(8), head);
      }
    });

    it('an unknown Content-Encoding or a non-git Content-Type is refused with a 4xx', async () => {
      const head = await serverHead();
      const unknown = await uploadPack(wantMain(head), { 'Content-Encoding': 'br' });
      expect(unknown.status).to.equal(400);
      expect(unknown.type).to.match(/^text\/plain/);
      const wrongType = await uploadPack(wantMain(head), { 'Content-Type': 'application/json' });
      expect(wrongType.status).to.equal(415);
    });

    it('git itself gzips a large negotiation (many haves) and the fetch succeeds', async () => {
      // A clone with many local commits the server has never seen: its fetch sends them all as "have" lines,
      // well over git's 1 KiB threshold for gzipping the request body.
      const dir = join(work.dir, 'many-haves');
      expect((await runGit(['clone', '--quiet', cloneUrl(server.url, server.adminKey), dir])).code).to.equal(0);
      await gitOk(['checkout', '--quiet', '-b', 'local'], { cwd: dir });
      for (let i = 0; i < 120; i++) {
        await gitOk(['commit', '--quiet', '--allow-empty', '-m', `local ${i}`], { cwd: dir });
      }
      expect((await put(server, writerKey, 'later/after-haves.md', { content: 'fetched after many haves\n' })).status).to.equal(200);
      const head = await serverHead();
      const run = await runGit(['-c', 'protocol.version=0', 'fetch', 'origin'], { cwd: dir, env: { GIT_TRACE_CURL: '1', GIT_TRACE_CURL_NO_DATA: '1' } });
      expect(run.code, run.stderr.slice(-2000)).to.equal(0);
      expect(run.stderr).to.match(/=> Send header: Content-Encoding: gzip/);
      expect((await gitOk(['rev-parse', 'origin/main'], { cwd: dir })).trim()).to.equal(head);
      const v2 = await runGit(['-c', 'protocol.version=2', 'fetch', 'origin'], { cwd: dir });
      expect(v2.code, v2.stderr).to.equal(0);
    });
  });
});

describe('git over HTTP: a malformed gzip request body does not bring the server down', function () {
  this.timeout(30_000);

  let work: { dir: string; cleanup: () => Promise<void> };

  before(async () => {
    work = await tmpDir('ks-clone-gzip');
  });

  after(async () => {
    await killAllChildren();
    await work?.cleanup();
  });

  /** Sends one upload-pack POST; a dropped connection counts as an answer too (null). */
  async function post(url: string, key: string, body: Buffer): Promise<{ status: number; body: Buffer } | null> {
    try {
      const res = await fetch(`${url}/git/default.git/git-upload-pack`, {
        method: 'POST',
        headers: { Authorization: basicAuth(key), 'Content-Type': 'application/x-git-upload-pack-request', 'Content-Encoding': 'gzip' },
        body,
      });
      return { status: res.status, body: Buffer.from(await res.arrayBuffer()) };
    } catch {
      return null;
    }
  }

  const pkt = (s: string): string => `${(s.length + 4).toString(16).padStart(4, '0')}${s}`;
  const wantDone = (head: string): Buffer => Buffer.from(`${pkt(`want ${head} ofs-delta\n`)}0000${pkt('done\n')}`, 'latin1');
  const cases: Array<[string, (head: string) => Buffer]> = [
    ['a body that is not gzip', (head) => wantDone(head)],
    ['a truncated gzip body', (head) => gzipSync(wantDone(head)).subarray(0, 12)],
    ['a gzip body that inflates past the 64 MiB limit', () => gzipSync(Buffer.alloc(65 * 1024 * 1024 + 1, 'A'))],
  ];
  for (const [label, makeBody] of cases) {
    it(`\`Content-Encoding: gzip\` with ${label}: no pack, and the server keeps serving the API and git`, async () => {
      const serve = await spawnServe(join(work.dir, `data-${label.replace(/\W+/g, '-')}`));
      const key = serve.adminKey as string;
      expect(key).to.match(/^ks_/);
      const gitdir = join(work.dir, `data-${label.replace(/\W+/g, '-')}`, 'orgs/default.git');
      const head = (await git(['rev-parse', 'main'], { gitdir })).trim();
      const res = await post(serve.url, key, makeBody(head));
      if (res) expect(res.body.includes(Buffer.from('PACK')), 'a pack was sent').to.equal(false);
      const alive = await Promise.race([serve.exited.then(() => false), new Promise<boolean>((r) => setTimeout(() => r(true), 300))]);
      expect(alive, `the server process exited\n${serve.stderr().slice(0, 600)}`).to.equal(true);
      expect((await api(`${serve.url}/api/v1/knowledge`, { key })).status).to.equal(200);
      const ls = await runGit(['ls-remote', cloneUrl(serve.url, key)]);
      expect(ls.code, ls.stderr).to.equal(0);
      expect(ls.stdout).to.contain(`${head}\trefs/heads/main`);
      await serve.kill('SIGTERM');
    });
  }
});
