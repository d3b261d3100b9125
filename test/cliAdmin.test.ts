import { expect } from 'chai';
import { cliServer, closedPort } from './support/cliRun.js';
import { api } from './support/server.js';

/**
 * `knowledge-store folder ls|get|set` and `webhook add|ls|rm|deliveries` as child processes against a real server
 * on a real port (test/support/cliRun.ts): each the admin route it stands for, refused with the server's own
 * message (exit 1), and a wrong command line refused before anything is sent (exit 2).
 */
describe('cli folder commands (against a running server)', function () {
  this.timeout(60_000);
  const cs = cliServer();
  const { ok, fails } = cs;

  it('set puts a rule in effect at once: get and ls show it, a reader key no longer reads under it', async () => {
    const reader = await cs.server.key('reader');
    await ok(['item', 'put', 'board/minutes.md'], { input: 'secret plans\n' });
    expect(await ok(['item', 'get', 'board/minutes.md'], { key: reader })).to.equal('secret plans\n');
    expect(await ok(['folder', 'ls'])).to.equal('No folder rules.\n');
    expect(await ok(['folder', 'get', 'board/'])).to.equal('board/\tinherit\tinherit\t-\n');

    expect(await ok(['folder', 'set', 'board/', '--read', 'knowledge:admin'])).to.equal('Set board/: read knowledge:admin, write inherit\n');
    const line = await ok(['folder', 'get', 'board/']);
    expect(line).to.match(/^board\/\tknowledge:admin\tinherit\t\d{4}-\d\d-\d\dT[\d:.]+Z\n$/);
    expect(await ok(['folder', 'get', 'board']), 'with or without the slash').to.equal(line);
    expect(await ok(['folder', 'ls'])).to.equal(line);
    const fromApi = await api(`${cs.server.url}/api/v1/knowledge/folders`, { key: cs.server.adminKey });
    expect(JSON.parse(await ok(['folder', 'ls', '--json']))).to.deep.equal(fromApi.body?.data?.folders);
    expect(JSON.parse(await ok(['folder', 'get', 'board/', '--json']))).to.deep.equal((fromApi.body?.data?.folders as unknown[])[0]);

    await fails(['item', 'get', 'board/minutes.md'], 1, /^knowledge-store: Knowledge item not found\n$/, { env: { KNOWLEDGE_KEY: reader } });
    const hidden = await api(`${cs.server.url}/api/v1/knowledge/items/board/minutes.md`, { key: reader });
    expect(hidden.status).to.equal(404);
    expect(await ok(['item', 'get', 'board/minutes.md']), 'an admin still reads it').to.equal('secret plans\n');
    // Cleared, so that the next test starts with no rule.
    await ok(['folder', 'set', 'board/', '--read', 'inherit']);
  });

  it('an option left out keeps its value; inherit for both removes the rule, and the reader reads again', async () => {
    const reader = await cs.server.key('reader');
    await ok(['item', 'put', 'plans/q1.md'], { input: 'q1\n' });
    await ok(['folder', 'set', 'plans/', '--read', 'knowledge:admin']);
    expect(await ok(['folder', 'set', 'plans', '--write', 'knowledge:admin'])).to.equal('Set plans/: read knowledge:admin, write knowledge:admin\n');
    await fails(['item', 'put', 'plans/q2.md'], 1, /^knowledge-store: Forbidden — requires knowledge:admin permission\n$/, { env: { KNOWLEDGE_KEY: cs.writerKey }, input: 'q2\n' });
    expect(await ok(['folder', 'set', 'plans/', '--read', 'inherit', '--write', 'inherit'])).to.equal('No rule for plans/ (read and write inherit)\n');
    expect(await ok(['folder', 'ls'])).to.equal('No folder rules.\n');
    expect(await ok(['item', 'get', 'plans/q1.md'], { key: reader })).to.equal('q1\n');
  });

  it('a writer key is refused with the server\'s message (exit 1), and the rule stays as it was', async () => {
    await ok(['folder', 'set', 'hr/', '--read', 'knowledge:write']);
    const before = await ok(['folder', 'get', 'hr/']);
    await fails(['folder', 'set', 'hr/', '--read', 'inherit'], 1, /^knowledge-store: Forbidden — requires knowledge:admin permission\n$/, { env: { KNOWLEDGE_KEY: cs.writerKey } });
    await fails(['folder', 'ls'], 1, /^knowledge-store: Forbidden — requires knowledge:admin permission\n$/, { env: { KNOWLEDGE_KEY: cs.writerKey } });
    const run = await fails(['folder', 'get', 'hr/', '--json'], 1, /./, { env: { KNOWLEDGE_KEY: cs.writerKey } });
    expect(JSON.parse(run.stderr)).to.deep.equal({ error: 'Forbidden — requires knowledge:admin permission', code: 'API_ERROR', status: 403 });
    expect(await ok(['folder', 'get', 'hr/'])).to.equal(before);
    // What only the server can tell, it tells: a folder name it does not take.
    await fails(['folder', 'get', 'HR/'], 1, /^knowledge-store: Invalid path: only lowercase letters/);
  });

  it('a wrong command line exits 2 and sends nothing (no server listens at the URL)', async () => {
    const env = { KNOWLEDGE_URL: `http://127.0.0.1:${await closedPort()}` };
    await fails(['folder', 'set', 'x/', '--read', 'everyone'], 2, /option '--read <permission>' argument 'everyone' is invalid\. Allowed choices are inherit, knowledge:read, knowledge:write, knowledge:admin/, { env });
    await fails(['folder', 'set', 'x/', '--write', 'knowledge:read'], 2, /option '--write <permission>' argument 'knowledge:read' is invalid/, { env });
    await fails(['folder', 'set', 'x/'], 2, /^knowledge-store: give --read <permission>, --write <permission> or both\n$/, { env });
    await fails(['folder', 'set', '--read', 'inherit'], 2, /missing required argument 'folder\/'/, { env });
    await fails(['folder', 'get', '/'], 2, /^knowledge-store: give a folder, e.g\. docs\/\n$/, { env });
    await fails(['folder', 'get'], 2, /missing required argument/, { env });
    // The same lines, well formed, do try the URL: the refusals above were the command line's.
    await fails(['folder', 'set', 'x/', '--read', 'inherit'], 1, /cannot reach .*connection refused/, { env });
  });
});
