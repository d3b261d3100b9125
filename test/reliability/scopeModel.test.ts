import { expect } from 'chai';
import fc from 'fast-check';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { createKey } from '../../src/domain/keys.js';
import { api, startTestServer, type ApiResponse, type TestServer } from '../support/server.js';
import { connectMcp } from '../support/mcp.js';
import { head, urlOf } from '../http/adminApi.js';
import { keyStoreOf } from '../http/helpers.js';

/**
 * Scoped keys against a model: what a scoped key sees is what the unscoped key of the same role
 * sees, filtered to the scopes; what it writes outside them is refused with nothing written; and
 * what it writes inside them is answered as for the unscoped key.
 *
 * fast-check draws a store (items with read and write permissions, folder rules, some items in the
 * trash), scoped keys (a role and 1–3 folders) and a sequence of writes. The store is built twice,
 * in folders A and B of one organization. Then, for every scoped key (scopes inside A):
 * - reads, before and after the writes: list (paged), get, `?version=1`, history, diff, search
 *   (paged), changes, trash and folder rules (admin roles), and MCP `list`, `search`, `read` and
 *   `resources/list` each equal
 *   the unscoped key's answers for A filtered to the scopes; outside, 404 as for a missing item.
 * - writes (PUT, DELETE, POST /move, POST /commits, rollback, restore, purge, folder rules): one
 *   that touches anything outside the scopes is refused (4xx) and the branch does not move; one
 *   inside is sent by the scoped key to A and by the unscoped key to B, and both get the same
 *   status and message and leave A and B alike.
 *
 * SCOPE_MODEL_RUNS (default 8) sets the number of stores; SCOPE_MODEL_SEED replays one.
 */
const RUNS = Number(process.env.SCOPE_MODEL_RUNS ?? 8);
const SEED = process.env.SCOPE_MODEL_SEED === undefined ? undefined : Number(process.env.SCOPE_MODEL_SEED);

const WORDS = ['apple', 'pear'];
const FOLDERS = ['open', 'team', 'team/inner', 'board'];
const FILES = ['a.md', 'b.md'];
const SCOPES = ['open/', 'team/', 'team/inner/', 'board/', 'empty/'];
const READS = ['inherit', 'knowledge:read', 'knowledge:write', 'knowledge:admin'];
const WRITES = ['inherit', 'knowledge:write', 'knowledge:admin'];
const ROLES = ['reader', 'writer', 'admin'] as const;
type Role = (typeof ROLES)[number];
const PATHS = FOLDERS.flatMap((f) => FILES.map((n) => `${f}/${n}`));

type Op = { op: 'put'; path: string; content: string } | { op: 'delete'; path: string } | { op: 'move'; from: string; to: string };
type Write =
  | Op
  | { op: 'commit'; operations: Op[] }
  | { op: 'rollback' | 'restore' | 'purge'; path: string }
  | { op: 'rule'; folder: string; read: string };

const path = fc.constantFrom(...PATHS);
const content = fc.subarray(WORDS, { minLength: 1 }).map((w) => `${w.join(' ')}\n`);
const op: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ op: fc.constant('put' as const), path, content }),
  fc.record({ op: fc.constant('delete' as const), path }),
  fc.record({ op: fc.constant('move' as const), from: path, to: path }),
);
const write: fc.Arbitrary<Write> = fc.oneof(
  { weight: 6, arbitrary: op },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('commit' as const), operations: fc.array(op, { minLength: 1, maxLength: 3 }) }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constantFrom('rollback' as const, 'restore' as const, 'purge' as const), path }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('rule' as const), folder: fc.constantFrom(...FOLDERS), read: fc.constantFrom(...READS) }) },
);
/** A permission field, `inherit` half of the time: items most roles may write, so that writes inside the scopes succeed. */
const mostlyInherit = (values: readonly string[]): fc.Arbitrary<string> =>
  fc.oneof({ weight: 3, arbitrary: fc.constant('inherit') }, { weight: 2, arbitrary: fc.constantFrom(...values) });
