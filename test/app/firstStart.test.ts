import net from 'node:net';
import { existsSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { expect } from 'chai';
import { ensureBuilt, killAllChildren, runCli, spawnCli, spawnServe } from '../support/child.js';
import { api } from '../support/server.js';
import { tmpDir } from '../support/tmp.js';

/**
 * Issue 16: the first start binds its port before it creates anything, so a busy port loses no admin key,
 * and a later start says how to replace a lost one. Real processes, a real listener holding the port.
 */

const LIST = '/api/v1/knowledge';

/** A real listener on a free port of 127.0.0.1, as another program would hold it. */
async function occupyPort(): Promise<{ port: number; release(): Promise<void> }> {
  const server = net.createServer((socket) => socket.destroy());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  return { port, release: () => new Promise((resolve) => server.close(() => resolve())) };
}

describe('serve: the first start binds its port before it creates anything', function () {
  this.timeout(60_000);
  let tmp: { dir: string; cleanup: () => Promise<void> };

  before(async () => {
    await ensureBuilt();
    tmp = await tmpDir('ks-first-start');
  });
  after(async () => {
    await killAllChildren();
    await tmp.cleanup();
  });

  it('a busy port: exit 1 with a clear message, no key printed, nothing created; then the first start on it prints the key', async () => {
    const dataDir = join(tmp.dir, 'data');
    const held = await occupyPort();
    const { out, exited } = spawnCli(['serve', '--host', '127.0.0.1', '--port', String(held.port), '--data-dir', dataDir], { LOG_LEVEL: 'info' });
    const { code } = await exited;
    expect(code, out.stderr).to.equal(1);
    expect(out.stderr).to.include(
      `knowledge-store: Cannot listen on 127.0.0.1:${held.port}: the port is in use by another process. Stop it, or choose another port (PORT or --port). Nothing was created or changed.`,
    );
    expect(out.stdout).to.not.include('Admin API key');
    expect(existsSync(dataDir), 'the data directory was created').to.equal(false);

    // The same command once the port is free is the first start: it prints the key, which works.
    await held.release();
    const server = await spawnServe(dataDir, 15_000, {}, ['--port', String(held.port)]);
    expect(server.url).to.equal(`http://127.0.0.1:${held.port}`);
    expect(server.adminKey).to.match(/^ks_/);
    expect((await api(`${server.url}${LIST}`, { key: server.adminKey })).status).to.equal(200);
    expect((await server.kill('SIGTERM')).code).to.equal(0);
  });

  it('a busy port on an existing data directory changes nothing in it', async () => {
    const dataDir = join(tmp.dir, 'existing');
    const first = await spawnServe(dataDir);
    await first.kill('SIGTERM');
    const before = (await readdir(dataDir)).sort();
    const held = await occupyPort();
    const run = await runCli(['serve', '--host', '127.0.0.1', '--port', String(held.port), '--data-dir', dataDir]);
    await held.release();
    expect(run.code).to.equal(1);
    expect(run.stderr).to.include('the port is in use by another process');
    expect((await readdir(dataDir)).sort()).to.deep.equal(before);
  });

  it('a later start prints no key and logs the recovery; `key create --role admin` makes a working one', async () => {
    const dataDir = join(tmp.dir, 'lost-key');
    const first = await spawnServe(dataDir);
    expect(first.adminKey).to.match(/^ks_/);
    await first.kill('SIGTERM');

    const again = await spawnServe(dataDir, 15_000, { LOG_LEVEL: 'info' });
    expect(again.adminKey).to.equal(undefined);
    expect(again.stdout()).to.not.include('Admin API key');
    const line = again.stderr().split('\n').find((l) => l.includes('"recovery"'));
    expect(line, again.stderr()).to.be.a('string');
    const entry = JSON.parse(line as string) as { level: string; msg: string; recovery: string };
    expect(entry.level).to.equal('info');
    expect(entry.msg).to.equal('the admin key is printed on the first start only; if it is lost, make a new one');
    expect(entry.recovery).to.equal(`knowledge-store key create --org default --role admin --data-dir ${dataDir}`);

    // The recovery, exactly as logged, while the server runs: its key is served within a second.
    const made = await runCli(entry.recovery.split(' ').slice(1));
    expect(made.code, made.stderr).to.equal(0);
    const key = made.stdout.trim();
    expect(key).to.match(/^ks_/);
    const res = await api(`${again.url}/api/v1/knowledge/keys`, { key });
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
    await again.kill('SIGTERM');
  });
});
