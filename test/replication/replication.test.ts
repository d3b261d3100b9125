import { expect } from 'chai';
import { createServer, type Server } from 'node:http';
import { createServer as createTcpServer, type Socket } from 'node:net';
import { eventually, GitDaemon } from '../support/gitDaemon.js';
import { fsckStrict, git } from '../support/git.js';
import { api, type TestServer } from '../support/server.js';
import { tmpDir } from '../support/tmp.js';
import { firstMirrorWhen, mirrors, put, replicating, replicatingServer } from './support.js';

const head = async (gitdir: string): Promise<string> => (await git(['rev-parse', 'main'], { gitdir })).trim();
const log = (gitdir: string): Promise<string> => git(['log', '--format=%H %an %s', 'main'], { gitdir });

describe('replication to a git mirror (git daemon on 127.0.0.1)', function () {
  this.timeout(60_000);
  let tmp: { dir: string; cleanup: () => Promise<void> };
  let daemon: GitDaemon;
  let server: TestServer | undefined;

  beforeEach(async () => {
    tmp = await tmpDir('ks-mirror');
    daemon = await GitDaemon.start(tmp.dir);
  });
  afterEach(async () => {
    await server?.close();
    server = undefined;
    await daemon.stop();
    await tmp.cleanup();
  });

  it('keeps a mirrored organization open past KNOWLEDGE_MAX_OPEN_ORGS: its writes still reach the mirror while others come and go', async () => {
    const mirror = await daemon.create('default.git');
    // Only "default" is mirrored; with one organization allowed open, every request to another closes what it can.
    ({ server } = await replicatingServer({ ...replicating([]), remotes: [{ org: 'default', url: daemon.url('default.git') }] }, { maxOpenOrgs: 1 }));
    const s = server;
    const admin = s.adminKey;
    await eventually('the start push', () => firstMirrorWhen(s, admin, (m, h) => m.state === 'ok' && m.pushedCommit === h));
    const others = await Promise.all(['o1', 'o2'].map((orgId) => s.org(orgId)));
    for (let i = 0; i < 3; i++) {
      for (const key of others) await put(s, key, `n${i}.md`, `other ${i}\n`);
      await put(s, admin, `notes/n${i}.md`, `note ${i}\n`);
    }
    const node = await head(s.gitdir());
    await eventually('the mirror at the node head', () => firstMirrorWhen(s, admin, (m) => m.pushedCommit === node && m.lagCommits === 0));
    expect(await head(mirror)).to.equal(node);
    const metrics = await (await fetch(`${s.url}/metrics`)).text();
    expect(Number(/^knowledge_organizations_closed_total (\S+)$/m.exec(metrics)?.[1])).to.be.at.least(3);
  });

  it('pushes every write to the mirror: same commits, same trees, a clone of the mirror reads the same items, fsck clean', async () => {
    const mirror = await daemon.create('default.git');
    ({ server } = await replicatingServer(replicating([daemon.url('{org}.git')])));
    const s = server;
    const admin = s.adminKey;
    // The first push at start brings the mirror the organization's first commit.
    await eventually('the start push', () => firstMirrorWhen(s, admin, (m, h) => m.state === 'ok' && m.pushedCommit === h));
    for (let i = 0; i < 5; i++) await put(s, admin, `notes/n${i}.md`, `note ${i}\n`);
    const node = await head(s.gitdir());
    const caughtUp = await eventually('the mirror at the node head', () => firstMirrorWhen(s, admin, (m) => m.pushedCommit === node && m.lagCommits === 0));
    expect(caughtUp).to.include({ state: 'ok', url: daemon.url('default.git'), lagCommits: 0, lagSeconds: 0, failures: 0, lastError: null, nextRetryAt: null });
    expect(await head(mirror)).to.equal(node);
    expect(await log(mirror)).to.equal(await log(s.gitdir()));
    expect(await git(['ls-tree', '-r', 'main'], { gitdir: mirror })).to.equal(await git(['ls-tree', '-r', 'main'], { gitdir: s.gitdir() }));
    await fsckStrict(mirror);
    // Only main is pushed: the mirror holds no other ref.
    expect((await git(['for-each-ref', '--format=%(refname)'], { gitdir: mirror })).trim()).to.equal('refs/heads/main');
    const clone = `${tmp.dir}/clone`;
    await git(['clone', '--quiet', daemon.url('default.git'), clone]);
    const files = (await git(['-C', clone, 'ls-files'])).split('\n').filter(Boolean);
    expect(files.filter((f) => f.includes('n3'))).to.not.be.empty;
    const metrics = await (await fetch(`${s.url}/metrics`)).text();
    expect(metrics).to.match(/^knowledge_replication_mirrors\{state="ok"\} 1$/m);
    expect(metrics).to.match(/^knowledge_replication_lag_commits 0$/m);
    expect(metrics).to.match(/^knowledge_replication_pushes_total\{result="pushed"\} [1-9]/m);
  });

  it('keeps answering writes while the mirror is down, shows it failing with a growing lag, and catches it up when it is back', async () => {
    const mirror = await daemon.create('default.git');
    let logs: string[];
    ({ server, logs } = await replicatingServer(replicating([daemon.url('{org}.git')])));
    const s = server;
    const admin = s.adminKey;
    await eventually('the start push', () => firstMirrorWhen(s, admin, (m, h) => m.state === 'ok' && m.pushedCommit === h));
    await daemon.stop();
    await put(s, admin, 'a.md', 'a\n');
    const failing = await eventually('a failed push', () => firstMirrorWhen(s, admin, (m) => m.state === 'failing'));
    expect(failing.lastError).to.match(/unable to connect|Connection refused/);
    expect(failing.failures).to.be.at.least(1);
    expect(failing.nextRetryAt).to.be.a('string');
    for (let i = 0; i < 4; i++) await put(s, admin, `b${i}.md`, `b${i}\n`);
    const behind = await eventually('the lag to count five commits', () => firstMirrorWhen(s, admin, (m) => m.lagCommits === 5));
    await new Promise((r) => setTimeout(r, 300));
    const later = (await mirrors(s, admin)).mirrors[0];
    expect(later?.state).to.equal('failing');
    expect(later?.lagSeconds).to.be.greaterThan(behind.lagSeconds);
    const metrics = await (await fetch(`${s.url}/metrics`)).text();
    expect(metrics).to.match(/^knowledge_replication_mirrors\{state="failing"\} 1$/m);
    expect(metrics).to.match(/^knowledge_replication_lag_commits 5$/m);
    expect(logs.some((l) => l.includes('a push to a mirror failed'))).to.equal(true);
    // Back: the next retry (backoff capped at 400 ms here) catches it up.
    await daemon.start();
    const node = await head(s.gitdir());
    await eventually('the mirror caught up', () => firstMirrorWhen(s, admin, (m) => m.state === 'ok' && m.pushedCommit === node && m.lagCommits === 0));
    expect(await head(mirror)).to.equal(node);
    await fsckStrict(mirror);
  });

  it('never makes a write wait for a push: a mirror that never answers leaves PUTs prompt, and the push is killed at its timeout', async () => {
    // A TCP server that accepts and says nothing: git waits for the daemon's greeting forever.
    const sockets: Socket[] = [];
    const silent = createTcpServer((socket) => void sockets.push(socket));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const port = (silent.address() as { port: number }).port;
    try {
      ({ server } = await replicatingServer(replicating([`git://127.0.0.1:${port}/{org}.git`], 3_000)));
      const s = server;
      const admin = s.adminKey;
      await eventually('a push under way', async () => (sockets.length > 0 ? true : undefined));
      const times: number[] = [];
      for (let i = 0; i < 10; i++) {
        const started = Date.now();
        await put(s, admin, `p${i}.md`, `p${i}\n`);
        times.push(Date.now() - started);
      }
      // The push hangs for 3 s; each write is answered long before (their own disk time only).
      expect(Math.max(...times), `PUT times ${times.join(', ')} ms`).to.be.below(1_500);
      expect((await mirrors(s, admin)).mirrors[0]?.state).to.equal('pushing');
      const killed = await eventually('the push killed at its timeout', () => firstMirrorWhen(s, admin, (m) => m.state === 'failing'), 10_000);
      expect(killed.lastError).to.equal('no answer within 3000 ms (git push killed)');
      expect(killed.lagCommits).to.equal(11);
    } finally {
      sockets.forEach((socket) => socket.destroy());
      silent.close();
    }
  });

  it('reports a mirror that refuses a push (someone wrote to it) as rejected, forces nothing and keeps every local write', async () => {
    const mirror = await daemon.create('default.git');
    let logs: string[];
    ({ server, logs } = await replicatingServer(replicating([daemon.url('{org}.git')])));
    const s = server;
    const admin = s.adminKey;
    await put(s, admin, 'first.md', 'first\n');
    const node = await head(s.gitdir());
    await eventually('the first write on the mirror', () => firstMirrorWhen(s, admin, (m) => m.pushedCommit === node));
    // Someone commits to the mirror directly.
    const clone = `${tmp.dir}/intruder`;
    await git(['clone', '--quiet', daemon.url('default.git'), clone]);
    await git(['-C', clone, '-c', 'user.name=intruder', '-c', 'user.email=i@example.com', 'commit', '--quiet', '--allow-empty', '-m', 'written on the mirror']);
    await git(['-C', clone, 'push', '--quiet', 'origin', 'main']);
    const foreign = await head(mirror);
    for (let i = 0; i < 3; i++) await put(s, admin, `later${i}.md`, `later ${i}\n`);
    const rejected = await eventually('the push refused', () => firstMirrorWhen(s, admin, (m) => m.state === 'rejected'));
    expect(rejected.lastError).to.match(/refused: \[rejected\] \(fetch first\)/);
    expect(rejected.pushedCommit).to.equal(node);
    expect(rejected.lagCommits).to.equal(3);
    expect(logs.some((l) => l.includes('the mirror refused the push'))).to.equal(true);
    // Retries go on (backoff) and keep being refused: the mirror's commit stays, nothing is forced.
    await eventually('another refused retry', () => firstMirrorWhen(s, admin, (m) => m.failures >= 3));
    expect(await head(mirror)).to.equal(foreign);
    expect(await git(['log', '-1', '--format=%s', 'main'], { gitdir: mirror })).to.equal('written on the mirror\n');
    // Every local write is there, and the store still takes writes.
    await put(s, admin, 'after.md', 'after\n');
    const items = await api(`${s.url}/api/v1/knowledge/items/after.md`, { key: admin });
    expect(items.status).to.equal(200);
    expect(Number((await git(['rev-list', '--count', 'main'], { gitdir: s.gitdir() })).trim())).to.equal(6);
    await fsckStrict(mirror);
  });

  it('reports a URL that is not a git repository (an HTTP server answering 404 and plain text) as failing with git\'s reason', async () => {
    const web: Server = createServer((req, res) => {
      if (req.url?.startsWith('/missing')) res.writeHead(404, { 'Content-Type': 'text/plain' }).end('no such thing\n');
      else res.writeHead(200, { 'Content-Type': 'text/plain' }).end('hello, I am not git\n');
    });
    await new Promise<void>((resolve) => web.listen(0, '127.0.0.1', resolve));
    const port = (web.address() as { port: number }).port;
    try {
      const urls = [`http://127.0.0.1:${port}/missing/{org}.git`, `http://robot:s3cret-word@127.0.0.1:${port}/text/{org}.git`];
      ({ server } = await replicatingServer(replicating(urls)));
      const s = server;
      const admin = s.adminKey;
      const status = await eventually('both mirrors failing', async () => {
        const all = (await mirrors(s, admin)).mirrors;
        return all.every((m) => m.state === 'failing') ? all : undefined;
      });
      expect(status[0]?.lastError).to.match(/not found/);
      expect(status[1]?.lastError).to.match(/not valid|is this a git repository|unable to access/);
      expect(status[1]?.url).to.equal(`http://***@127.0.0.1:${port}/text/default.git`);
      expect(JSON.stringify(status)).to.not.include('s3cret-word');
      await put(s, admin, 'still.md', 'writes go on\n');
    } finally {
      web.close();
    }
  });

  it('pushes each organization to its own mirror ({org}), and a mirror named for one organization only to that one', async () => {
    const shared = await daemon.create('default.git');
    const acmeMirror = await daemon.create('acme.git');
    const onlyAcme = await daemon.create('acme-extra.git');
    const settings = replicating([daemon.url('{org}.git')]);
    ({ server } = await replicatingServer({ ...settings, remotes: [...settings.remotes, { org: 'acme', url: daemon.url('acme-extra.git') }] }));
    const s = server;
    const acmeKey = await s.org('acme');
    await put(s, acmeKey, 'acme.md', 'acme\n');
    await put(s, s.adminKey, 'default.md', 'default\n');
    const acmeHead = await head(s.gitdir('acme'));
    await eventually('both acme mirrors', async () => {
      const all = (await mirrors(s, acmeKey)).mirrors;
      return all.length === 2 && all.every((m) => m.pushedCommit === acmeHead) ? all : undefined;
    });
    expect((await mirrors(s, s.adminKey)).mirrors.map((m) => m.url)).to.deep.equal([daemon.url('default.git')]);
    const defaultHead = await head(s.gitdir());
    await eventually('the default mirror', () => firstMirrorWhen(s, s.adminKey, (m) => m.pushedCommit === defaultHead));
    expect(await head(acmeMirror)).to.equal(acmeHead);
    expect(await head(onlyAcme)).to.equal(acmeHead);
    expect(await head(shared)).to.equal(defaultHead);
  });

  it('at start, pushes to every mirror once: a node that was down catches up a mirror that was replaced, and remembers where each mirror was', async () => {
    const data = await tmpDir('ks-node');
    try {
      const mirror = await daemon.create('default.git');
      const settings = replicating([daemon.url('{org}.git')]);
      ({ server } = await replicatingServer(settings, {}, data.dir));
      let s = server;
      for (let i = 0; i < 3; i++) await put(s, s.adminKey, `x${i}.md`, `x${i}\n`);
      const node = await head(s.gitdir());
      await eventually('caught up', () => firstMirrorWhen(s, s.adminKey, (m) => m.pushedCommit === node));
      const key = s.adminKey;
      await s.server.close();
      server = undefined;
      // The mirror is lost and made again, empty, while the node is down; it is unreachable when the node starts.
      await git(['--git-dir', mirror, 'update-ref', '-d', 'refs/heads/main']);
      await daemon.stop();
      ({ server } = await replicatingServer(settings, {}, data.dir));
      s = server;
      // Remembered: the status says where the mirror was last seen, not "never pushed".
      const down = await eventually('the start push failing', () => firstMirrorWhen(s, key, (m) => m.state === 'failing'));
      expect(down).to.include({ pushedCommit: node, lagCommits: 0 });
      await daemon.start();
      // The start push is retried until it goes through, though the node believes the mirror up to date.
      await eventually('the mirror caught up', async () => ((await git(['rev-parse', '--verify', '--quiet', 'main'], { gitdir: mirror }).catch(() => '')).trim() === node ? true : undefined));
      await eventually('ok again', () => firstMirrorWhen(s, key, (m) => m.state === 'ok' && m.pushedCommit === node));
      await fsckStrict(mirror);
    } finally {
      await server?.server.close();
      server = undefined;
      await data.cleanup();
    }
  });

  it('coalesces: commits made while a push waits for KNOWLEDGE_REPLICATE_INTERVAL_MS go in one push', async () => {
    const mirror = await daemon.create('default.git');
    ({ server } = await replicatingServer({ ...replicating([daemon.url('{org}.git')]), intervalMs: 2_000 }));
    const s = server;
    const admin = s.adminKey;
    const pushed = async (): Promise<number> => Number(/^knowledge_replication_pushes_total\{result="pushed"\} (\d+)$/m.exec(await (await fetch(`${s.url}/metrics`)).text())?.[1] ?? 0);
    await eventually('the start push', () => firstMirrorWhen(s, admin, (m, h) => m.state === 'ok' && m.pushedCommit === h));
    const before = await pushed();
    for (let i = 0; i < 10; i++) await put(s, admin, `c${i}.md`, `c${i}\n`);
    const node = await head(s.gitdir());
    await eventually('the mirror caught up', () => firstMirrorWhen(s, admin, (m) => m.pushedCommit === node && m.lagCommits === 0), 20_000);
    // Ten commits, made within the interval of one push: at most that push and the next.
    expect((await pushed()) - before).to.be.within(1, 2);
    expect(await head(mirror)).to.equal(node);
  });

  it('shows the status to admin keys without scopes only, and an empty list where no mirror is configured', async () => {
    ({ server } = await replicatingServer(replicating([])));
    const s = server;
    expect(await mirrors(s, s.adminKey)).to.deep.include({ mirrors: [] });
    const writer = await s.key('writer');
    const asWriter = await api(`${s.url}/api/v1/knowledge/replication`, { key: writer });
    expect(asWriter.status).to.equal(403);
    const scoped = await api(`${s.url}/api/v1/knowledge/keys`, { method: 'POST', key: s.adminKey, body: { name: 'scoped', role: 'admin', scopes: ['docs/'] } });
    expect(scoped.status).to.equal(200);
    const asScoped = await api(`${s.url}/api/v1/knowledge/replication`, { key: (scoped.body?.data as { secret: string }).secret });
    expect(asScoped.status).to.equal(403);
    expect(asScoped.body?.error).to.match(/scoped key may not see replication/);
    const badQuery = await api(`${s.url}/api/v1/knowledge/replication?x=1`, { key: s.adminKey });
    expect(badQuery.status).to.equal(400);
  });
});
