import http from 'node:http';
import { expect } from 'chai';
import fc from 'fast-check';
import { operations } from '../../src/http/openapi/document.js';
import type { OperationSpec } from '../../src/http/openapi/operation.js';
import { requestSchemas } from '../../src/http/requestSchemas.js';
import { responseMismatch } from '../support/openapiCheck.js';
import { hugeString, mutated, oddString, valid, type FieldHints } from '../support/schemaArbitrary.js';
import { api, startTestServer, type TestServer } from '../support/server.js';

/**
 * A schema-driven API fuzzer (see README, API description): for every operation of the API description,
 * requests drawn from its own schemas — valid ones and ones a step off (wrong types, missing and unknown
 * fields, odd Unicode, huge strings, hostile paths, bodies that are not JSON) — sent over real HTTP as an
 * admin, a writer, a reader and with no key. Every answer must be below 500 and match the description.
 *
 * API_FUZZ_RUNS (default 20) sets the requests per operation; API_FUZZ_SEED replays a run.
 */
const RUNS = Number(process.env.API_FUZZ_RUNS ?? 20);
const SEED = process.env.API_FUZZ_SEED === undefined ? undefined : Number(process.env.API_FUZZ_SEED);

type Who = 'admin' | 'writer' | 'reader' | 'none';

interface Drawn {
  who: Who;
  /** The request target, already encoded, as it goes on the wire. */
  target: string;
  body?: string;
  contentType?: string;
}

/** Paths that exist (so that valid requests reach the domain), and ones that never could. */
const LIVE = ['fuzz/a.md', 'fuzz/deep/b.md', 'notes.md'];
const itemPath: fc.Arbitrary<string> = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom(...LIVE, 'gone.md', 'fuzz', 'new/c.md') },
  { weight: 2, arbitrary: fc.stringMatching(/^[a-z0-9-]{1,8}(\/[a-z0-9-]{1,8}){0,2}\.md$/) },
  { weight: 1, arbitrary: oddString },
  { weight: 1, arbitrary: fc.constantFrom('%C0%AF', '%FF', '%', '%2', '%00') },
  { weight: 1, arbitrary: fc.constantFrom('../etc/passwd', 'a//b.md', '.git/config', '.trash/x.md', 'a/./b.md', '/abs.md', 'x'.repeat(5000)) },
);

/** encodeURIComponent that takes any string: a lone surrogate goes as the UTF-8 of U+FFFD, as a browser sends it. */
const pct = (s: string): string =>
  [...Buffer.from(s, 'utf8')].map((b) => (/[A-Za-z0-9\-_.~]/.test(String.fromCharCode(b)) ? String.fromCharCode(b) : `%${b.toString(16).toUpperCase().padStart(2, '0')}`)).join('');

/** How a path goes into the URL: segment by segment (the usual), with %2F for its slashes, or as it is. */
const encodePath = (path: string, how: 'segments' | 'whole' | 'raw'): string => {
  if (how === 'whole') return pct(path);
  if (how === 'raw' && /^[\x21-\x7e]*$/.test(path)) return path;
  return path.split('/').map(pct).join('/');
};

function hints(extra: { keyIds: string[] }): FieldHints {
  return {
    path: itemPath,
    from: itemPath,
    to: itemPath,
    folder: fc.constantFrom('fuzz', 'fuzz/deep', 'new'),
    content: fc.oneof(fc.string({ maxLength: 200 }), oddString),
    'integer:version': fc.integer({ min: 1, max: 4 }),
    'integer:from': fc.integer({ min: 1, max: 4 }),
    'integer:to': fc.integer({ min: 1, max: 4 }),
    requiredReadPermission: fc.constantFrom('inherit', 'knowledge:read', 'knowledge:write', 'knowledge:admin', 'root'),
    requiredWritePermission: fc.constantFrom('inherit', 'knowledge:write', 'knowledge:admin', 'knowledge:read'),
    role: fc.constantFrom('reader', 'writer', 'admin', 'root'),
    ifMatch: fc.constantFrom('*', '"0000"', 'W/"x"', ' '),
    keyId: fc.oneof(fc.constantFrom(...extra.keyIds), oddString),
    since: fc.oneof(fc.stringMatching(/^[0-9a-f]{40}$/), fc.constantFrom('2020-01-01T00:00:00Z', 'yesterday', '')),
    commitId: fc.oneof(fc.stringMatching(/^[0-9a-f]{40}$/), oddString),
    'array:scopes': fc.array(fc.constantFrom('fuzz', 'fuzz/deep', 'new', '', '..', 'a/'), { maxLength: 3 }),
    url: fc.constantFrom('https://example.invalid/hook', 'http://127.0.0.1:9/hook', 'ftp://x/y', 'not a url', ''),
    'array:events': fc.array(fc.constantFrom('commit', 'item', 'nope', ''), { maxLength: 3 }),
    id: fc.oneof(fc.constantFrom('wh_nope'), oddString),
    repo: fc.oneof(fc.constant('default.git'), fc.constant('nope.git'), oddString),
  };
}