/** Scopes as a key holds them: none inside another (the API refuses that). */
const scopes = fc
  .uniqueArray(fc.constantFrom(...SCOPES), { minLength: 1, maxLength: 3 })
  .map((list) => list.filter((s) => !list.some((o) => o !== s && s.startsWith(o))));
const world = fc.record({
  items: fc.uniqueArray(fc.record({ path, read: mostlyInherit(READS), write: mostlyInherit(WRITES), content }), {
    minLength: 1,
    maxLength: 8,
    selector: (i) => i.path,
  }),
  rules: fc.uniqueArray(fc.record({ folder: fc.constantFrom(...FOLDERS), read: mostlyInherit(READS) }), { maxLength: 2, selector: (r) => r.folder }),
  trashed: fc.subarray(PATHS, { maxLength: 3 }),
  // The first key writes (a writer or an admin: a reader's writes are all refused, which tells little); any may read.
  keys: fc.tuple(
    fc.record({ role: fc.constantFrom<Role>('writer', 'admin'), scopes }),
    fc.option(fc.record({ role: fc.constantFrom(...ROLES), scopes }), { nil: undefined }),
  ),
  writes: fc.array(write, { maxLength: 10 }),
});

/** The paths a write touches: all of them must be inside the scopes for it to be allowed. */
function touched(w: Write): string[] {
  switch (w.op) {
    case 'move':
      return [w.from, w.to];
    case 'commit':
      return w.operations.flatMap(touched);
    case 'rule':
      return [`${w.folder}/`];
    default:
      return [w.path];
  }
}

/** The request for a write, its paths under folder `ns`. */
function request(w: Write, ns: string): { method: string; url: string; body?: unknown } {
  const at = (p: string): string => `${ns}/${p}`;
  const asOp = (o: Op): Record<string, string> =>
    o.op === 'move' ? { op: 'move', from: at(o.from), to: at(o.to) } : o.op === 'put' ? { op: 'put', path: at(o.path), content: o.content } : { op: 'delete', path: at(o.path) };
  switch (w.op) {
    case 'put':
      return { method: 'PUT', url: `/items/${at(w.path)}`, body: { content: w.content } };
    case 'delete':
      return { method: 'DELETE', url: `/items/${at(w.path)}` };
    case 'move':
      return { method: 'POST', url: '/move', body: { from: at(w.from), to: at(w.to) } };
    case 'commit':
      return { method: 'POST', url: '/commits', body: { operations: w.operations.map(asOp) } };
    case 'rollback':
      return { method: 'POST', url: '/rollback', body: { path: at(w.path), version: 1 } };
    case 'restore':
      return { method: 'POST', url: '/trash/restore', body: { path: at(w.path) } };
    case 'purge':
      return { method: 'DELETE', url: `/trash/items/${at(w.path)}` };
    case 'rule':
      return { method: 'PUT', url: `/folders/${at(w.folder)}`, body: { requiredReadPermission: w.read } };
  }
}

