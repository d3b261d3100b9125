import { spawn } from 'node:child_process';
import { promises as nodeFs } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { expect } from 'chai';
import { CLI, ROOT, cliServer, closedPort } from './support/cliRun.js';
import { git } from './support/git.js';
import { api, startTestServer } from './support/server.js';
import { tmpDir } from './support/tmp.js';

/**
 * `knowledge-store item diff|rollback|trash|restore|purge|mv|commit|revert|watch` as child processes against a
 * real server on a real port (test/support/cliRun.ts): each the API route it stands for, with the server's own
 * checks and messages, and `watch` across a restart of the server.
 */
describe('cli item commands that change history and structure (against a running server)', function () {
  this.timeout(60_000);
  const cs = cliServer();
  const { ok, fails } = cs;

  it('diff shows the change between two versions as the server makes it; rollback brings an old content back as a new version', async () => {
    await ok(['item', 'put', 'versions/x.md', '-m', 'First'], { input: 'line one\nline two\n' });
    await ok(['item', 'put', 'versions/x.md', '-m', 'Second'], { input: 'line one\nline 2\nline three\n' });
    const diff = await ok(['item', 'diff', 'versions/x.md', '--from', '1', '--to', '2']);
    const fromApi = await api(`${cs.server.url}/api/v1/knowledge/diff/versions/x.md?from=1&to=2`, { key: cs.server.adminKey });
    expect(diff).to.equal(fromApi.body?.data?.diff);
    expect(diff).to.include('-line two\n+line 2\n+line three\n');
    expect(JSON.parse(await ok(['item', 'diff', 'versions/x.md', '--from', '1', '--to', '2', '--json']))).to.deep.equal({ from: 1, to: 2, diff });

    expect(await ok(['item', 'rollback', 'versions/x.md', '1'], { key: cs.writerKey })).to.equal('Rolled back versions/x.md to the content of version 1\n');
    expect(await ok(['item', 'get', 'versions/x.md'])).to.equal('line one\nline two\n');
    const rows = (await ok(['item', 'history', 'versions/x.md'])).trimEnd().split('\n').map((l) => l.split('\t'));
    expect(rows.map((r) => [r[0], r[2]])).to.deep.equal([
      ['3', 'update'],
      ['2', 'update'],
      ['1', 'create'],
    ]);

    await fails(['item', 'diff', 'versions/x.md', '--from', '1', '--to', '9'], 1, /^knowledge-store: Version not found\n$/);
    await fails(['item', 'rollback', 'versions/x.md', '9'], 1, /^knowledge-store: Version not found\n$/);
    await fails(['item', 'diff', 'versions/x.md', '--from', '0', '--to', '2'], 2, /--from <n>' argument '0' is invalid\. must be a version number/);
    await fails(['item', 'diff', 'versions/x.md', '--to', '2'], 2, /required option '--from <n>' not specified/);
    await fails(['item', 'rollback', 'versions/x.md', 'latest'], 2, /'latest' is invalid for argument 'version'/);
  });

  it('trash lists what rm deleted; restore puts it back with its id; purge wants --yes and frees the path (admin keys)', async () => {
    await ok(['item', 'put', 'bin/a.md'], { input: 'keep me\n' });
    const id = (JSON.parse(await ok(['item', 'get', 'bin/a.md', '--json'])) as { id: string }).id;
    await ok(['item', 'rm', 'bin/a.md']);
    const listed = (await ok(['item', 'trash'])).trimEnd().split('\n').map((l) => l.split('\t'));
    const row = listed.find((r) => r[0] === 'bin/a.md');
    expect(row?.[1], 'deletedAt').to.match(/^\d{4}-\d\d-\d\dT/);
    expect(row?.[2], 'deletedBy').to.match(/^key_/);
    const asJson = JSON.parse(await ok(['item', 'trash', '--json'])) as Array<{ path: string; id: string }>;
    expect(asJson.find((i) => i.path === 'bin/a.md')?.id).to.equal(id);
    await fails(['item', 'trash'], 1, /Forbidden/, { env: { KNOWLEDGE_KEY: cs.writerKey } });

    expect(await ok(['item', 'restore', 'bin/a.md'])).to.equal('Restored bin/a.md\n');
    expect(JSON.parse(await ok(['item', 'get', 'bin/a.md', '--json']))).to.include({ id, content: 'keep me\n' });
    await fails(['item', 'restore', 'bin/a.md'], 1, /Knowledge item not found/);

    await ok(['item', 'rm', 'bin/a.md']);
    await fails(['item', 'purge', 'bin/a.md'], 2, /purging bin\/a\.md cannot be undone through the API \(git history keeps its content\): add --yes/);
    expect((await ok(['item', 'trash', '--json'])).includes('"bin/a.md"'), 'still in the trash without --yes').to.equal(true);
    await fails(['item', 'purge', 'bin/a.md', '--yes'], 1, /Forbidden/, { env: { KNOWLEDGE_KEY: cs.writerKey } });
    expect(await ok(['item', 'purge', 'bin/a.md', '--yes'])).to.equal('Purged bin/a.md\n');
    expect((await ok(['item', 'trash', '--json'])).includes('"bin/a.md"')).to.equal(false);
    // The path is free: a new item there has a new id.
    await ok(['item', 'put', 'bin/a.md'], { input: 'new\n' });
    expect((JSON.parse(await ok(['item', 'get', 'bin/a.md', '--json'])) as { id: string }).id).not.to.equal(id);
  });

  it('changes prints what changed since a head, a line per change, and the head to ask from next', async () => {
    const first = (await ok(['item', 'changes'])).trimEnd().split('\n');
    expect(first).to.have.length(1);
    const head = /^head\t([0-9a-f]{40})$/.exec(first[0] as string)?.[1] as string;
    expect(head, first[0]).to.be.a('string');
    await ok(['item', 'put', 'feed/a.md'], { input: 'a' });
    await ok(['item', 'put', 'feed/b.md'], { input: 'b' });
    await ok(['item', 'mv', 'feed/b.md', 'feed/c.md']);
    const rows = (await ok(['item', 'changes', '--since', head])).trimEnd().split('\n').map((l) => l.split('\t'));
    const next = rows.pop() as string[];
    expect(next[0]).to.equal('head');
    // The feed compares the state at `since` with now: b.md, made and moved since, is only created at c.md.
    expect(rows.map((r) => [r[2], r[3]])).to.deep.equal([
      ['created', 'feed/a.md'],
      ['created', 'feed/c.md'],
    ]);
    const json = JSON.parse(await ok(['item', 'changes', '--since', head, '--json'])) as { head: string; changes: Array<{ path: string }> };
    expect(json.head).to.equal(next[1]);
    expect(await ok(['item', 'changes', '--since', next[1] as string])).to.equal(`head\t${next[1]}\n`);
    await fails(['item', 'changes', '--since', 'nope'], 1, /^knowledge-store: since must be the full id of a commit of this organization\n$/);
  });

  it('mv moves an item with its id and history; --if-match guards it; a refusal is the server\'s message', async () => {
    await ok(['item', 'put', 'mv/a.md', '-m', 'Made'], { input: 'moving\n' });
    const before = JSON.parse(await ok(['item', 'get', 'mv/a.md', '--json'])) as { id: string; etag: string };
    await fails(['item', 'mv', 'mv/a.md', 'mv/b.md', '--if-match', '"stale"'], 1, /^knowledge-store: Precondition failed: the item has changed\n$/);
    expect(await ok(['item', 'mv', 'mv/a.md', 'mv/b.md', '--if-match', before.etag, '-m', 'Renamed'])).to.match(/^Moved mv\/a\.md to mv\/b\.md \(ETag "[0-9a-f]+"\)\n$/);
    const after = JSON.parse(await ok(['item', 'get', 'mv/b.md', '--json'])) as { id: string; content: string };
    expect(after).to.include({ id: before.id, content: 'moving\n' });
    const rows = (await ok(['item', 'history', 'mv/b.md'])).trimEnd().split('\n').map((l) => l.split('\t'));
    expect(rows.map((r) => [r[2], r[5]])).to.deep.equal([
      ['move', 'Renamed'],
      ['create', 'Made'],
    ]);
    await fails(['item', 'get', 'mv/a.md'], 1, /Knowledge item not found/);
    await fails(['item', 'mv', 'mv/b.md', 'mv/b.md'], 1, /from and to are the same path: nothing to move/);
    await fails(['item', 'mv', 'mv/b.md'], 2, /missing required argument 'to'/);
  });

  it('commit applies a file\'s operations as one commit; a refusal names the operation and changes nothing', async () => {
    await ok(['item', 'put', 'batch/old.md'], { input: 'old\n' });
    const out = await ok(['item', 'commit', '-m', 'Reorganise'], {
      input: JSON.stringify([
        { op: 'put', path: 'batch/intro.md', content: '# Intro\n' },
        { op: 'move', from: 'batch/old.md', to: 'batch/kept.md' },
      ]),
    });
    const [head, ...lines] = out.trimEnd().split('\n');
    const commitId = /^Committed ([0-9a-f]{40}) \(2 operations\)$/.exec(head ?? '')?.[1];
    expect(commitId, head).to.be.a('string');
    expect(lines).to.deep.equal(['put\tbatch/intro.md\tchanged', 'move\tbatch/kept.md']);
    for (const path of ['batch/intro.md', 'batch/kept.md']) {
      const versions = JSON.parse(await ok(['item', 'history', path, '--json'])) as Array<{ commitId: string; message: string }>;
      expect(versions[0]).to.include({ commitId, message: 'Reorganise' });
    }

    // The object form from --file, its own message; an operation that changes nothing is said so.
    const dir = await tmpDir('ks-cli-commit');
    try {
      const file = join(dir.dir, 'ops.json');
      await nodeFs.writeFile(file, JSON.stringify({ message: 'From a file', operations: [{ op: 'put', path: 'batch/intro.md', content: '# Intro\n' }] }));
      expect(await ok(['item', 'commit', '--file', file])).to.equal('Nothing changed (no commit)\nput\tbatch/intro.md\tunchanged\n');
      await nodeFs.writeFile(file, JSON.stringify({ message: 'From a file', operations: [{ op: 'put', path: 'batch/new.md', content: 'n' }] }));
      const json = JSON.parse(await ok(['item', 'commit', '--file', file, '--json'])) as { commitId: string; items: Array<{ op: string; item: { path: string } }> };
      expect(json.items.map((i) => [i.op, i.item.path])).to.deep.equal([['put', 'batch/new.md']]);
      expect((JSON.parse(await ok(['item', 'history', 'batch/new.md', '--json'])) as Array<{ message: string }>)[0]?.message).to.equal('From a file');
    } finally {
      await dir.cleanup();
    }

    // Refused: the server's message, which operation it was, exit 1, and nothing written (the first put is not there).
    const refused = [
      { op: 'put', path: 'batch/never.md', content: 'x' },
      { op: 'delete', path: 'batch/missing.md' },
    ];
    const run = await fails(['item', 'commit'], 1, /^knowledge-store: Knowledge item not found \(operation 1: delete batch\/missing\.md; nothing was changed\)\n$/, { input: JSON.stringify(refused) });
    expect(run.stdout).to.equal('');
    await fails(['item', 'get', 'batch/never.md'], 1, /Knowledge item not found/);
    const asJson = await fails(['item', 'commit', '--json'], 1, /./, { input: JSON.stringify(refused) });
    expect(JSON.parse(asJson.stderr)).to.include({ code: 'API_ERROR', status: 404, failedOperation: 1 });
    // A writer may not delete: the server's 403, with the operation named.
    await fails(['item', 'commit'], 1, /Forbidden.*\(operation 0: delete batch\/kept\.md; nothing was changed\)/, { env: { KNOWLEDGE_KEY: cs.writerKey }, input: '[{"op":"delete","path":"batch/kept.md"}]' });

    // Not a request at all: exit 2, nothing sent.
    await fails(['item', 'commit'], 2, /^knowledge-store: stdin is not JSON: /, { input: 'not json' });
    await fails(['item', 'commit'], 2, /stdin holds no operation/, { input: '{"operations": []}' });
    await fails(['item', 'commit'], 2, /must hold a JSON array of operations, or an object with "operations"/, { input: '{"ops": []}' });
    await fails(['item', 'commit'], 2, /each operation in stdin must be a JSON object/, { input: '[1]' });
    await fails(['item', 'commit'], 2, /"message" in stdin must be a string/, { input: '{"message": 3, "operations": [{"op": "delete", "path": "a.md"}]}' });
  });

  it('revert undoes a commit, or a key\'s changes since a time, leaving items others changed since unless --force', async () => {
    await ok(['item', 'put', 'undo/one.md', '-m', 'One'], { input: 'one\n' });
    await ok(['item', 'put', 'undo/one.md', '-m', 'Oops'], { input: 'clobbered\n' });
    const oops = (JSON.parse(await ok(['item', 'history', 'undo/one.md', '--json'])) as Array<{ commitId: string }>)[0]?.commitId as string;
    const reverted = await ok(['item', 'revert', oops]);
    expect(reverted).to.match(/^Reverted 1 item in [0-9a-f]{40}\nreverted\tundo\/one\.md\n$/);
    expect(await ok(['item', 'get', 'undo/one.md'])).to.equal('one\n');

    // An agent's key writes two items; an admin then changes one of them.
    const agentKey = await cs.server.key('writer', undefined, 'cli-revert-agent');
    const keys = await api(`${cs.server.url}/api/v1/knowledge/keys`, { key: cs.server.adminKey });
    const agentId = (keys.body?.data?.keys as Array<{ id: string; name: string }>).find((k) => k.name === 'cli-revert-agent')?.id as string;
    const since = new Date(Date.now() - 1000).toISOString();
    await ok(['item', 'put', 'undo/a.md'], { key: agentKey, input: 'agent a\n' });
    await ok(['item', 'put', 'undo/b.md'], { key: agentKey, input: 'agent b\n' });
    await ok(['item', 'put', 'undo/b.md'], { input: 'fixed by an admin\n' });
    const partial = (await ok(['item', 'revert', '--by', agentId, '--since', since])).trimEnd().split('\n');
    expect(partial[0]).to.match(/^Reverted 1 item in [0-9a-f]{40}$/);
    expect(partial.slice(1, 2)).to.deep.equal(['reverted\tundo/a.md']);
    expect(partial[2]).to.match(/^conflict\tundo\/b\.md\tchanged after the reverted change by /);
    expect(partial[3]).to.equal('Left alone: 1 conflict (--force to overwrite them)');
    await fails(['item', 'get', 'undo/a.md'], 1, /Knowledge item not found/);
    expect(await ok(['item', 'get', 'undo/b.md'])).to.equal('fixed by an admin\n');
    const json = JSON.parse(await ok(['item', 'revert', '--by', agentId, '--since', since, '--json'])) as { commitId: string | null; conflicts: Array<{ path: string }> };
    expect(json).to.deep.include({ commitId: null });
    expect(json.conflicts.map((c) => c.path)).to.deep.equal(['undo/b.md']);
    expect(await ok(['item', 'revert', '--by', agentId, '--since', since, '--force'])).to.match(/^Reverted 1 item in [0-9a-f]{40}\nreverted\tundo\/b\.md\n$/);
    await fails(['item', 'get', 'undo/b.md'], 1, /Knowledge item not found/);

    // The server's refusals, and the command lines that are not a revert at all.
    await fails(['item', 'revert', 'f'.repeat(40)], 1, /commitId must be the full id of a commit on main of this organization/);
    await fails(['item', 'revert', oops], 1, /Forbidden/, { env: { KNOWLEDGE_KEY: agentKey } });
    await fails(['item', 'revert'], 2, /give the commit to revert, or --by <keyId> and --since <time>/);
    await fails(['item', 'revert', oops, '--by', agentId, '--since', since], 2, /give either a commit, or --by and --since, not both/);
    await fails(['item', 'revert', '--by', agentId], 2, /--by and --since go together/);
  });
});

describe('cli item watch (against a running server, restarted)', function () {
  this.timeout(90_000);

  /** `item watch` as a child process that keeps running: its output so far, and its exit. */
  function watcher(args: string[], env: Record<string, string>): { out: () => string; err: () => string; exit: Promise<number | null>; kill: () => void } {
    const child = spawn(process.execPath, [CLI, 'item', 'watch', ...args], { cwd: ROOT, env: { ...process.env, LOG_LEVEL: '', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (err += d));
    const exit = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
    return { out: () => out, err: () => err, exit, kill: () => child.kill() };
  }

  async function until(what: string, ok: () => boolean, ms = 20_000): Promise<void> {
    const deadline = Date.now() + ms;
    while (!ok()) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  it('prints each change as it is committed, goes on across a server restart without a gap or a duplicate, stops at --count', async () => {
    const dir = await tmpDir('ks-cli-watch');
    let server = await startTestServer({ dataDir: dir.dir });
    const key = server.adminKey;
    const port = Number(new URL(server.url).port);
    const base = `${server.url}/api/v1/knowledge`;
    const head = (await api(`${base}/changes`, { key })).body?.data?.head as string;
    const watch = watcher(['--since', head, '--count', '4'], { KNOWLEDGE_URL: server.url, KNOWLEDGE_KEY: key });
    try {
      for (const path of ['w/a.md', 'w/b.md']) expect((await api(`${base}/items/${path}`, { key, method: 'PUT', body: { content: path } })).status).to.equal(200);
      await until('the first two events', () => watch.out().split('\n').length > 2);
      await server.close();
      server = await startTestServer({ dataDir: dir.dir, config: { port } });
      // Committed while the watcher waits to connect again (2 s, the server's retry): resumed from its last id, not lost.
      expect((await api(`${base}/items/w/c.md`, { key, method: 'PUT', body: { content: 'c' } })).status).to.equal(200);
      expect((await api(`${base}/move`, { key, method: 'POST', body: { from: 'w/c.md', to: 'w/d.md' } })).status).to.equal(200);
      expect(await watch.exit, watch.err()).to.equal(0);

      const commits = (await git(['log', '--format=%H', '-4', 'main'], { gitdir: server.gitdir() })).trim().split('\n').reverse();
      const rows = watch.out().trimEnd().split('\n').map((l) => l.split('\t'));
      expect(rows.map((r) => [r[1], r[2], r[3]])).to.deep.equal([
        [commits[0]?.slice(0, 12), 'created', 'w/a.md'],
        [commits[1]?.slice(0, 12), 'created', 'w/b.md'],
        [commits[2]?.slice(0, 12), 'created', 'w/c.md'],
        [commits[3]?.slice(0, 12), 'deleted', 'w/c.md'],
        [commits[3]?.slice(0, 12), 'created', 'w/d.md'],
      ]);
      expect(watch.err()).to.match(/the server ended the stream \(server-stopping\); connecting again in \d+ s/);
      expect(watch.err()).to.include(`connected again, going on after ${commits[1]}`);
    } finally {
      watch.kill();
      await server.close();
      await dir.cleanup();
    }
  });

  it('a connection that goes quiet (not even a heartbeat) for --idle seconds is given up and made again', async () => {
    // A stand-in server: the first stream says it is connected, then nothing; the second sends one event.
    const event = { organizationId: 'default', commitId: 'c'.repeat(40), timestamp: '2026-12-02T00:00:00.000Z', changes: [{ id: 'i', path: 'q/a.md', change: 'created', commitId: 'c'.repeat(40), timestamp: '2026-12-02T00:00:00.000Z' }] };
    const seen: Array<string | undefined> = [];
    const quiet = createServer((req, res) => {
      seen.push(req.headers['last-event-id'] as string | undefined);
      res.writeHead(200, { 'Content-Type': 'text/event-stream; charset=utf-8' });
      if (seen.length === 1) res.write('retry: 100\n: connected\n\n');
      else res.end(`retry: 100\n: connected\n\nid: ${event.commitId}\ndata: ${JSON.stringify(event)}\n\n`);
    });
    await new Promise<void>((resolve) => quiet.listen(0, '127.0.0.1', resolve));
    try {
      const started = Date.now();
      const watch = watcher(['--since', 'b'.repeat(40), '--idle', '1', '--count', '1'], { KNOWLEDGE_URL: `http://127.0.0.1:${(quiet.address() as AddressInfo).port}`, KNOWLEDGE_KEY: 'ks_default_x' });
      expect(await watch.exit, watch.err()).to.equal(0);
      expect(watch.out()).to.equal(`2026-12-02T00:00:00.000Z\t${'c'.repeat(12)}\tcreated\tq/a.md\n`);
      expect(watch.err()).to.match(/^knowledge-store: nothing came for 1 s, not even a heartbeat; connecting again in 0\.1 s\nknowledge-store: connected again/);
      // Resumed where it was: the --since it started from, as nothing came on the first connection.
      expect(seen).to.deep.equal(['b'.repeat(40), 'b'.repeat(40)]);
      expect(Date.now() - started).to.be.greaterThan(1000);
    } finally {
      quiet.closeAllConnections();
      await new Promise((resolve) => quiet.close(resolve));
    }
  });

  it('a slow-reader end (the server dropping a client that stopped reading) connects again from the last event printed: no gap, no duplicate', async () => {
    // A stand-in: the first stream sends one event, then ends it as the server ends a client that stopped reading;
    // the next must ask from that id, and gets the commit after it.
    const at = (c: string, path: string) => ({ organizationId: 'default', commitId: c.repeat(40), timestamp: '2026-12-02T00:00:00.000Z', changes: [{ id: 'i', path, change: 'created', commitId: c.repeat(40), timestamp: '2026-12-02T00:00:00.000Z' }] });
    const [first, second] = [at('a', 's/one.md'), at('b', 's/two.md')];
    const asked: Array<string | undefined> = [];
    const ending = createServer((req, res) => {
      const from = req.headers['last-event-id'];
      asked.push(typeof from === 'string' ? from : undefined);
      res.writeHead(200, { 'Content-Type': 'text/event-stream' });
      if (asked.length === 1) {
        res.end(`retry: 100\nid: ${first.commitId}\ndata: ${JSON.stringify(first)}\n\nevent: end\ndata: ${JSON.stringify({ reason: 'slow-reader', lastEventId: first.commitId })}\n\n`);
      } else if (from === first.commitId) res.end(`id: ${second.commitId}\ndata: ${JSON.stringify(second)}\n\n`);
      else res.end(`id: ${first.commitId}\ndata: ${JSON.stringify(first)}\n\n`); // asked from elsewhere: a duplicate the test sees
    });
    await new Promise<void>((resolve) => ending.listen(0, '127.0.0.1', resolve));
    try {
      const watch = watcher(['--count', '2'], { KNOWLEDGE_URL: `http://127.0.0.1:${(ending.address() as AddressInfo).port}`, KNOWLEDGE_KEY: 'ks_default_x' });
      expect(await watch.exit, watch.err()).to.equal(0);
      expect(watch.out()).to.equal(`2026-12-02T00:00:00.000Z\t${'a'.repeat(12)}\tcreated\ts/one.md\n2026-12-02T00:00:00.000Z\t${'b'.repeat(12)}\tcreated\ts/two.md\n`);
      expect(watch.err()).to.match(/^knowledge-store: the server ended the stream \(slow-reader\); connecting again in 0\.1 s\n/);
      expect(asked).to.deep.equal([undefined, first.commitId]);
    } finally {
      await new Promise((resolve) => ending.close(resolve));
    }
  });

  it('once connected, a server answering 503 or 429 (restarting, a slot not yet freed) is waited for, not a failure', async () => {
    // A stand-in: the first stream ends at once, the next two attempts are refused as a restarting server would be.
    const event = { organizationId: 'default', commitId: 'e'.repeat(40), timestamp: '2026-12-02T00:00:00.000Z', changes: [{ id: 'i', path: 'r/a.md', change: 'created', commitId: 'e'.repeat(40), timestamp: '2026-12-02T00:00:00.000Z' }] };
    let attempts = 0;
    const flaky = createServer((_req, res) => {
      attempts++;
      if (attempts === 1) res.writeHead(200, { 'Content-Type': 'text/event-stream' }).end('retry: 100\n: connected\n\n');
      else if (attempts === 2) res.writeHead(503, { 'Content-Type': 'application/json' }).end('{"success":false,"error":"Server is stopping"}');
      else if (attempts === 3) res.writeHead(429, { 'Content-Type': 'application/json' }).end('{"success":false,"error":"Too many event streams"}');
      else res.writeHead(200, { 'Content-Type': 'text/event-stream' }).end(`id: ${event.commitId}\ndata: ${JSON.stringify(event)}\n\n`);
    });
    await new Promise<void>((resolve) => flaky.listen(0, '127.0.0.1', resolve));
    try {
      const watch = watcher(['--count', '1'], { KNOWLEDGE_URL: `http://127.0.0.1:${(flaky.address() as AddressInfo).port}`, KNOWLEDGE_KEY: 'ks_default_x' });
      expect(await watch.exit, watch.err()).to.equal(0);
      expect(watch.out()).to.equal(`2026-12-02T00:00:00.000Z\t${'e'.repeat(12)}\tcreated\tr/a.md\n`);
      const notes = watch.err().trimEnd().split('\n');
      expect(notes.slice(0, 3)).to.deep.equal([
        'knowledge-store: the stream closed; connecting again in 0.1 s',
        'knowledge-store: Server is stopping; connecting again in 0.2 s',
        'knowledge-store: Too many event streams; connecting again in 0.4 s',
      ]);
      expect(attempts).to.equal(4);
    } finally {
      await new Promise((resolve) => flaky.close(resolve));
    }
  });

  it('--json prints each commit as one line of JSON; refusals and a server not there end it with exit 1', async () => {
    const server = await startTestServer();
    const key = server.adminKey;
    const base = `${server.url}/api/v1/knowledge`;
    try {
      const head = (await api(`${base}/changes`, { key })).body?.data?.head as string;
      const json = watcher(['--since', head, '--count', '1', '--json'], { KNOWLEDGE_URL: server.url, KNOWLEDGE_KEY: key });
      await api(`${base}/items/j/a.md`, { key, method: 'PUT', body: { content: 'a' } });
      expect(await json.exit, json.err()).to.equal(0);
      const lines = json.out().trimEnd().split('\n');
      expect(lines).to.have.length(1);
      const event = JSON.parse(lines[0] as string) as { commitId: string; timestamp: string; changes: Array<Record<string, unknown>> };
      const item = (await api(`${base}/items/j/a.md`, { key })).body?.data?.item as { id: string };
      expect(event.changes).to.deep.equal([{ id: item.id, path: 'j/a.md', change: 'created', commitId: event.commitId, timestamp: event.timestamp }]);

      // A key revoked while it listens: the server ends its stream, and the watch ends with exit 1 (not a wait).
      const created = (await api(`${base}/keys`, { key, method: 'POST', body: { name: 'cli-watch-reader', role: 'reader' } })).body?.data as { secret: string; key: { id: string } };
      const from = (await api(`${base}/changes`, { key })).body?.data?.head as string;
      const revoked = watcher(['--since', from], { KNOWLEDGE_URL: server.url, KNOWLEDGE_KEY: created.secret });
      await api(`${base}/items/j/seen.md`, { key, method: 'PUT', body: { content: 'seen' } });
      await until('the reader\'s first event', () => revoked.out().includes('j/seen.md'));
      expect((await api(`${base}/keys/${created.key.id}`, { key, method: 'DELETE' })).status).to.equal(200);
      // The stream learns of it at its next commit or heartbeat once the key store has noticed (about a second).
      for (let i = 0; i < 20; i++) {
        const ended = await Promise.race([revoked.exit.then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), 500))]);
        if (ended) break;
        await api(`${base}/items/j/r${i}.md`, { key, method: 'PUT', body: { content: 'r' } });
      }
      expect(await revoked.exit, revoked.out()).to.equal(1);
      expect(revoked.err()).to.equal('knowledge-store: the key was revoked while it listened\n');

      const unknown = watcher(['--since', 'f'.repeat(40)], { KNOWLEDGE_URL: server.url, KNOWLEDGE_KEY: key });
      expect(await unknown.exit).to.equal(1);
      expect(unknown.err()).to.equal('knowledge-store: since must be the full id of a commit of this organization\n');
      const badKey = watcher([], { KNOWLEDGE_URL: server.url, KNOWLEDGE_KEY: 'ks_default_nope' });
      expect(await badKey.exit).to.equal(1);
      expect(badKey.err()).to.equal('knowledge-store: Invalid API key\n');
      // Something else at the URL, answering 200 with a page: refused, not read as a stream that never speaks.
      const other = createServer((_req, res) => res.writeHead(200, { 'Content-Type': 'text/html' }).end('<p>hello</p>'));
      await new Promise<void>((resolve) => other.listen(0, '127.0.0.1', resolve));
      try {
        const wrong = watcher([], { KNOWLEDGE_URL: `http://127.0.0.1:${(other.address() as AddressInfo).port}`, KNOWLEDGE_KEY: key });
        expect(await wrong.exit).to.equal(1);
        expect(wrong.err()).to.match(/^knowledge-store: unexpected answer 200, text\/html \(not the knowledge store's event stream\?\)\n$/);
      } finally {
        await new Promise((resolve) => other.close(resolve));
      }
      const nobody = watcher([], { KNOWLEDGE_URL: `http://127.0.0.1:${await closedPort()}`, KNOWLEDGE_KEY: key });
      expect(await nobody.exit).to.equal(1);
      expect(nobody.err()).to.match(/cannot reach http:\/\/127\.0\.0\.1:\d+: connection refused/);
    } finally {
      await server.close();
    }
  });
});