/** A query string from a drawn object: arrays repeat the parameter, objects go as JSON. */
function queryString(query: unknown): string {
  if (query === null || typeof query !== 'object' || Array.isArray(query)) return query === undefined ? '' : `?${pct(String(query))}`;
  const parts: string[] = [];
  for (const [name, value] of Object.entries(query as Record<string, unknown>)) {
    for (const v of Array.isArray(value) ? value : [value]) {
      parts.push(`${pct(name)}=${pct(typeof v === 'object' && v !== null ? JSON.stringify(v) : String(v))}`);
    }
  }
  return parts.length ? `?${parts.join('&')}` : '';
}

/** The valid body of POST /commits: its operations drawn from each op's own schema. */
function commitBody(h: FieldHints): fc.Arbitrary<unknown> {
  const op = fc.oneof(valid(requestSchemas.putOperation, h), valid(requestSchemas.deleteOperation, h), valid(requestSchemas.moveOperation, h));
  return fc.record({ message: fc.string({ maxLength: 30 }), operations: fc.array(op, { minLength: 1, maxLength: 3 }) }, { requiredKeys: ['operations'] });
}

const mcpBody: fc.Arbitrary<unknown> = fc.record({
  jsonrpc: fc.constantFrom('2.0', '1.0'),
  id: fc.oneof(fc.integer(), fc.string({ maxLength: 5 })),
  method: fc.constantFrom('initialize', 'tools/list', 'resources/list', 'ping', 'tools/call', 'nope'),
  params: fc.oneof(fc.constant({}), fc.record({ name: fc.constantFrom('get', 'put', 'search', 'list'), arguments: fc.dictionary(fc.constantFrom('path', 'content', 'q', 'limit'), fc.oneof(fc.string({ maxLength: 10 }), fc.integer())) })),
});

function drawn(spec: OperationSpec, h: FieldHints): fc.Arbitrary<Drawn> {
  const params = [...spec.route.matchAll(/[:*](\w+)/g)].map((m) => m[1] as string);
  const paramValues = fc.tuple(...params.map((p) => (h[p] ?? oddString) as fc.Arbitrary<string>), fc.constantFrom<'segments' | 'whole' | 'raw'>('segments', 'segments', 'whole', 'raw'));
  const query = spec.query ? fc.oneof({ weight: 3, arbitrary: valid(spec.query, h) }, { weight: 2, arbitrary: mutated(spec.query, h) }) : fc.constantFrom(undefined, { extra: 'x' });
  const validBody = spec.operationId === 'commit' ? commitBody(h) : spec.operationId === 'mcp' ? mcpBody : spec.body ? valid(spec.body, h) : fc.constant(undefined);
  const raw = spec.rawBody
    ? fc.tuple(fc.oneof(fc.string({ maxLength: 200 }), oddString), fc.constantFrom(...spec.rawBody.media.filter((m) => !m.includes('*')), 'text/plain', 'application/pdf', 'image/png', ''))
    : undefined;
  const body: fc.Arbitrary<{ text?: string; contentType?: string }> = raw
    ? raw.map(([text, contentType]) => ({ text, contentType }))
    : spec.body
    ? fc.oneof(
        { weight: 6, arbitrary: validBody.map((b) => ({ text: JSON.stringify(b), contentType: 'application/json' })) },
        { weight: 3, arbitrary: mutated(spec.body, h).map((b) => ({ text: JSON.stringify(b) ?? 'null', contentType: 'application/json' })) },
        { weight: 1, arbitrary: fc.constantFrom('{', '', 'null', '[]', '"x"', '{"content":"\\ud800"}').map((text) => ({ text, contentType: 'application/json' })) },
        { weight: 1, arbitrary: fc.tuple(validBody, fc.constantFrom('text/plain', 'application/x-www-form-urlencoded', '')).map(([b, contentType]) => ({ text: JSON.stringify(b), contentType })) },
        { weight: 1, arbitrary: hugeString.map((s) => ({ text: JSON.stringify({ content: s.repeat(8) }), contentType: 'application/json' })) },
      )
    : fc.constant({});
  // Mostly keys that may act, so that most requests get past auth to the route and the domain.
  const who = fc.oneof(
    { weight: 4, arbitrary: fc.constant<Who>('admin') },
    { weight: 2, arbitrary: fc.constant<Who>('writer') },
    { weight: 1, arbitrary: fc.constant<Who>('reader') },
    { weight: 1, arbitrary: fc.constant<Who>('none') },
  );
  return fc.tuple(who, paramValues, query, body).map(([w, values, q, b]) => {
    const how = values[values.length - 1] as 'segments' | 'whole' | 'raw';
    let i = 0;
    const path = spec.route.replace(/\{\/\*\w+\}|\/\*\w+|:\w+/g, (m) => {
      const value = String(values[i++]);
      const encoded = encodePath(value, m.includes('*') ? how : 'whole');
      return m.startsWith(':') ? encoded : `/${encoded}`;
    });
    const d: Drawn = { who: w, target: `${path}${queryString(q)}`, ...(b.text !== undefined ? { body: b.text } : {}), ...(b.contentType ? { contentType: b.contentType } : {}) };
    // A counterexample printed whole could be megabytes of "x": its first characters say enough.
    const cut = (s: string | undefined): string => (s === undefined ? '' : s.length > 300 ? `${s.slice(0, 300)}…(${s.length} chars)` : s);
    return Object.assign(d, { [fc.toStringMethod]: () => `${d.who} ${cut(d.target)} ${d.contentType ?? ''} ${cut(d.body)}` });
  });
}

