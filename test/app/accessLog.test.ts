import { join } from 'node:path';
import { expect } from 'chai';
import { ensureBuilt, killAllChildren, spawnServe, type ServeChild } from '../support/child.js';
import { tmpDir } from '../support/tmp.js';
import { sleep } from '../support/sleep.js';

/**
 * The server's access lines are buffered (src/common/logBuffer.ts, README "Logs"): a line comes out within the
 * buffer's time bound while the server runs, and every line is there after a graceful stop. A real process, its
 * stderr a pipe.
 */

const ITEM = '/api/v1/knowledge/items/nothing-here.md';

/** The request ids of the access lines in `stderr`. */
function loggedIds(stderr: string): string[] {
  return stderr
    .split('\n')
    .filter((l) => l.includes('"msg":"request"'))
    .map((l) => (JSON.parse(l) as { requestId: string }).requestId);
}

async function get(server: ServeChild, requestId: string): Promise<number> {
  const res = await fetch(`${server.url}${ITEM}`, { headers: { Authorization: `Bearer ${server.adminKey ?? ''}`, 'X-Request-Id': requestId } });
  await res.arrayBuffer();
  return res.status;
}

describe('serve: access lines, buffered', function () {
  this.timeout(60_000);
  let tmp: { dir: string; cleanup: () => Promise<void> };

  before(async () => {
    await ensureBuilt();
    tmp = await tmpDir('ks-access-log');
  });
  after(async () => {
    await killAllChildren();
    await tmp.cleanup();
  });

  it('a line comes out while the server runs, without more requests to push it (time bound: 100 ms)', async () => {
    const server = await spawnServe(join(tmp.dir, 'running'), 15_000, { LOG_LEVEL: 'info' });
    expect(await get(server, 'alone-1')).to.equal(404);
    const sent = Date.now();
    while (!loggedIds(server.stderr()).includes('alone-1') && Date.now() - sent < 5_000) await sleep(10);
    const waited = Date.now() - sent;
    expect(loggedIds(server.stderr()), server.stderr()).to.include('alone-1');
    // The bound is 100 ms; the margin is for a busy machine (a line that waits for the stop fails above).
    expect(waited).to.be.below(2_000);
    expect(server.proc.exitCode).to.equal(null);
    await server.kill('SIGTERM');
  });

  it('after a graceful stop (SIGTERM) every request has its line, once', async () => {
    const server = await spawnServe(join(tmp.dir, 'stopped'), 15_000, { LOG_LEVEL: 'info' });
    const ids = Array.from({ length: 400 }, (_, i) => `stop-${i}`);
    for (let i = 0; i < ids.length; i += 20) await Promise.all(ids.slice(i, i + 20).map((id) => get(server, id)));
    expect(await server.kill('SIGTERM')).to.deep.equal({ code: 0, signal: null });
    const logged = loggedIds(server.stderr());
    expect(logged.filter((id) => id.startsWith('stop-')).sort()).to.deep.equal([...ids].sort());
    expect(server.stderr()).to.include('"msg":"shutting down"');
  });
});
