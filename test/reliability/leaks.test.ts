import net from 'node:net';
import { gzipSync } from 'node:zlib';
import { expect } from 'chai';
import { ensureBuilt, ROOT, spawnServe, type ServeChild } from '../support/child.js';
import { tmpDir } from '../support/tmp.js';

/**
 * Headers and leaks (see README, Reliability): whatever is asked, every response carries
 * `X-Content-Type-Options: nosniff` (and the `X-Request-Id` the README promises on every response), and no
 * response shows a stack trace or a filesystem path: not the data dir, not the code's location, not
 * node_modules, no `at …:line:col` frames, no `Error:`. Every route, bad input, wrong methods, malformed
 * URLs and requests (some only a raw socket can send), oversized headers, git's errors, the dashboard.
 */

interface Seen {
  label: string;
  status: number;
  headers: Map<string, string>;
  body: string;
}

/** A stack frame as V8 prints it: `at fn (/path/file.js:12:34)`, `at /path/file.js:1:2`, `at node:internal/...`. */
const STACK_FRAME = /\bat (?:async )?(?:[^\s()]+ )?\(?(?:file:\/\/|node:|\/|[A-Za-z]:\\)[^\s)]*:\d+(?::\d+)?\)?/;

describe('reliability: headers and leaks (nosniff everywhere, no stack or path in any response)', function () {
  this.timeout(60_000);

  let tmp: { dir: string; cleanup: () => Promise<void> };
  let server: ServeChild;
  let admin: string;
  let reader: string;
  let writer: string;
  const seen: Seen[] = [];

  const A = '/api/v1/knowledge';
  const auth = (key: string): Record<string, string> => ({ Authorization: `Bearer ${key}` });
  const jsonAuth = (key: string): Record<string, string> => ({ Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' });
  const gitAuth = (key: string): Record<string, string> => ({ Authorization: `Basic ${Buffer.from(`x:${key}`).toString('base64')}` });

  const call = async (
    label: string,
    path: string,
    options: { method?: string; headers?: Record<string, string>; body?: string | Uint8Array } = {},
  ): Promise<Seen> => {
    // A bound on each request, so that one that never gets its answer fails naming itself (it hung once in CI, at
    // 0aca2c8, and the test's timeout could not say which it was); not a speed goal: answers here take milliseconds.
    const signal = AbortSignal.timeout(20_000);
    const what = `${options.method ?? 'GET'} ${path.slice(0, 120)} (${label})`;
    const answered = async (): Promise<{ res: Response; bytes: Buffer }> => {
      const res = await fetch(`${server.url}${path}`, { method: options.method ?? 'GET', headers: options.headers, body: options.body, redirect: 'manual', signal });
      return { res, bytes: Buffer.from(await res.arrayBuffer()) };
    };
    const { res, bytes } = await answered().catch((err: unknown) => {
      throw new Error(`${what}: ${String(err)}`);
    });
    const body = bytes.toString('latin1');
    // Every route, good and bad input: each answer is also held against the API description (by the
    // fetch every test uses, support/openapiHooks.ts).
    const s: Seen = { label: what, status: res.status, headers: new Map(res.headers), body };
    seen.push(s);
    return s;
  };

  /** Bytes straight onto a socket, for what fetch will not send; the response as the server wrote it. */
  const raw = async (label: string, data: string | Buffer): Promise<Seen | undefined> => {
    const { hostname, port } = new URL(server.url);
    let text = await new Promise<string>((resolve) => {
      const socket = net.connect(Number(port), hostname);
      let buf = '';
      socket.setEncoding('latin1');
      socket.on('data', (d: string) => (buf += d));
      socket.on('error', () => resolve(buf));
      socket.on('close', () => resolve(buf));
      socket.on('connect', () => socket.write(data));
      setTimeout(() => {
        socket.destroy();
        resolve(buf);
      }, 3000);
    });
    // Interim answers (`100 Continue`) come before the response proper: judge the final one.
    let at = 0;
    while (/^HTTP\/1\.[01] 1\d\d /.test(text.slice(at)) && text.indexOf('\r\n\r\n', at) >= 0) at = text.indexOf('\r\n\r\n', at) + 4;
    text = text.slice(at);
    if (text === '') return undefined; // closed without a word: nothing to judge
    const split = text.indexOf('\r\n\r\n');
    const head = split < 0 ? text : text.slice(0, split);
    const [statusLine = '', ...lines] = head.split('\r\n');
    const headers = new Map<string, string>();
    for (const line of lines) {
      const colon = line.indexOf(':');
      if (colon > 0) headers.set(line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim());
    }
    const s: Seen = { label: `raw: ${label}`, status: Number(statusLine.split(' ')[1]), headers, body: split < 0 ? '' : text.slice(split + 4) };
    seen.push(s);
    return s;
  };

  before(async function () {
    this.timeout(120_000);
    await ensureBuilt();
    tmp = await tmpDir('ks-leaks');
    // Rate limits off: this test fails authentication on purpose, more often than a client would.
    server = await spawnServe(tmp.dir, 15_000, { LOG_LEVEL: 'warn', KNOWLEDGE_RATE_LIMIT_AUTH_FAILURES: '0', KNOWLEDGE_RATE_LIMIT_PER_KEY: '0' });
    admin = /Admin API key for organization "default": (ks_\S+)/.exec(server.stdout())?.[1] as string;
    expect(admin, server.stdout()).to.match(/^ks_/);
    const key = async (role: string): Promise<string> => {
      const res = await fetch(`${server.url}${A}/keys`, { method: 'POST', headers: jsonAuth(admin), body: JSON.stringify({ name: `${role}-leaks`, role }) });
      return ((await res.json()) as { data: { secret: string } }).data.secret;
    };
    reader = await key('reader');
    writer = await key('writer');
  });

  after(async () => {
    await server?.kill();
    await tmp?.cleanup();
  });

  it('answers every route, good and bad input, wrong methods and malformed URLs through fetch', async () => {
    const put = (path: string, content: string, key = admin, extra: Record<string, unknown> = {}): Promise<Seen> =>
      call('put', `${A}/items/${path}`, { method: 'PUT', headers: jsonAuth(key), body: JSON.stringify({ content, ...extra }) });

    // Items: create, update, read, list, conditional, versions.
    const created = await put('docs/guide.md', '# Guide\n');
    expect(created.status, created.body).to.equal(200);
    expect((await put('docs/guide.md', '# Guide, v2\n')).status).to.equal(200);
    expect((await put('docs/other.md', 'other\n', writer)).status).to.equal(200);
    expect((await put('board/minutes.md', 'minutes\n')).status).to.equal(200);
    const etag = created.headers.get('etag') as string;
    await call('get', `${A}/items/docs/guide.md`, { headers: auth(reader) });
    await call('304', `${A}/items/docs/guide.md`, { headers: { ...auth(reader), 'If-None-Match': (await call('etag', `${A}/items/docs/guide.md`, { headers: auth(reader) })).headers.get('etag') as string } });
    await call('HEAD', `${A}/items/docs/guide.md`, { method: 'HEAD', headers: auth(reader) });
    await call('version 1', `${A}/items/docs/guide.md?version=1`, { headers: auth(reader) });
    await call('version past the last', `${A}/items/docs/guide.md?version=99`, { headers: auth(reader) });
    await call('version 0', `${A}/items/docs/guide.md?version=0`, { headers: auth(reader) });
    await call('version text', `${A}/items/docs/guide.md?version=abc`, { headers: auth(reader) });
    await call('ref bad', `${A}/items/docs/guide.md?ref=deadbeef`, { headers: auth(reader) });
    await call('ref unknown', `${A}/items/docs/guide.md?ref=${'0'.repeat(40)}`, { headers: auth(reader) });
    await call('ref and version', `${A}/items/docs/guide.md?ref=${'0'.repeat(40)}&version=1`, { headers: auth(reader) });
    await call('unknown query', `${A}/items/docs/guide.md?x=1`, { headers: auth(reader) });
    await call('missing', `${A}/items/docs/none.md`, { headers: auth(reader) });
    await call('list', A, { headers: auth(reader) });
    await call('list prefix', `${A}?prefix=docs/&limit=1&content=false`, { headers: auth(reader) });
    await call('list bad prefix', `${A}?prefix=docs`, { headers: auth(reader) });
    await call('list limit 0', `${A}?limit=0`, { headers: auth(reader) });
    await call('list limit huge', `${A}?limit=100000`, { headers: auth(reader) });
    await call('list bad cursor', `${A}?cursor=%00%01garbage`, { headers: auth(reader) });
    await call('list content=maybe', `${A}?content=maybe`, { headers: auth(reader) });
    await call('list repeated', `${A}?limit=1&limit=2`, { headers: auth(reader) });

    // Writes refused for every reason the error table knows.
    await call('If-Match mismatch', `${A}/items/docs/guide.md`, { method: 'PUT', headers: { ...jsonAuth(admin), 'If-Match': etag }, body: '{"content":"x"}' });
    await call('If-None-Match *', `${A}/items/docs/guide.md`, { method: 'PUT', headers: { ...jsonAuth(admin), 'If-None-Match': '*' }, body: '{"content":"x"}' });
    await call('malformed JSON', `${A}/items/docs/a.md`, { method: 'PUT', headers: jsonAuth(admin), body: '{"content": "x",' });
    await call('JSON array', `${A}/items/docs/a.md`, { method: 'PUT', headers: jsonAuth(admin), body: '[1,2]' });
    await call('JSON null', `${A}/items/docs/a.md`, { method: 'PUT', headers: jsonAuth(admin), body: 'null' });
    await call('JSON string', `${A}/items/docs/a.md`, { method: 'PUT', headers: jsonAuth(admin), body: '"x"' });
    await call('empty body', `${A}/items/docs/a.md`, { method: 'PUT', headers: jsonAuth(admin), body: '' });
    await call('deep JSON', `${A}/items/docs/a.md`, { method: 'PUT', headers: jsonAuth(admin), body: `${'['.repeat(100_000)}${']'.repeat(100_000)}` });
    await call('content number', `${A}/items/docs/a.md`, { method: 'PUT', headers: jsonAuth(admin), body: '{"content":1}' });
    await call('no content', `${A}/items/docs/a.md`, { method: 'PUT', headers: jsonAuth(admin), body: '{}' });
    await call('unknown field', `${A}/items/docs/a.md`, { method: 'PUT', headers: jsonAuth(admin), body: '{"content":"x","__proto__":{"a":1},"constructor":1}' });
    await call('bad permission', `${A}/items/docs/a.md`, { method: 'PUT', headers: jsonAuth(admin), body: '{"content":"x","requiredReadPermission":"root"}' });
    await call('long message', `${A}/items/docs/a.md`, { method: 'PUT', headers: jsonAuth(admin), body: JSON.stringify({ content: 'x', message: 'm'.repeat(2000) }) });
    await call('writer sets permission', `${A}/items/docs/a.md`, { method: 'PUT', headers: jsonAuth(writer), body: '{"content":"x","requiredReadPermission":"knowledge:admin"}' });
    await call('text/plain', `${A}/items/docs/a.md`, { method: 'PUT', headers: { ...auth(admin), 'Content-Type': 'text/plain' }, body: 'x' });
    await call('no content type', `${A}/items/docs/a.md`, { method: 'PUT', headers: auth(admin), body: '{"content":"x"}' });
    await call('bad charset', `${A}/items/docs/a.md`, { method: 'PUT', headers: { ...auth(admin), 'Content-Type': 'application/json; charset=klingon' }, body: '{"content":"x"}' });
    await call('gzip body', `${A}/items/docs/a.md`, { method: 'PUT', headers: { ...jsonAuth(admin), 'Content-Encoding': 'gzip' }, body: 'not gzip' });
    await call('unknown encoding', `${A}/items/docs/a.md`, { method: 'PUT', headers: { ...jsonAuth(admin), 'Content-Encoding': 'br2' }, body: '{"content":"x"}' });
    await call('content too large', `${A}/items/docs/big.md`, { method: 'PUT', headers: jsonAuth(admin), body: JSON.stringify({ content: 'x'.repeat(1_100_000) }) });
    await call('body too large', `${A}/items/docs/big.md`, { method: 'PUT', headers: jsonAuth(admin), body: `{"content":"${'x'.repeat(1_300_000)}"}` });
    await call('under an item', `${A}/items/docs/guide.md/child.md`, { method: 'PUT', headers: jsonAuth(admin), body: '{"content":"x"}' });
    await call('over a folder', `${A}/items/docs`, { method: 'PUT', headers: jsonAuth(admin), body: '{"content":"x"}' });
    await call('reader writes', `${A}/items/docs/guide.md`, { method: 'PUT', headers: jsonAuth(reader), body: '{"content":"x"}' });
    await call('writer deletes', `${A}/items/docs/guide.md`, { method: 'DELETE', headers: auth(writer) });

    // Paths that break the rules, encoded every which way.
    for (const path of [
      '..%2Fetc%2Fpasswd.md', '%2e%2e/x.md', '.trash/x.md', '.knowledge/config.json', '.git/config', 'docs/.hidden.md', 'docs//x.md',
      'docs/x', 'Docs/X.md', 'a/b/c/d/e/f/g.md', `${'a'.repeat(300)}.md`, 'x%00.md', 'x%0a.md', '%E0%A4%A.md', '%ZZ.md', 'caf%C3%A9.md',
      'docs%2Fguide.md', 'docs%252Fguide.md', 'docs/guide.md%2F..%2F..%2Fsecret.md', '%2Fetc%2Fpasswd', '',
    ]) {
      await call(`path ${path.slice(0, 40)}`, `${A}/items/${path}`, { headers: auth(admin) });
      await call(`path ${path.slice(0, 40)}`, `${A}/items/${path}`, { method: 'PUT', headers: jsonAuth(admin), body: '{"content":"x"}' });
      await call(`path ${path.slice(0, 40)}`, `${A}/items/${path}`, { method: 'DELETE', headers: auth(admin) });
      await call(`history ${path.slice(0, 40)}`, `${A}/history/${path}`, { headers: auth(admin) });
    }

    // History, diff, rollback.
    await call('history', `${A}/history/docs/guide.md`, { headers: auth(reader) });
    await call('history missing', `${A}/history/docs/none.md`, { headers: auth(reader) });
    await call('diff', `${A}/diff/docs/guide.md?from=1&to=2`, { headers: auth(reader) });
    await call('diff bad', `${A}/diff/docs/guide.md?from=a&to=-1`, { headers: auth(reader) });
    await call('diff missing', `${A}/diff/docs/guide.md?from=1&to=9`, { headers: auth(reader) });
    await call('diff no params', `${A}/diff/docs/guide.md`, { headers: auth(reader) });
    await call('rollback', `${A}/rollback`, { method: 'POST', headers: jsonAuth(writer), body: '{"path":"docs/guide.md","version":1}' });
    await call('rollback bad', `${A}/rollback`, { method: 'POST', headers: jsonAuth(writer), body: '{"path":"docs/guide.md","version":"one"}' });
    await call('rollback missing', `${A}/rollback`, { method: 'POST', headers: jsonAuth(writer), body: '{"path":"docs/none.md","version":1}' });
    await call('rollback past', `${A}/rollback`, { method: 'POST', headers: jsonAuth(writer), body: '{"path":"docs/guide.md","version":99}' });

    // Trash.
    await call('delete', `${A}/items/docs/other.md`, { method: 'DELETE', headers: auth(admin) });
    await call('delete again', `${A}/items/docs/other.md`, { method: 'DELETE', headers: auth(admin) });
    await call('put onto trash', `${A}/items/docs/other.md`, { method: 'PUT', headers: jsonAuth(admin), body: '{"content":"x"}' });
    await call('trash', `${A}/trash`, { headers: auth(admin) });
    await call('trash reader', `${A}/trash`, { headers: auth(reader) });
    await call('restore', `${A}/trash/restore`, { method: 'POST', headers: jsonAuth(admin), body: '{"path":"docs/other.md"}' });
    await call('restore missing', `${A}/trash/restore`, { method: 'POST', headers: jsonAuth(admin), body: '{"path":"docs/other.md"}' });
    await call('restore bad', `${A}/trash/restore`, { method: 'POST', headers: jsonAuth(admin), body: '{"path":"../x"}' });
    await call('restore no body', `${A}/trash/restore`, { method: 'POST', headers: jsonAuth(admin) });
    await call('delete for purge', `${A}/items/docs/other.md`, { method: 'DELETE', headers: auth(admin) });
    await call('purge', `${A}/trash/items/docs/other.md`, { method: 'DELETE', headers: auth(admin) });
    await call('purge missing', `${A}/trash/items/docs/other.md`, { method: 'DELETE', headers: auth(admin) });
    await call('purge bad', `${A}/trash/items/%ZZ`, { method: 'DELETE', headers: auth(admin) });

    // Folder rules, changes, keys.
    await call('folders', `${A}/folders`, { headers: auth(admin) });
    await call('folder', `${A}/folders/board`, { headers: auth(admin) });
    await call('folder set', `${A}/folders/board`, { method: 'PUT', headers: jsonAuth(admin), body: '{"requiredReadPermission":"knowledge:admin"}' });
    await call('folder bad', `${A}/folders/board`, { method: 'PUT', headers: jsonAuth(admin), body: '{"requiredReadPermission":"everyone"}' });
    await call('folder bad path', `${A}/folders/..%2F..`, { method: 'PUT', headers: jsonAuth(admin), body: '{}' });
    await call('folder malformed', `${A}/folders/%ZZ`, { headers: auth(admin) });
    await call('changes', `${A}/changes?since=${'0'.repeat(40)}`, { headers: auth(reader) });
    await call('changes no since', `${A}/changes`, { headers: auth(reader) });
    await call('changes bad since', `${A}/changes?since=zzz`, { headers: auth(reader) });
    await call('keys', `${A}/keys`, { headers: auth(admin) });
    await call('keys writer', `${A}/keys`, { headers: auth(writer) });
    await call('key bad role', `${A}/keys`, { method: 'POST', headers: jsonAuth(admin), body: '{"name":"x","role":"root"}' });
    await call('key bad name', `${A}/keys`, { method: 'POST', headers: jsonAuth(admin), body: '{"name":"<x>","role":"reader"}' });
    await call('revoke missing', `${A}/keys/key_0000000000000000`, { method: 'DELETE', headers: auth(admin) });
    await call('revoke malformed', `${A}/keys/%ZZ`, { method: 'DELETE', headers: auth(admin) });
    await call('revoke no id', `${A}/keys/`, { method: 'DELETE', headers: auth(admin) });

    // Keys wrong or missing.
    await call('no key', A);
    await call('unknown key', A, { headers: auth(`ks_${'A'.repeat(43)}`) });
    await call('malformed key', A, { headers: auth('ks_') });
    await call('X-API-Key empty', A, { headers: { 'X-API-Key': ' ' } });
    await call('Basic on the API', A, { headers: gitAuth(admin) });
    await call('no key, unknown route', `${A}/nothing`);

    // Wrong methods, unknown routes.
    for (const [method, path] of [
      ['PATCH', `${A}/items/docs/guide.md`], ['POST', `${A}/items/docs/guide.md`], ['POST', A], ['DELETE', A], ['PUT', `${A}/trash`],
      ['GET', `${A}/trash/restore`], ['GET', `${A}/rollback`], ['POST', `${A}/history/docs/guide.md`], ['PUT', `${A}/keys`], ['PATCH', `${A}/keys`],
      ['POST', `${A}/changes`], ['DELETE', `${A}/folders`], ['OPTIONS', `${A}/items/docs/guide.md`], ['OPTIONS', A], ['HEAD', A],
      ['GET', `${A}/nothing`], ['GET', '/api'], ['GET', '/api/'], ['GET', '/api/v2/knowledge'], ['GET', '/nothing'], ['GET', '/favicon.ico'],
      ['GET', '/robots.txt'], ['GET', '/.env'], ['GET', '/package.json'], ['GET', '/dist/src/cli/main.js'], ['GET', '/node_modules/koa/package.json'],
      ['POST', '/'], ['DELETE', '/dashboard/'], ['POST', '/dashboard/app.js'], ['GET', `${A}/items`], ['GET', `${A}/items/`],
    ] as const) {
      await call(method, path, { method, headers: jsonAuth(admin), body: method === 'GET' || method === 'HEAD' ? undefined : '{}' });
    }

    // Malformed URLs.
    for (const path of ['/%ZZ', '/%', `${A}/%ZZ`, `${A}/items/%`, `${A}/history/%E0%A4%A`, `${A}/diff/%ZZ?from=1&to=2`, '/dashboard/%ZZ', '/dashboard/%2e%2e/%2e%2e/package.json', `${A}?%ZZ=1`, `${A}?prefix=%ZZ`, `${A}?prefix=%E0%A4%A/`, '/git/%ZZ/info/refs', `/${'%2e%2e/'.repeat(10)}etc/passwd`]) {
      await call('malformed', path, { headers: auth(admin) });
    }

    // Git over HTTP, and its errors.
    await call('git refs', '/git/default.git/info/refs?service=git-upload-pack', { headers: gitAuth(admin) });
    await call('git refs v2', '/git/default.git/info/refs?service=git-upload-pack', { headers: { ...gitAuth(admin), 'Git-Protocol': 'version=2' } });
    await call('git no service', '/git/default.git/info/refs', { headers: gitAuth(admin) });
    await call('git dumb', '/git/default.git/HEAD', { headers: gitAuth(admin) });
    await call('git objects', '/git/default.git/objects/info/packs', { headers: gitAuth(admin) });
    await call('git push refs', '/git/default.git/info/refs?service=git-receive-pack', { headers: gitAuth(admin) });
    await call('git push', '/git/default.git/git-receive-pack', { method: 'POST', headers: { ...gitAuth(admin), 'Content-Type': 'application/x-git-receive-pack-request' }, body: '0000' });
    await call('git no key', '/git/default.git/info/refs?service=git-upload-pack');
    await call('git unknown key', '/git/default.git/info/refs?service=git-upload-pack', { headers: gitAuth(`ks_${'B'.repeat(43)}`) });
    await call('git reader', '/git/default.git/info/refs?service=git-upload-pack', { headers: gitAuth(reader) });
    await call('git other org', '/git/acme.git/info/refs?service=git-upload-pack', { headers: gitAuth(admin) });
    await call('git bad org', '/git/..%2F..%2Fetc.git/info/refs?service=git-upload-pack', { headers: gitAuth(admin) });
    await call('git no .git', '/git/default/info/refs?service=git-upload-pack', { headers: gitAuth(admin) });
    await call('git pack wrong type', '/git/default.git/git-upload-pack', { method: 'POST', headers: { ...gitAuth(admin), 'Content-Type': 'text/plain' }, body: '0000' });
    await call('git pack garbage', '/git/default.git/git-upload-pack', {
      method: 'POST',
      headers: { ...gitAuth(admin), 'Content-Type': 'application/x-git-upload-pack-request' },
      body: 'this is not pkt-line at all',
    });
    await call('git pack bad want', '/git/default.git/git-upload-pack', {
      method: 'POST',
      headers: { ...gitAuth(admin), 'Content-Type': 'application/x-git-upload-pack-request' },
      body: `0032want ${'1'.repeat(40)}\n00000009done\n`,
    });
    await call('git pack bad gzip', '/git/default.git/git-upload-pack', {
      method: 'POST',
      headers: { ...gitAuth(admin), 'Content-Type': 'application/x-git-upload-pack-request', 'Content-Encoding': 'gzip' },
      body: 'definitely not gzip',
    });
    await call('git pack gzip garbage', '/git/default.git/git-upload-pack', {
      method: 'POST',
      headers: { ...gitAuth(admin), 'Content-Type': 'application/x-git-upload-pack-request', 'Content-Encoding': 'gzip' },
      body: gzipSync(Buffer.from('0014command=ls-refs\n0000garbage')),
    });
    await call('git pack v2 bad command', '/git/default.git/git-upload-pack', {
      method: 'POST',
      headers: { ...gitAuth(admin), 'Content-Type': 'application/x-git-upload-pack-request', 'Git-Protocol': 'version=2' },
      body: '0016command=frobnicate\n0000',
    });
    await call('git pack encoding', '/git/default.git/git-upload-pack', {
      method: 'POST',
      headers: { ...gitAuth(admin), 'Content-Type': 'application/x-git-upload-pack-request', 'Content-Encoding': 'zstd' },
      body: '0000',
    });

    // The dashboard and the root.
    for (const path of ['/', '/dashboard', '/dashboard/', '/dashboard/index.html', '/dashboard/app.js', '/dashboard/app.css', '/dashboard/missing.js', '/dashboard/app.js.map', '/dashboard/index.html/']) {
      await call('dashboard', path);
    }

    expect(seen.length).to.be.greaterThan(200);
    // None of it is a fault of the server's: no 5xx, nothing logged as an error.
    const faults = seen.filter((s) => s.status >= 500).map((s) => `${s.label}: ${s.status} ${s.body.slice(0, 200)}`);
    const errors = server.stderr().split('\n').filter((l) => l.includes('"level":"error"'));
    expect([...faults, ...errors], 'no request is a server fault').to.deep.equal([]);
  });

  it('answers what only a raw socket sends: oversized headers (431), broken request lines, bad framing, no Host', async () => {
    const host = 'Host: 127.0.0.1\r\n';
    const close = 'Connection: close\r\n';
    const big = await raw('headers over 16 KiB', `GET ${A} HTTP/1.1\r\n${host}${close}X-Big: ${'a'.repeat(20_000)}\r\n\r\n`);
    expect(big?.status).to.equal(431);
    expect(JSON.parse(big?.body ?? '{}')).to.deep.equal({ success: false, error: 'Request header fields too large' });
    const many = await raw('many headers', `GET ${A} HTTP/1.1\r\n${host}${close}${Array.from({ length: 1000 }, (_, i) => `X-H${i}: ${'v'.repeat(20)}\r\n`).join('')}\r\n`);
    expect(many?.status).to.equal(431);
    expect((await raw('URL over 16 KiB', `GET ${A}/items/${'a'.repeat(20_000)}.md HTTP/1.1\r\n${host}${close}\r\n`))?.status).to.equal(431);
    await raw('key header over 16 KiB', `GET ${A} HTTP/1.1\r\n${host}${close}Authorization: Bearer ${'k'.repeat(17_000)}\r\n\r\n`);

    for (const [label, data] of [
      ['junk', 'hello world\r\n\r\n'],
      ['unknown method', `FOO / HTTP/1.1\r\n${host}${close}\r\n`],
      ['HTTP/2 preface', 'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n'],
      ['HTTP/9.9', `GET / HTTP/9.9\r\n${host}${close}\r\n`],
      ['space in URL', `GET /api/v1/kn owledge HTTP/1.1\r\n${host}${close}\r\n`],
      ['control char in URL', `GET /api/v1/\x01knowledge HTTP/1.1\r\n${host}${close}\r\n`],
      ['bad Content-Length', `PUT ${A}/items/a.md HTTP/1.1\r\n${host}${close}Content-Length: abc\r\n\r\n`],
      ['two Content-Lengths', `PUT ${A}/items/a.md HTTP/1.1\r\n${host}${close}Content-Length: 1\r\nContent-Length: 2\r\n\r\nab`],
      ['Transfer-Encoding and Content-Length', `PUT ${A}/items/a.md HTTP/1.1\r\n${host}${close}Transfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n`],
      ['bad chunk', `PUT ${A}/items/a.md HTTP/1.1\r\n${host}${close}Authorization: Bearer ${admin}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n`],
      ['header without colon', `GET ${A} HTTP/1.1\r\n${host}${close}NoColonHere\r\n\r\n`],
      ['obs-fold header', `GET ${A} HTTP/1.1\r\n${host}${close}X-A: 1\r\n  folded\r\n\r\n`],
      ['absolute URI', `GET http://elsewhere.example${A} HTTP/1.1\r\n${host}${close}\r\n`],
      ['asterisk', `OPTIONS * HTTP/1.1\r\n${host}${close}\r\n`],
      ['TRACE', `TRACE ${A} HTTP/1.1\r\n${host}${close}Authorization: Bearer ${admin}\r\n\r\n`],
      ['CONNECT', `CONNECT 127.0.0.1:22 HTTP/1.1\r\n${host}${close}\r\n`],
      ['HTTP/1.0 without Host', `GET ${A} HTTP/1.0\r\n\r\n`],
      ['upgrade', `GET / HTTP/1.1\r\n${host}Upgrade: websocket\r\nConnection: Upgrade\r\n\r\n`],
      ['Expect other than 100-continue', `PUT ${A}/items/a.md HTTP/1.1\r\n${host}${close}Authorization: Bearer ${admin}\r\nContent-Type: application/json\r\nExpect: 200-ok\r\nContent-Length: 2\r\n\r\n{}`],
      ['Expect: 100-continue', `PUT ${A}/items/expect.md HTTP/1.1\r\n${host}${close}Authorization: Bearer ${admin}\r\nContent-Type: application/json\r\nExpect: 100-continue\r\nContent-Length: 15\r\n\r\n{"content":"x"}`],
      ['NUL in URL', `GET ${A}/items/a%00.md HTTP/1.1\r\n${host}${close}Authorization: Bearer ${admin}\r\n\r\n`],
      ['dot segments', `GET /dashboard/../../package.json HTTP/1.1\r\n${host}${close}\r\n`],
      ['backslashes', `GET /dashboard\\..\\..\\package.json HTTP/1.1\r\n${host}${close}\r\n`],
      ['HTTP/1.1 without Host', `GET ${A} HTTP/1.1\r\n${close}\r\n`],
      ['HTTP/1.1 without Host, to the dashboard', `GET /dashboard/ HTTP/1.1\r\n${close}\r\n`],
    ] as const) {
      await raw(label, data);
    }
    expect(seen.filter((s) => s.label.startsWith('raw: ')).length).to.be.greaterThan(20);
  });

  it('puts X-Content-Type-Options: nosniff on every response', () => {
    const missing = seen.filter((s) => s.headers.get('x-content-type-options') !== 'nosniff').map((s) => `${s.label}: ${s.status}`);
    console.log(`      ${seen.length} responses checked (${seen.filter((s) => s.label.startsWith('raw: ')).length} over a raw socket)`);
    expect(missing, `responses without nosniff:\n${missing.join('\n')}`).to.deep.equal([]);
  });

  it('puts an X-Request-Id on every response (README: every response carries one)', () => {
    const missing = seen.filter((s) => !/^[0-9a-f-]{36}$/.test(s.headers.get('x-request-id') ?? '')).map((s) => `${s.label}: ${s.status}`);
    expect(missing, `responses without X-Request-Id:\n${missing.join('\n')}`).to.deep.equal([]);
  });

  it('puts Cache-Control: no-store on every response (README: every response has it)', () => {
    const missing = seen.filter((s) => s.headers.get('cache-control') !== 'no-store').map((s) => `${s.label}: ${s.status}`);
    expect(missing, `responses without Cache-Control: no-store:\n${missing.join('\n')}`).to.deep.equal([]);
  });

  it('shows no stack trace, no filesystem path and no "Error:" in any response, headers included', () => {
    const needles = [tmp.dir, ROOT.replace(/\/$/, ''), '/work/', 'node_modules', 'Error:', '/tmp/', 'dist/src', 'file://'];
    const leaks: string[] = [];
    for (const s of seen) {
      const text = `${[...s.headers].map(([k, v]) => `${k}: ${v}`).join('\n')}\n${s.body}`;
      for (const needle of needles) if (text.includes(needle)) leaks.push(`${s.label} (${s.status}): contains ${JSON.stringify(needle)}`);
      const frame = STACK_FRAME.exec(text);
      if (frame) leaks.push(`${s.label} (${s.status}): a stack frame ${JSON.stringify(frame[0])}`);
    }
    expect(leaks, leaks.join('\n')).to.deep.equal([]);
  });
});