describe('scoped keys against a model (fast-check)', function () {
  this.timeout(900_000);

  let server: TestServer;
  let admin: string;
  const plain = {} as Record<Role, string>;

  before(async () => {
    server = await startTestServer();
    admin = server.adminKey;
    for (const role of ROLES) plain[role] = role === 'admin' ? admin : await server.key(role);
    // A first commit, so that every run has a `since` for the change feed.
    expect((await api(urlOf(server, '/items/start.md'), { method: 'PUT', key: admin, body: { content: 'start\n' } })).status).to.equal(200);
  });
  after(() => server?.close());

  const call = (key: string, url: string, init: { method?: string; body?: unknown } = {}): Promise<ApiResponse> => api(urlOf(server, url), { key, ...init });
  const data = <T>(res: ApiResponse, field: string): T => {
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
    return res.body?.data?.[field] as T;
  };

  /** Every page of a paged route (list or search), two at a time. */
  async function paged(key: string, url: string, field: 'items' | 'results'): Promise<string[]> {
    const out: string[] = [];
    let cursor: string | null = null;
    do {
      const res = await call(key, `${url}&limit=2${cursor ? `&cursor=${cursor}` : ''}`);
      out.push(...data<Array<{ path: string }>>(res, field).map((i) => i.path));
      cursor = res.body?.data?.nextCursor as string | null;
    } while (cursor);
    return out;
  }

  /** A's items and trash as the unscoped admin sees them, paths relative to `ns`: what a write left. */
  async function state(ns: string): Promise<unknown> {
    const items = data<Array<Record<string, string>>>(await call(admin, `?prefix=${ns}/`), 'items');
    const trash = data<Array<{ path: string }>>(await call(admin, '/trash'), 'items').filter((t) => t.path.startsWith(`${ns}/`));
    const rules = data<Array<{ folder: string; requiredReadPermission: string }>>(await call(admin, '/folders'), 'folders').filter((r) => r.folder.startsWith(`${ns}/`));
    const rel = (p: string): string => p.slice(ns.length + 1);
    return {
      items: items.map((i) => [rel(i.path as string), i.content, i.requiredReadPermission, i.requiredWritePermission]),
      trash: trash.map((t) => rel(t.path)).sort(),
      rules: rules.map((r) => [rel(r.folder), r.requiredReadPermission]),
    };
  }

  /** Every read route: the scoped key's answer equals the unscoped key's for `ns`, filtered to the scopes. */
  async function checkReads(ns: string, sinces: readonly string[], key: { secret: string; role: Role; scopes: string[] }, when: string): Promise<void> {
    const inside = (p: string): boolean => key.scopes.some((s) => p.startsWith(`${ns}/${s}`));
    const base = plain[key.role];
    const say = (what: string): string => `${key.role} ${JSON.stringify(key.scopes)} ${when}: ${what}`;

    const truth = await paged(base, `?prefix=${ns}/&content=false`, 'items');
    expect(await paged(key.secret, '?content=false', 'items'), say('list')).to.deep.equal(truth.filter(inside));
    expect(await paged(key.secret, `?prefix=${ns}/team/&content=false`, 'items'), say('list team/')).to.deep.equal(truth.filter((p) => inside(p) && p.startsWith(`${ns}/team/`)));
    for (const word of WORDS) {
      const found = await paged(key.secret, `/search?q=${word}`, 'results');
      const expected = await paged(base, `/search?q=${word}&prefix=${ns}/`, 'results');
      expect(found.sort(), say(`search ${word}`)).to.deep.equal(expected.filter(inside).sort());
    }
    for (const p of PATHS.map((rel) => `${ns}/${rel}`)) {
      for (const url of [`/items/${p}`, `/items/${p}?version=1`, `/history/${p}`, `/diff/${p}?from=1&to=1`]) {
        const got = await call(key.secret, url);
        if (inside(p)) {
          const want = await call(base, url);
          expect([got.status, got.body], say(url)).to.deep.equal([want.status, want.body]);
        } else expect([got.status, got.body?.error], say(url)).to.deep.equal([404, 'Knowledge item not found']);
      }
    }
    // From before the store was built (every item new), and from before the writes (items that existed then).
    for (const since of sinces) {
      const changes = (k: string): Promise<Array<{ path: string }>> => call(k, `/changes?since=${since}`).then((r) => data(r, 'changes'));
      const allChanges = (await changes(base)).filter((c) => c.path.startsWith(`${ns}/`));
      expect(await changes(key.secret), say(`changes since ${since}`)).to.deep.equal(allChanges.filter((c) => inside(c.path)));
    }
    if (key.role === 'admin') {
      const trash = async (k: string): Promise<string[]> => data<Array<{ path: string }>>(await call(k, '/trash'), 'items').map((t) => t.path);
      expect(await trash(key.secret), say('trash')).to.deep.equal((await trash(base)).filter((p) => p.startsWith(`${ns}/`) && inside(p)));
      const rules = async (k: string): Promise<string[]> => data<Array<{ folder: string }>>(await call(k, '/folders'), 'folders').map((r) => r.folder);
      expect(await rules(key.secret), say('folder rules')).to.deep.equal((await rules(base)).filter((f) => inside(`${f}/`)));
    }
    const client = await connectMcp(server, key.secret);
    try {
      const listed = (await client.callTool({ name: 'list', arguments: { limit: 100 } })) as CallToolResult;
      expect((listed.structuredContent as { items: Array<{ path: string }> }).items.map((i) => i.path), say('MCP list')).to.deep.equal(truth.filter(inside));
      expect((await client.listResources()).resources.map((r) => r.name), say('MCP resources/list')).to.deep.equal(truth.filter(inside));
      const found = (await client.callTool({ name: 'search', arguments: { query: WORDS[0], limit: 100 } })) as CallToolResult;
      const expected = await paged(base, `/search?q=${WORDS[0]}&prefix=${ns}/`, 'results');
      expect((found.structuredContent as { results: Array<{ path: string }> }).results.map((r) => r.path).sort(), say('MCP search')).to.deep.equal(
        expected.filter(inside).sort(),
      );
      for (const p of PATHS.map((rel) => `${ns}/${rel}`)) {
        const read = (await client.callTool({ name: 'read', arguments: { path: p } })) as CallToolResult;
        expect(read.isError === true, say(`MCP read ${p}`)).to.equal(!(inside(p) && truth.includes(p)));
      }
    } finally {
      await client.close();
    }
  }

  it(`${RUNS} drawn stores, keys and writes: a scoped key sees the unscoped view filtered, and writes nothing outside`, async () => {
    let run = 0;
    await fc.assert(
      fc.asyncProperty(world, async ({ items, rules, trashed, keys, writes }) => {
        const ns = `m${run++}`;
        const [A, B] = [`${ns}a`, `${ns}b`];
        const since = await head(server);
        for (const at of [A, B]) {
          for (const r of rules) expect((await call(admin, `/folders/${at}/${r.folder}`, { method: 'PUT', body: { requiredReadPermission: r.read } })).status).to.equal(200);
          for (const i of items) {
            const res = await call(admin, `/items/${at}/${i.path}`, { method: 'PUT', body: { content: i.content, requiredReadPermission: i.read, requiredWritePermission: i.write } });
            expect(res.status, JSON.stringify(res.body)).to.equal(200);
          }
          for (const p of trashed) await call(admin, `/items/${at}/${p}`, { method: 'DELETE' });
        }
        const scoped = [];
        for (const k of keys.filter((k) => k !== undefined)) {
          const secret = (await createKey({ keys: keyStoreOf(server), orgId: 'default', role: k.role, name: `${k.role}-${ns}`, scopes: k.scopes.map((s) => `${A}/${s}`) })).secret;
          scoped.push({ secret, role: k.role, scopes: k.scopes });
          await checkReads(A, [since], { secret, role: k.role, scopes: k.scopes }, 'before the writes');
        }
        const [writer] = scoped as [(typeof scoped)[number]];
        const built = await head(server);
        for (const w of writes) {
          const inside = touched(w).every((p) => writer.scopes.some((s) => p.startsWith(s)));
          const before = await head(server);
          const mine = request(w, A);
          const got = await call(writer.secret, mine.url, mine);
          const say = `${writer.role} ${JSON.stringify(writer.scopes)} ${JSON.stringify(w)}: ${JSON.stringify(got.body)}`;
          if (!inside) {
            expect(got.status, say).to.be.within(400, 499);
            expect(await head(server), `${say}: nothing written`).to.equal(before);
            continue;
          }
          const theirs = request(w, B);
          const want = await call(plain[writer.role], theirs.url, theirs);
          const message = (r: ApiResponse): string | undefined => r.body?.error?.replaceAll(`${A}/`, '').replaceAll(`${B}/`, '');
          expect([got.status, message(got)], say).to.deep.equal([want.status, message(want)]);
          expect(await state(A), `${say}: A and B alike`).to.deep.equal(await state(B));
        }
        for (const key of scoped) await checkReads(A, [since, built], key, 'after the writes');
      }),
      { numRuns: RUNS, ...(SEED === undefined ? {} : { seed: SEED }), endOnFailure: true },
    );
  });
});