function send(server: TestServer, method: string, d: Drawn, key: string | undefined, git: boolean): Promise<{ status: number; contentType: string; text: string; headers: http.IncomingHttpHeaders }> {
  const url = new URL(server.url);
  const headers: Record<string, string> = { Connection: 'close', Accept: 'application/json, text/event-stream' };
  if (key) headers.Authorization = git ? `Basic ${Buffer.from(`x:${key}`).toString('base64')}` : `Bearer ${key}`;
  if (d.contentType) headers['Content-Type'] = d.contentType;
  return new Promise((resolve, reject) => {
    const req = http.request({ host: url.hostname, port: url.port, method, path: d.target, headers }, (res) => {
      if (String(res.headers['content-type']).startsWith('text/event-stream')) {
        // A stream that stays open: its status and headers are the answer.
        resolve({ status: res.statusCode ?? 0, contentType: String(res.headers['content-type']), text: '', headers: res.headers });
        req.destroy();
        return;
      }
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('error', reject);
      res.on('end', () => resolve({ status: res.statusCode ?? 0, contentType: String(res.headers['content-type'] ?? ''), text: Buffer.concat(chunks).toString('utf8'), headers: res.headers }));
    });
    // The server may refuse a large body before it is sent whole and close: the answer is what counts.
    req.on('error', reject);
    req.end(d.body);
  });
}

describe('reliability: a schema-driven API fuzzer (every operation of the description, four roles)', function () {
  this.timeout(Math.max(120_000, RUNS * operations.length * 200));
  let server: TestServer;
  const keys: Record<Who, string | undefined> = { admin: undefined, writer: undefined, reader: undefined, none: undefined };
  const keyIds: string[] = [];

  before(async () => {
    // Rate limits off: the fuzzer is one client sending as fast as it can, and 429s would hide the routes.
    server = await startTestServer({ config: { rateLimitPerKey: 0 } });
    keys.admin = server.adminKey;
    keys.writer = await server.key('writer');
    keys.reader = await server.key('reader');
    const victim = await api(`${server.url}/api/v1/knowledge/keys`, { method: 'POST', key: server.adminKey, body: { name: 'victim', role: 'reader' } });
    keyIds.push((victim.body?.data?.key as { id: string }).id);
    for (const path of [...LIVE, 'gone.md']) await api(`${server.url}/api/v1/knowledge/items/${path}`, { method: 'PUT', key: server.adminKey, body: { content: `# ${path}` } });
    await api(`${server.url}/api/v1/knowledge/items/gone.md`, { method: 'DELETE', key: server.adminKey });
  });
  after(async () => {
    await server.close();
  });

  it(`finds no 5xx and no answer outside the description (${RUNS} requests per operation)`, async () => {
    const started = Date.now();
    const statuses = new Map<number, number>();
    let requests = 0;
    const h = hints({ keyIds });
    for (const spec of operations) {
      const method = spec.method.toUpperCase();
      await fc.assert(
        fc.asyncProperty(drawn(spec, h), async (d) => {
          const res = await send(server, method, d, keys[d.who], spec.auth === 'git');
          requests += 1;
          statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
          let body: unknown;
          try {
            body = JSON.parse(res.text);
          } catch {
            body = undefined;
          }
          const where = `${method} ${d.target.slice(0, 200)} as ${d.who} -> ${res.status} ${res.text.slice(0, 200)}`;
          expect(res.status, where).to.be.below(500);
          const header = (name: string): string | undefined => {
            const value = res.headers[name.toLowerCase()];
            return Array.isArray(value) ? value.join(', ') : value;
          };
          expect(responseMismatch({ method, url: d.target, status: res.status, contentType: res.contentType, body, text: res.text, header }), where).to.equal(undefined);
        }),
        { numRuns: RUNS, ...(SEED === undefined ? {} : { seed: SEED }) },
      );
    }
    const seconds = (Date.now() - started) / 1000;
    const histogram = [...statuses].sort(([a], [b]) => a - b).map(([s, n]) => `${s}×${n}`);
    console.log(`      API fuzzing: ${operations.length} operations, ${requests} requests (${histogram.join(' ')}) in ${seconds.toFixed(1)} s`);
  });
});
