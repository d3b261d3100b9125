import http from 'node:http';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { expect } from 'chai';
import { ensureBuilt, killAllChildren, runCli, spawnCli, spawnServe, type ServeChild } from './support/child.js';
import { commitCount, fsckStrict, git } from './support/git.js';
import { api } from './support/server.js';
import { sleep } from './support/sleep.js';
import { tmpDir } from './support/tmp.js';

/**
 * The built server as a child process: SIGKILL in the
 * middle of a write load loses no acknowledged write, needs no repair, and
 * leaves `git fsck --strict` and `knowledge-store verify` clean; one server per
 * data dir; SIGTERM finishes the request in flight and exits 0.
 */

const LOOPS = 8;
const PATHS_PER_LOOP = 4;
const CYCLES = 3;

const loadPath = (loop: number, slot: number): string => `load/loop-${loop}/item-${slot}.md`;
const loadContent = (loop: number, version: number): string => `loop ${loop} version ${version}\n`;
const CONTENT = /^loop (\d+) version (\d+)\n$/;

interface Write {
  loop: number;
  path: string;
  version: number;
}

describe('crash safety (child process)', function () {
  this.timeout(60_000);

  const dirs: Array<{ cleanup: () => Promise<void> }> = [];
  const newDataDir = async (): Promise<string> => {
    const tmp = await tmpDir('ks-crash');
    dirs.push(tmp);
    return tmp.dir;
  };

  before(async function () {
    this.timeout(120_000);
    await ensureBuilt();
  });

  afterEach(async () => {
    await killAllChildren();
  });

  after(async () => {
    await killAllChildren();
    await Promise.all(dirs.map((d) => d.cleanup()));
  });

  it(`loses no acknowledged write across ${CYCLES} SIGKILLs under concurrent load`, async () => {
    const dataDir = await newDataDir();
    const gitdir = join(dataDir, 'orgs', 'default.git');
    let child: ServeChild = await spawnServe(dataDir);
    const adminKey = child.adminKey as string;
    expect(adminKey, child.stdout()).to.match(/^ks_/);

    /** Highest acknowledged and highest sent version per path; every write acknowledged ever. */
    const acked = new Map<string, Write>();
    const sent = new Map<string, number>();
    const allAcked: Write[] = [];
    const versions = Array.from({ length: LOOPS }, () => 0);
    const unexpected: string[] = [];
    let totalSent = 0;

    for (let cycle = 0; cycle < CYCLES; cycle++) {
      const url = child.url;
      let killed = false;
      let ackedThisCycle = 0;
      // The kill comes a random while after the first write of the cycle is acknowledged: on a loaded
      // machine a fixed delay from the start could fall before the restarted server answers at all.
      let firstAck: () => void = () => undefined;
      const acknowledged = new Promise<void>((resolve) => (firstAck = resolve));
      const runLoop = async (loop: number): Promise<void> => {
        for (;;) {
          const version = (versions[loop] ?? 0) + 1;
          versions[loop] = version;
          const path = loadPath(loop, version % PATHS_PER_LOOP);
          sent.set(path, version);
          totalSent++;
          let status: number;
          try {
            const res = await fetch(`${url}/api/v1/knowledge/items/${path}`, {
              method: 'PUT',
              headers: { Authorization: `Bearer ${adminKey}`, 'Content-Type': 'application/json' },
              body: JSON.stringify({ content: loadContent(loop, version) }),
              signal: AbortSignal.timeout(15_000),
            });
            await res.arrayBuffer();
            status = res.status;
          } catch (err) {
            if (!killed) unexpected.push(`cycle ${cycle}: ${path} failed before the kill: ${String(err)}`);
            return;
          }
          if (status !== 200) {
            // A response that made it out before the kill must still be a success.
            unexpected.push(`cycle ${cycle}: ${path} v${version} answered ${status}`);
            continue;
          }
          const write = { loop, path, version };
          allAcked.push(write);
          ackedThisCycle++;
          firstAck();
          if ((acked.get(path)?.version ?? 0) < version) acked.set(path, write);
        }
      };
      const loops = Array.from({ length: LOOPS }, (_, loop) => runLoop(loop));
      await Promise.race([acknowledged, sleep(15_000)]);
      await sleep(300 + Math.floor(Math.random() * 500));
      killed = true;
      const exit = await child.kill('SIGKILL');
      expect(exit.signal).to.equal('SIGKILL');
      await Promise.all(loops);
      expect(unexpected, unexpected.join('\n')).to.deep.equal([]);
      expect(ackedThisCycle, `cycle ${cycle}: the server must accept writes before the kill`).to.be.greaterThan(0);

      // A restart on the same data dir: no repair step, no new organization, no new admin key.
      child = await spawnServe(dataDir);
      expect(child.stdout(), `cycle ${cycle}`).to.not.include('Admin API key');
      expect(child.adminKey).to.equal(undefined);

      for (const [path, write] of acked) {
        const res = await api(`${child.url}/api/v1/knowledge/items/${path}`, { key: adminKey });
        expect(res.status, `cycle ${cycle}: ${path} (acknowledged v${write.version})`).to.equal(200);
        const content = (res.body?.data?.item as { content: string }).content;
        const m = CONTENT.exec(content);
        expect(m, `cycle ${cycle}: ${path} holds ${JSON.stringify(content)}`).to.not.equal(null);
        const [loop, version] = [Number(m?.[1]), Number(m?.[2])];
        expect(loop, path).to.equal(write.loop);
        expect(version, `cycle ${cycle}: ${path}: stored version must be the acknowledged one or later`).to.be.at.least(write.version);
        expect(version, `${path}: a version sent to this path`).to.be.at.most(sent.get(path) as number);
        expect(version % PATHS_PER_LOOP, `${path}: a version sent to this path`).to.equal(write.version % PATHS_PER_LOOP);
        expect(await git(['show', `main:${path}`], { gitdir })).to.equal(content);
      }
      await fsckStrict(gitdir);
      const verify = await runCli(['verify', '--data-dir', dataDir]);
      expect(verify.code, `verify after cycle ${cycle}:\n${verify.stdout}${verify.stderr}`).to.equal(0);
      expect(verify.stdout).to.match(/default: OK/);
    }

    // Every acknowledged write is in the history, not only the last one per path.
    const history = await git(['log', '-p', '--format=', '--', 'load/'], { gitdir });
    const inHistory = new Set(history.split('\n').filter((l) => l.startsWith('+loop ')).map((l) => l.slice(1)));
    const missing = allAcked.filter((w) => !inHistory.has(loadContent(w.loop, w.version).trimEnd()));
    expect(missing, 'acknowledged writes missing from git history').to.deep.equal([]);
    // One commit per write: at least one per acknowledged write, never more than were sent (plus the org's first commit).
    const commits = await commitCount(gitdir);
    expect(commits - 1).to.be.at.least(allAcked.length);
    expect(commits - 1).to.be.at.most(totalSent);
    await child.kill('SIGKILL');
  });

  it('refuses a second `serve` on a data dir in use: non-zero exit at once, naming the data directory', async () => {
    const dataDir = await newDataDir();
    const first = await spawnServe(dataDir);
    const started = Date.now();
    const second = spawnCli(['serve', '--port', '0', '--host', '127.0.0.1', '--data-dir', dataDir]);
    const timer = setTimeout(() => second.proc.kill('SIGKILL'), 10_000);
    const exit = await second.exited;
    clearTimeout(timer);
    expect(exit.signal, 'the second server kept running').to.equal(null);
    expect(exit.code).to.be.a('number').and.not.equal(0);
    expect(Date.now() - started).to.be.below(5_000);
    expect(second.out.stderr).to.match(/data dir(ectory)?\b.*\bin use/i);
    expect(second.out.stdout).to.not.include('Knowledge store listening');

    // The first server is untouched: it still owns the lock and still answers.
    expect((await readFile(join(dataDir, 'server.lock'), 'utf8')).trim()).to.equal(String(first.pid));
    const res = await api(`${first.url}/api/v1/knowledge`, { key: first.adminKey as string });
    expect(res.status).to.equal(200);
  });

  it('stops gracefully on SIGTERM: the PUT in flight completes and is stored, new connections are refused, exit 0', async () => {
    const dataDir = await newDataDir();
    const child = await spawnServe(dataDir);
    const key = child.adminKey as string;
    const { port } = new URL(child.url);
    const body = JSON.stringify({ content: 'written during shutdown\n' });
    const half = Math.floor(body.length / 2);

    let responseBody = '';
    const req = http.request({
      host: '127.0.0.1',
      port: Number(port),
      method: 'PUT',
      path: '/api/v1/knowledge/items/shutdown/inflight.md',
      agent: false,
      headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) },
    });
    const response = new Promise<number>((resolve, reject) => {
      req.on('response', (res) => {
        res.setEncoding('utf8');
        res.on('data', (d: string) => (responseBody += d));
        res.on('end', () => resolve(res.statusCode ?? 0));
        res.on('error', reject);
      });
      req.on('error', reject);
    });
    req.write(body.slice(0, half));
    await sleep(300); // the server has the headers and half the body: the request is in flight

    child.proc.kill('SIGTERM');
    // Asked until refused, within a deadline: on a loaded machine the signal's handler may run later than a fixed
    // 300 ms after the kill (CI, once: served at 300 ms). A request answered meanwhile is harmless.
    // Each attempt on a connection of its own (agent: false), never one kept alive from the attempt before.
    const newConnectionRefused = (): Promise<boolean> =>
      new Promise((resolve) => {
        const get = http.get({ host: '127.0.0.1', port: Number(port), path: '/api/v1/knowledge', agent: false, headers: { Authorization: `Bearer ${key}` }, timeout: 3000 }, (res) => {
          res.resume();
          res.on('end', () => resolve(false));
        });
        get.on('timeout', () => get.destroy());
        get.on('error', () => resolve(true));
      });
    let refused = false;
    for (const deadline = Date.now() + 5_000; !refused && Date.now() < deadline; ) {
      await sleep(100);
      refused = await newConnectionRefused();
    }
    expect(refused, 'a new connection after SIGTERM must be refused').to.equal(true);
    expect(child.proc.exitCode, 'the server must wait for the request in flight').to.equal(null);

    req.end(body.slice(half));
    expect(await response, responseBody).to.equal(200);
    expect(JSON.parse(responseBody).data.item.content).to.equal('written during shutdown\n');

    const exit = await Promise.race([child.exited, sleep(10_000).then(() => null)]);
    expect(exit, 'the server must exit after SIGTERM').to.not.equal(null);
    expect(exit).to.deep.equal({ code: 0, signal: null });
    expect(child.stderr()).to.not.match(/"level":"error"/);

    // What was acknowledged during shutdown is there after a restart.
    const again = await spawnServe(dataDir);
    const res = await api(`${again.url}/api/v1/knowledge/items/shutdown/inflight.md`, { key });
    expect(res.status).to.equal(200);
    expect((res.body?.data?.item as { content: string }).content).to.equal('written during shutdown\n');
    await fsckStrict(join(dataDir, 'orgs', 'default.git'));
    again.proc.kill('SIGTERM');
    expect(await again.exited).to.deep.equal({ code: 0, signal: null });
  });
});
