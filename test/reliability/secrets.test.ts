import { createHash } from 'node:crypto';
import { watch, type FSWatcher } from 'node:fs';
import { readFile, readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { expect } from 'chai';
import { ensureBuilt, runCli, spawnServe, type ServeChild } from '../support/child.js';
import { git } from '../support/git.js';
import { sleep } from '../support/sleep.js';
import { tmpDir } from '../support/tmp.js';
import { KEY_FILES, keyFilesText, storedKeyRecords } from '../support/keyFiles.js';

/**
 * Keys (see README, Reliability): a revoked key is refused on its very next request, whether the CLI or the API
 * revoked it; keys and their hashes never appear in logs (at debug level, which logs every request), in
 * error or other responses, in CLI output, in the server's repository, or in a clone; last-used times
 * are recorded without a write to keys.json per request.
 */

const ADMIN_LINE = /^Admin API key for organization "default": (ks_\S+)$/m;

const sha256 = (s: string): string => createHash('sha256').update(s, 'utf8').digest('hex');
const basic = (secret: string): string => Buffer.from(`x:${secret}`, 'utf8').toString('base64');

interface Recorded {
  label: string;
  status: number;
  headers: string;
  body: string;
  /** A secret this response is meant to carry (POST /keys shows the new key's secret once). */
  carries?: string;
}

describe('reliability: keys and secrets (revocation, no leaks, last-used without writes)', function () {
  this.timeout(120_000);

  let tmp: { dir: string; cleanup: () => Promise<void> };
  let cloneTmp: { dir: string; cleanup: () => Promise<void> };
  let server: ServeChild;
  let base: string;
  let admin: string;
  /** Every secret this test has seen: valid, unknown, malformed-but-plausible, revoked. */
  const secrets = new Set<string>();
  const responses: Recorded[] = [];
  const cliOutputs: Array<{ label: string; text: string; carries?: string }> = [];
  /** The url git wrote into the first clone's .git/config from its own command line. */
  let remoteUrl = '';

  /** One request, recorded for the leak checks. */
  const call = async (
    label: string,
    path: string,
    options: { method?: string; headers?: Record<string, string>; body?: string; carries?: string } = {},
  ): Promise<Recorded> => {
    const res = await fetch(`${base}${path}`, { method: options.method ?? 'GET', headers: options.headers, body: options.body, redirect: 'manual' });
    const body = await res.text();
    const headers = [...res.headers].map(([k, v]) => `${k}: ${v}`).join('\n');
    const recorded = { label, status: res.status, headers, body, carries: options.carries };
    responses.push(recorded);
    return recorded;
  };
  const bearer = (key: string): Record<string, string> => ({ Authorization: `Bearer ${key}` });
  const json = (key: string): Record<string, string> => ({ Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' });

  const cli = async (label: string, args: string[], carries?: string): Promise<{ code: number | null; stdout: string; stderr: string }> => {
    const r = await runCli([...args, '--data-dir', tmp.dir]);
    cliOutputs.push({ label, text: `${r.stdout}\n${r.stderr}`, carries });
    return r;
  };
  /** A key made by the CLI (`key create --json`), as an operator would. */
  const cliKey = async (role: string, name: string): Promise<{ id: string; secret: string }> => {
    const r = await runCli(['key', 'create', '--org', 'default', '--role', role, '--name', name, '--json', '--data-dir', tmp.dir]);
    expect(r.code, r.stderr).to.equal(0);
    const parsed = JSON.parse(r.stdout) as { keyId: string; key: string };
    cliOutputs.push({ label: `key create ${name}`, text: `${r.stdout}\n${r.stderr}`, carries: parsed.key });
    secrets.add(parsed.key);
    return { id: parsed.keyId, secret: parsed.key };
  };
  /** A key made through the API (`POST /keys`). */
  const apiKey = async (role: string, name: string): Promise<{ id: string; secret: string }> => {
    const res = await fetch(`${base}/api/v1/knowledge/keys`, { method: 'POST', headers: json(admin), body: JSON.stringify({ name, role }) });
    const body = await res.text();
    expect(res.status, body).to.equal(200);
    const data = (JSON.parse(body) as { data: { key: { id: string }; secret: string } }).data;
    responses.push({ label: `POST /keys ${name}`, status: res.status, headers: [...res.headers].join('\n'), body, carries: data.secret });
    secrets.add(data.secret);
    return { id: data.key.id, secret: data.secret };
  };
  const statusWith = async (key: string, header: 'bearer' | 'x-api-key' = 'bearer'): Promise<number> => {
    const headers = header === 'bearer' ? bearer(key) : { 'X-API-Key': key };
    const res = await fetch(`${base}/api/v1/knowledge?limit=1&content=false`, { headers });
    await res.arrayBuffer();
    return res.status;
  };

  before(async function () {
    this.timeout(120_000);
    await ensureBuilt();
    tmp = await tmpDir('ks-secrets');
    cloneTmp = await tmpDir('ks-secrets-clone');
    // LOG_LEVEL=debug logs every request. Rate limits off: this test fails authentication on purpose, far
    // more often than a client would.
    server = await spawnServe(tmp.dir, 15_000, { LOG_LEVEL: 'debug', KNOWLEDGE_RATE_LIMIT_AUTH_FAILURES: '0', KNOWLEDGE_RATE_LIMIT_PER_KEY: '0' });
    base = server.url;
    admin = ADMIN_LINE.exec(server.stdout())?.[1] as string;
    expect(admin, server.stdout()).to.match(/^ks_/);
    secrets.add(admin);
  });

  after(async () => {
    await server?.kill();
    await tmp?.cleanup();
    await cloneTmp?.cleanup();
  });

  it('a key revoked through the API (DELETE /keys/{id}) is refused on its very next request, by the API and by git', async () => {
    for (let round = 0; round < 3; round++) {
      const key = await apiKey(round === 2 ? 'admin' : 'writer', `api-revoked-${round}`);
      expect(await statusWith(key.secret)).to.equal(200);
      const revoke = await call(`DELETE /keys (round ${round})`, `/api/v1/knowledge/keys/${key.id}`, { method: 'DELETE', headers: bearer(admin) });
      expect(revoke.status, revoke.body).to.equal(200);
      expect(JSON.parse(revoke.body).data.key.revokedAt).to.be.a('string');
      expect(await statusWith(key.secret, round === 1 ? 'x-api-key' : 'bearer'), `round ${round}: the very next request`).to.equal(401);
      const again = await call(`revoked key, round ${round}`, '/api/v1/knowledge', { headers: bearer(key.secret) });
      expect(again.status).to.equal(401);
      expect(JSON.parse(again.body)).to.deep.equal({ success: false, error: 'Invalid API key' });
    }
    // An admin key revoked through the API no longer clones.
    const adminKey = await apiKey('admin', 'api-revoked-git');
    expect((await fetch(`${base}/git/default.git/info/refs?service=git-upload-pack`, { headers: { Authorization: `Basic ${basic(adminKey.secret)}` } })).status).to.equal(200);
    expect((await call('revoke git admin', `/api/v1/knowledge/keys/${adminKey.id}`, { method: 'DELETE', headers: bearer(admin) })).status).to.equal(200);
    const refused = await call('git with a revoked key', '/git/default.git/info/refs?service=git-upload-pack', {
      headers: { Authorization: `Basic ${basic(adminKey.secret)}` },
    });
    expect(refused.status).to.equal(401);
  });

  it('a key revoked by the CLI (`key revoke`) while it is in use is refused on its very next request', async () => {
    const failures: string[] = [];
    for (let round = 0; round < 3; round++) {
      const key = await cliKey(round === 2 ? 'admin' : 'reader', `cli-revoked-${round}`);
      // Keep the key busy, as a client would be, so the server has just checked the key file when the revoke lands.
      let stop = false;
      const seen: Array<{ startedAt: number; status: number }> = [];
      const hammer = (async () => {
        while (!stop) {
          const startedAt = Date.now();
          seen.push({ startedAt, status: await statusWith(key.secret) });
        }
      })();
      await sleep(300);
      const revoked = await cli(`key revoke ${key.id}`, ['key', 'revoke', key.id]);
      const revokedAt = Date.now();
      expect(revoked.code, revoked.stderr).to.equal(0);
      expect(revoked.stdout).to.include(`Revoked ${key.id}`);
      const next = await statusWith(key.secret);
      // Keep going until the key is refused (or a second has passed), to measure how long it still worked.
      const deadline = Date.now() + 1000;
      while (Date.now() < deadline && seen.filter((x) => x.startedAt >= revokedAt).slice(-1)[0]?.status !== 401) await sleep(5);
      stop = true;
      await hammer;
      expect(seen.filter((x) => x.startedAt < revokedAt - 500).every((x) => x.status === 200), `round ${round}: the key worked before`).to.equal(true);
      const late = seen.filter((x) => x.startedAt >= revokedAt && x.status !== 401);
      if (next !== 401 || late.length > 0) {
        const lastOk = Math.max(0, ...late.map((x) => x.startedAt - revokedAt));
        failures.push(
          `round ${round}: the first request after \`key revoke\` exited answered ${next}; ` +
            `${late.length} more request(s) started up to ${lastOk} ms after it were answered ${[...new Set(late.map((x) => x.status))].join(', ')}`,
        );
      }
      const later = await call(`CLI-revoked key, round ${round}`, '/api/v1/knowledge', { headers: { 'X-API-Key': key.secret } });
      expect(later.status, `round ${round}: refused a second after the revoke at the latest`).to.equal(401);
    }
    expect(failures, failures.join('\n')).to.deep.equal([]);
  });

  it('records last use without writing the key files per request (200 requests: at most one write)', async () => {
    const reader = await cliKey('reader', 'usage-reader');
    const writer = await apiKey('writer', 'usage-writer');
    const before = new Date();
    await sleep(50);

    // keys.json is rewritten by a fold, keys.log appended to by a change: either is a write.
    const stampOf = async (): Promise<string> => {
      const stamps = await Promise.all(
        KEY_FILES.map((name) =>
          stat(join(tmp.dir, name)).then(
            (s) => `${name} ${s.ino}:${s.size}:${s.mtimeMs}`,
            () => `${name} missing`,
          ),
        ),
      );
      return stamps.join(', ');
    };
    const stamps = [await stampOf()];
    let polling = true;
    const poller = (async () => {
      while (polling) {
        const s = await stampOf().catch(() => 'missing');
        if (s !== stamps[stamps.length - 1]) stamps.push(s);
        await sleep(1);
      }
    })();
    const events: string[] = [];
    const watcher: FSWatcher = watch(tmp.dir, (type, file) => {
      if (file === 'keys.json' || file === 'keys.log' || file === 'keys.json.lock') events.push(`${type} ${file}`);
    });

    const started = Date.now();
    const statuses: number[] = [];
    const keysInTurn = [admin, reader.secret, writer.secret];
    for (let batch = 0; batch < 20; batch++) {
      statuses.push(...(await Promise.all(Array.from({ length: 10 }, (_, i) => statusWith(keysInTurn[(batch + i) % 3] as string, i % 2 ? 'x-api-key' : 'bearer')))));
    }
    const elapsed = Date.now() - started;
    await sleep(50);
    polling = false;
    await poller;
    watcher.close();

    expect(statuses).to.have.length(200);
    expect(statuses.every((s) => s === 200)).to.equal(true);
    expect(elapsed, 'the 200 requests take a few seconds at most').to.be.below(10_000);
    const writes = stamps.length - 1;
    console.log(`      key files: ${writes} change(s) and ${events.filter((e) => e.endsWith('keys.json.lock')).length} lock event(s) across 200 requests in ${elapsed} ms`);
    expect(writes, `the key files changed ${writes} times: ${stamps.join(' | ')}`).to.be.at.most(1);
    expect(events.filter((e) => e.endsWith('.lock')).length, events.join(', ')).to.be.at.most(2); // one write = lock created + removed

    // …and yet the use is recorded: the API shows it at once, the file gets it at the latest on shutdown.
    const listed = await call('GET /keys after use', '/api/v1/knowledge/keys', { headers: bearer(admin) });
    const keys = (JSON.parse(listed.body) as { data: { keys: Array<{ id: string; lastUsedAt: string | null }> } }).data.keys;
    for (const k of [reader, writer]) {
      const lastUsed = keys.find((x) => x.id === k.id)?.lastUsedAt;
      expect(lastUsed, k.id).to.be.a('string');
      expect(new Date(lastUsed as string).getTime()).to.be.at.least(before.getTime());
    }
  });

  it('answers many requests with valid, unknown, malformed and revoked keys as it should, never 500', async () => {
    const writer = await apiKey('writer', 'load-writer');
    const reader = await cliKey('reader', 'load-reader');
    const revoked = await cliKey('admin', 'load-revoked');
    expect((await cli('revoke load-revoked', ['key', 'revoke', revoked.id])).code).to.equal(0);
    const unknown = `ks_${'A'.repeat(43)}`;
    const unknown2 = `ks_${Buffer.from(sha256('not a key'), 'hex').toString('base64url')}`;
    const malformed = 'ks_short';
    for (const s of [unknown, unknown2, malformed]) secrets.add(s);

    const A = '/api/v1/knowledge';
    const expectations: Array<[string, number, () => Promise<Recorded>]> = [];
    const add = (label: string, status: number, path: string, options: Parameters<typeof call>[2] = {}): void => {
      expectations.push([label, status, () => call(label, path, options)]);
    };
    for (let round = 0; round < 3; round++) {
      const p = `secrets/r${round}/doc.md`;
      add('admin PUT', 200, `${A}/items/${p}`, { method: 'PUT', headers: json(admin), body: JSON.stringify({ content: `round ${round}\n` }) });
      add('writer PUT', 200, `${A}/items/${p}`, { method: 'PUT', headers: json(writer.secret), body: JSON.stringify({ content: `round ${round} by writer\n` }) });
      add('reader GET', 200, `${A}/items/${p}`, { headers: bearer(reader.secret) });
      add('reader X-API-Key list', 200, `${A}?prefix=secrets/`, { headers: { 'X-API-Key': reader.secret } });
      add('reader PUT', 403, `${A}/items/${p}`, { method: 'PUT', headers: json(reader.secret), body: JSON.stringify({ content: 'no\n' }) });
      add('writer DELETE', 403, `${A}/items/${p}`, { method: 'DELETE', headers: bearer(writer.secret) });
      add('writer GET /keys', 403, `${A}/keys`, { headers: bearer(writer.secret) });
      add('reader GET /trash', 403, `${A}/trash`, { headers: bearer(reader.secret) });
      add('writer POST /keys', 403, `${A}/keys`, { method: 'POST', headers: json(writer.secret), body: JSON.stringify({ name: 'x', role: 'admin' }) });
      add('history', 200, `${A}/history/${p}`, { headers: bearer(reader.secret) });
      add('diff', 200, `${A}/diff/${p}?from=1&to=2`, { headers: bearer(reader.secret) });
      add('changes with a malformed since', 400, `${A}/changes?since=nothex`, { headers: bearer(reader.secret) });
      add('admin DELETE', 200, `${A}/items/${p}`, { method: 'DELETE', headers: bearer(admin) });
      add('PUT onto the trash', 409, `${A}/items/${p}`, { method: 'PUT', headers: json(admin), body: JSON.stringify({ content: 'x\n' }) });
      add('GET trash', 200, `${A}/trash`, { headers: bearer(admin) });
      add('restore', 200, `${A}/trash/restore`, { method: 'POST', headers: json(admin), body: JSON.stringify({ path: p }) });
      add('restore again', 404, `${A}/trash/restore`, { method: 'POST', headers: json(admin), body: JSON.stringify({ path: p }) });
      add('GET /keys', 200, `${A}/keys`, { headers: bearer(admin) });
      add('GET missing', 404, `${A}/items/secrets/none-${round}.md`, { headers: bearer(admin) });
      add('revoke unknown key', 404, `${A}/keys/key_0000000000000000`, { method: 'DELETE', headers: bearer(admin) });
      add('unknown route', 404, `${A}/nothing-here`, { headers: bearer(admin) });
      add('wrong method', 405, `${A}/trash`, { method: 'PUT', headers: json(admin), body: '{}' });
      add('bad path', 400, `${A}/items/Bad Path.md`, { method: 'PUT', headers: json(admin), body: JSON.stringify({ content: 'x' }) });
      add('malformed JSON', 400, `${A}/items/${p}`, { method: 'PUT', headers: json(admin), body: '{"content": ' });
      add('unknown field', 400, `${A}/items/${p}`, { method: 'PUT', headers: json(admin), body: JSON.stringify({ content: 'x', apiKey: admin }) });
      add('a key in the query string', 400, `${A}?key=${admin}`, { headers: bearer(admin) });
      add('a key only in the query string', 401, `${A}?key=${admin}`);
      add('not JSON', 415, `${A}/items/${p}`, { method: 'PUT', headers: { ...bearer(admin), 'Content-Type': 'text/plain' }, body: 'x' });
      add('If-Match mismatch', 412, `${A}/items/${p}`, { method: 'PUT', headers: { ...json(admin), 'If-Match': '"nope"' }, body: JSON.stringify({ content: 'y\n' }) });
      add('bad key role', 400, `${A}/keys`, { method: 'POST', headers: json(admin), body: JSON.stringify({ name: 'x', role: 'superuser' }) });
      add('no key', 401, A);
      add('unknown key', 401, A, { headers: bearer(unknown) });
      add('unknown key (X-API-Key)', 401, `${A}/items/${p}`, { headers: { 'X-API-Key': unknown2 } });
      add('malformed key', 401, A, { headers: bearer(malformed) });
      add('garbage Authorization', 401, A, { headers: { Authorization: `Token ${admin}` } });
      add('Basic on the API', 401, A, { headers: { Authorization: `Basic ${basic(unknown)}` } });
      add('revoked key', 401, A, { headers: bearer(revoked.secret) });
      add('revoked key (X-API-Key) on a write', 401, `${A}/items/${p}`, { method: 'PUT', headers: { 'X-API-Key': revoked.secret, 'Content-Type': 'application/json' }, body: '{}' });
      add('git refs (admin)', 200, '/git/default.git/info/refs?service=git-upload-pack', { headers: { Authorization: `Basic ${basic(admin)}` } });
      add('git refs (reader)', 403, '/git/default.git/info/refs?service=git-upload-pack', { headers: { Authorization: `Basic ${basic(reader.secret)}` } });
      add('git refs (unknown)', 401, '/git/default.git/info/refs?service=git-upload-pack', { headers: { Authorization: `Basic ${basic(unknown)}` } });
      add('git refs (revoked)', 401, '/git/default.git/info/refs?service=git-upload-pack', { headers: { Authorization: `Basic ${basic(revoked.secret)}` } });
      add('git refs (no key)', 401, '/git/default.git/info/refs?service=git-upload-pack');
      add('git refs (other org)', 404, '/git/acme.git/info/refs?service=git-upload-pack', { headers: { Authorization: `Basic ${basic(admin)}` } });
      add('git push', 403, '/git/default.git/info/refs?service=git-receive-pack', { headers: { Authorization: `Basic ${basic(admin)}` } });
    }
    const wrong: string[] = [];
    for (const [label, status, run] of expectations) {
      const r = await run();
      if (r.status !== status) wrong.push(`${label}: ${r.status} (expected ${status}) ${r.body.slice(0, 200)}`);
    }
    expect(wrong, wrong.join('\n')).to.deep.equal([]);
    expect(responses.filter((r) => r.status >= 500).map((r) => `${r.label}: ${r.status}`)).to.deep.equal([]);

    // The CLI's key listing shows no secret and no hash either.
    expect((await cli('key list', ['key', 'list', '--org', 'default'])).code).to.equal(0);
    expect((await cli('key list --json', ['key', 'list', '--org', 'default', '--json'])).code).to.equal(0);
  });

  it('clones over HTTP; the server never puts a key or a hash in a clone', async () => {
    const { port } = new URL(base);
    const clone = join(cloneTmp.dir, 'with-url');
    await git(['clone', '-q', `http://x:${admin}@127.0.0.1:${port}/git/default.git`, clone]);
    // git itself keeps the URL it was given, key included, as the remote's url: that line, written by the
    // git client from its own command line, is the only place a secret may be.
    remoteUrl = (await git(['config', '--get', 'remote.origin.url'], { cwd: clone })).trim();
    expect(remoteUrl).to.include(admin);

    // Without a key in the URL at all: credentials in a one-off header.
    const clone2 = join(cloneTmp.dir, 'with-header');
    await git(['-c', `http.extraHeader=Authorization: Basic ${basic(admin)}`, 'clone', '-q', `http://127.0.0.1:${port}/git/default.git`, clone2]);
    await git(['-c', `http.extraHeader=Authorization: Basic ${basic(admin)}`, 'fetch', '-q', 'origin'], { cwd: clone2 });
    expect(await readFile(join(clone2, 'secrets/r0/doc.md'), 'utf8')).to.equal('round 0 by writer\n');

    const revoked = await cliKey('admin', 'clone-revoked');
    expect((await cli('revoke clone-revoked', ['key', 'revoke', revoked.id])).code).to.equal(0);
    const refused = await git(['clone', '-q', `http://x:${revoked.secret}@127.0.0.1:${port}/git/default.git`, join(cloneTmp.dir, 'revoked')]).then(
      () => 'cloned',
      (err: Error) => err.message,
    );
    expect(refused).to.match(/Invalid API key|401|Authentication failed/);
  });

  it('no secret and no hash of one in the logs, responses, CLI output, the repository or a clone', async () => {
    // Shut down gracefully: the key usage is flushed, so the key files (and only they) hold the hashes.
    server.proc.kill('SIGTERM');
    expect(await server.exited).to.deep.equal({ code: 0, signal: null });
    const keysFile = await keyFilesText(readFile, tmp.dir);
    const stored = await storedKeyRecords(readFile, tmp.dir);
    expect(stored.find((k) => k.name === 'usage-reader')?.lastUsedAt, 'last use written out at shutdown').to.be.a('string');
    for (const s of secrets) expect(keysFile).to.not.include(s);

    const forms = (s: string): string[] => [s, sha256(s), basic(s)];
    const allForms = [...secrets].flatMap((s) => forms(s).map((f) => ({ secret: s, form: f })));
    // The scan looks for what is really stored: the keys' hashes are in the key files (outside git), and nowhere else.
    const hashes = new Set(stored.map((k) => k.hash));
    expect(hashes.has(sha256(admin))).to.equal(true);
    expect([...secrets].filter((s) => hashes.has(sha256(s)))).to.have.length(stored.length);
    const leaks: string[] = [];
    const scan = (where: string, text: string, allowed?: string): void => {
      const lower = text.toLowerCase();
      for (const { secret, form } of allForms) {
        if (secret === allowed && form === secret) continue;
        const hit = form === sha256(secret) ? lower.includes(form) : text.includes(form);
        if (hit) leaks.push(`${where}: ${form === secret ? 'a key' : form === sha256(secret) ? 'the SHA-256 of a key' : 'a Basic credential'} (${secret.slice(0, 8)}…)`);
      }
    };

    // Logs. stdout has the one first-start line, by design, and nothing else secret; stderr has nothing.
    const [stdout, stderr] = [server.stdout(), server.stderr()];
    const adminLines = stdout.split('\n').filter((l) => l.includes(admin));
    expect(adminLines).to.deep.equal([`Admin API key for organization "default": ${admin}`]);
    expect(stdout.split(admin).length - 1, 'the admin key appears once on stdout').to.equal(1);
    scan('stdout', stdout.replace(adminLines[0] as string, ''));
    scan('stderr', stderr);
    const logged = stderr.split('\n').filter((l) => l.includes('"msg":"request"')).length;
    expect(logged, 'debug logs every request').to.be.at.least(responses.length);
    expect(stderr).to.not.match(/"level":"error"/);

    for (const r of responses) scan(`response ${r.label} (${r.status})`, `${r.headers}\n${r.body}`, r.carries);
    for (const c of cliOutputs) scan(`CLI ${c.label}`, c.text, c.carries);

    // The server's own repository, files and objects (objects are compressed: ask git for them).
    const gitdir = join(tmp.dir, 'orgs', 'default.git');
    for (const file of await listFiles(join(tmp.dir, 'orgs'))) scan(`data dir ${file.slice(tmp.dir.length)}`, (await readFile(file)).toString('latin1'));
    scan('server repo: log -p --all', await git(['log', '-p', '--all', '--format=fuller'], { gitdir }));
    scan('server repo: all objects', await git(['cat-file', '--batch-all-objects', '--batch'], { gitdir }));

    // Both clones, every file (.git/config too), the history and every object.
    for (const name of ['with-url', 'with-header']) {
      const dir = join(cloneTmp.dir, name);
      const files = await listFiles(dir);
      expect(files.some((f) => f.endsWith('/.git/config'))).to.equal(true);
      for (const file of files) {
        let text = (await readFile(file)).toString('latin1');
        if (name === 'with-url' && file.endsWith('/.git/config')) {
          const line = `\turl = ${remoteUrl}\n`;
          expect(text.split(line).length - 1, '.git/config holds the url git was given, once').to.equal(1);
          text = text.replace(line, '');
        }
        scan(`clone ${name}${file.slice(dir.length)}`, text);
      }
      scan(`clone ${name}: log -p --all`, await git(['log', '-p', '--all', '--format=fuller'], { cwd: dir }));
      scan(`clone ${name}: all objects`, await git(['cat-file', '--batch-all-objects', '--batch'], { cwd: dir }));
    }
    expect(leaks, leaks.join('\n')).to.deep.equal([]);
    console.log(
      `      scanned for ${secrets.size} keys (and their hashes and Basic credentials): ${responses.length} responses, ` +
        `${logged} debug log lines, ${cliOutputs.length} CLI outputs, the repository and 2 clones`,
    );
  });
});

async function listFiles(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const full = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...(await listFiles(full)));
    else if (entry.isFile()) out.push(full);
  }
  return out;
}
