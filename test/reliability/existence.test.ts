import { expect } from 'chai';
import fc from 'fast-check';
import { api, startTestServer, type ApiResponse, type TestServer } from '../support/server.js';
import { head, urlOf } from '../http/adminApi.js';

/**
 * Existence leaks (see README, Keys, roles and permissions), as one model-based test over every route. A role that may not read
 * an item must learn nothing about it beyond "this path is taken". fast-check draws a world of
 * items, some of them hidden from a role (by their own read permission, by a folder rule, in the
 * trash or not); the world is written into one organization whole (A) and, for each role, into
 * another organization without what that role may not read (B). Then the role asks both the same
 * questions, on every route, about every path (the items', paths under them, folders of them,
 * unknown ones): the answers must be alike, with ids, commit ids, times, key ids and the
 * organization replaced by placeholders, except for a write where A's path is taken by something
 * hidden: there A must answer with a 409 `Path conflict: …` and nothing more telling.
 *
 * LEAK_RUNS (default 4) sets the number of worlds; LEAK_SEED replays one fast-check reported.
 */
const LEAK_RUNS = Number(process.env.LEAK_RUNS ?? 4);
const LEAK_SEED = process.env.LEAK_SEED === undefined ? undefined : Number(process.env.LEAK_SEED);

type Role = 'reader' | 'writer';
/** Who may read an item: anyone (`read`), writers and admins (`write`), admins (`admin`), or admins by the rule of folder `sec`. */
type Level = 'read' | 'write' | 'admin' | 'folder';

interface WorldItem {
  path: string;
  level: Level;
  /** Contents of its versions, oldest first. */
  versions: string[];
  trashed: boolean;
}

const RANK: Record<Role, number> = { reader: 0, writer: 1 };
const LEVEL_RANK: Record<Level, number> = { read: 0, write: 1, admin: 2, folder: 2 };
const PERMISSION: Record<Level, string> = { read: 'inherit', write: 'knowledge:write', admin: 'knowledge:admin', folder: 'inherit' };
const hiddenFrom = (role: Role, item: WorldItem): boolean => LEVEL_RANK[item.level] > RANK[role];

/** Folders with an extension in their name (`v.d`) can also be asked for as items: "a folder beside a hidden item". */
const OPEN_FOLDERS = ['', 'a/', 'a/b/', 'v.d/'];
const SECRET_FOLDERS = ['sec/', 'sec/in/'];
const FILES = ['x.md', 'y.md', 'h.md', 'n.json'];

const worldItem: fc.Arbitrary<WorldItem> = fc
  .record({
    level: fc.constantFrom<Level>('read', 'write', 'admin', 'folder'),
    open: fc.constantFrom(...OPEN_FOLDERS),
    secret: fc.constantFrom(...SECRET_FOLDERS),
    file: fc.constantFrom(...FILES),
    versions: fc.array(fc.constantFrom('alpha\n', 'beta\n', 'gamma\n', '# delta\n'), { minLength: 1, maxLength: 3 }),
    trashed: fc.boolean(),
  })
  .map(({ level, open, secret, file, versions, trashed }) => ({
    path: `${level === 'folder' ? secret : open}${file}`,
    level,
    versions,
    trashed,
  }));

const world = fc.uniqueArray(worldItem, { minLength: 1, maxLength: 9, selector: (i) => i.path });

/** Values that differ between two organizations however alike their items are. */
const VOLATILE_KEYS = new Set(['id', 'commitId', 'head', 'createdAt', 'updatedAt', 'timestamp', 'deletedAt', 'organizationId', 'keyId', 'createdBy', 'updatedBy', 'deletedBy']);

function scrub(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(scrub);
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, VOLATILE_KEYS.has(k) && v !== null ? `<${k}>` : scrub(v)]));
  }
  if (typeof value === 'string') return value.replace(/\b[0-9a-f]{40}\b/g, '<commit>');
  return value;
}

/** What a client can tell from an answer, minus what differs between any two organizations. */
function seen(res: ApiResponse): unknown {
  return { status: res.status, etag: res.headers.has('etag'), body: scrub(res.body) };
}

interface Store {
  orgId: string;
  admin: string;
  keys: Record<Role, string>;
  /** The head before the world was written: the `since` of the change feed. */
  base: string;
  /** The head once it was written. */
  built: string;
}

describe('Reliability: existence leaks — a hidden item is an unknown one, except that its path is taken', function () {
  this.timeout(600_000);
  let server: TestServer;
  let orgs = 0;
  const counts = { worlds: 0, compared: 0, taken: 0 };

  before(async () => {
    server = await startTestServer();
  });
  after(async () => {
    await server?.close();
    console.log(`      existence: ${counts.worlds} worlds, ${counts.compared} request pairs compared, ${counts.taken} writes at taken paths`);
  });

  async function newStore(items: readonly WorldItem[]): Promise<Store> {
    const orgId = `leak-${++orgs}`;
    const admin = await server.org(orgId);
    const keys = { reader: await server.key('reader', orgId, 'reader'), writer: await server.key('writer', orgId, 'writer') };
    const ok = async (res: Promise<ApiResponse>): Promise<void> => {
      const r = await res;
      expect(r.status, `${orgId}: ${JSON.stringify(r.body)}`).to.equal(200);
    };
    await ok(api(urlOf(server, '/folders/sec'), { method: 'PUT', key: admin, body: { requiredReadPermission: 'knowledge:admin' } }));
    const base = await head(server, orgId);
    // Versions are written round-robin, so the commits of hidden and visible items interleave.
    const longest = Math.max(...items.map((i) => i.versions.length));
    for (let v = 0; v < longest; v++) {
      for (const item of items) {
        const content = item.versions[v];
        if (content === undefined) continue;
        const body = v === 0 ? { content, requiredReadPermission: PERMISSION[item.level] } : { content };
        await ok(api(urlOf(server, `/items/${item.path}`), { method: 'PUT', key: admin, body }));
      }
    }
    for (const item of items) if (item.trashed) await ok(api(urlOf(server, `/items/${item.path}`), { method: 'DELETE', key: admin }));
    return { orgId, admin, keys, base, built: await head(server, orgId) };
  }

  /** Every path worth asking about: the items', paths under them, the folders that can be items, unknown ones. */
  function probePaths(items: readonly WorldItem[]): string[] {
    const paths = new Set<string>(['q.md', 'a/q.md', 'sec/q.md', 'v.d', 'v.d/q.md']);
    for (const item of items) {
      paths.add(item.path);
      paths.add(`${item.path}/under.md`);
    }
    return [...paths].sort();
  }

  /** Taken in A by something hidden from the role: the item itself, an item above it, or items below it. */
  function takenByHidden(path: string, hidden: readonly WorldItem[]): boolean {
    return hidden.some((h) => h.path === path || path.startsWith(`${h.path}/`) || h.path.startsWith(`${path}/`));
  }

  /** The read requests, per probe path and over the whole store; `rest` is relative to the API prefix. */
  function reads(paths: readonly string[]): Array<{ label: string; rest: (s: Store) => string; headers?: Record<string, string> }> {
    const out: Array<{ label: string; rest: (s: Store) => string; headers?: Record<string, string> }> = [
      { label: 'list', rest: () => '' },
      { label: 'list without content', rest: () => '?content=false' },
      { label: 'changes', rest: (s) => `/changes?since=${s.base}` },
    ];
    for (const prefix of ['a/', 'a/b/', 'v.d/', 'sec/', 'sec/in/', 'x.md/']) out.push({ label: `list ${prefix}`, rest: () => `?prefix=${prefix}` });
    for (const p of paths) {
      out.push(
        { label: `get ${p}`, rest: () => `/items/${p}` },
        { label: `get ${p} if-none-match *`, rest: () => `/items/${p}`, headers: { 'If-None-Match': '*' } },
        { label: `get ${p} version 1`, rest: () => `/items/${p}?version=1` },
        { label: `get ${p} version 3`, rest: () => `/items/${p}?version=3` },
        { label: `get ${p} at base`, rest: (s) => `/items/${p}?ref=${s.base}` },
        { label: `get ${p} as built`, rest: (s) => `/items/${p}?ref=${s.built}` },
        { label: `history ${p}`, rest: () => `/history/${p}` },
        { label: `diff ${p}`, rest: () => `/diff/${p}?from=1&to=2` },
      );
    }
    return out;
  }

  /** Every page of a paged list, following the cursors. */
  async function pages(store: Store, role: Role, query: string): Promise<unknown[]> {
    const out: unknown[] = [];
    let cursor: string | null = null;
    for (let page = 0; page < 50; page++) {
      const res = await api(urlOf(server, `?limit=2${query}${cursor ? `&cursor=${cursor}` : ''}`), { key: store.keys[role] });
      out.push(seen(res));
      cursor = (res.body?.data?.nextCursor as string | null | undefined) ?? null;
      if (!cursor) break;
    }
    return out;
  }

  async function compareRole(role: Role, items: readonly WorldItem[], a: Store, b: Store): Promise<void> {
    const hidden = items.filter((i) => hiddenFrom(role, i));
    const paths = probePaths(items);
    const ask = (s: Store, rest: string, init: { method?: string; body?: unknown; headers?: Record<string, string> } = {}) =>
      api(urlOf(server, rest), { key: s.keys[role], ...init });
    const same = (label: string, x: ApiResponse, y: ApiResponse): void => {
      counts.compared++;
      expect(seen(x), `${role}: ${label}`).to.deep.equal(seen(y));
    };

    for (const r of reads(paths)) {
      same(r.label, await ask(a, r.rest(a), { headers: r.headers ?? {} }), await ask(b, r.rest(b), { headers: r.headers ?? {} }));
    }
    for (const query of ['', '&prefix=a/', '&content=false']) {
      counts.compared++;
      expect(await pages(a, role, query), `${role}: pages of ${query}`).to.deep.equal(await pages(b, role, query));
    }
    // Clones are for admins: the role is refused alike, with its key as the Basic password.
    const clone = async (s: Store): Promise<unknown> => {
      const res = await fetch(`${server.url}/git/${s.orgId}.git/info/refs?service=git-upload-pack`, {
        headers: { Authorization: `Basic ${Buffer.from(`x:${s.keys[role]}`).toString('base64')}` },
      });
      return { status: res.status, body: (await res.text()).replaceAll(s.orgId, '<org>') };
    };
    counts.compared++;
    expect(await clone(a), `${role}: clone`).to.deep.equal(await clone(b));
    // The change feed from each store's current head: empty in both, nothing to tell the stores apart.
    same('changes since head', await ask(a, `/changes?since=${await head(server, a.orgId)}`), await ask(b, `/changes?since=${await head(server, b.orgId)}`));

    // Writes. Those that change nothing come first, then rollbacks (alike in both stores), then moves, then PUTs.
    // `path`: the write creates an item there (refused in A where the path is taken by something hidden);
    // `from`: it moves the item there away.
    const writes: Array<{ label: string; rest: string; method: string; body?: unknown; headers?: Record<string, string>; path?: string; from?: string }> = [];
    for (const p of paths) {
      writes.push(
        { label: `put ${p} if-match bogus`, method: 'PUT', rest: `/items/${p}`, body: { content: 'probe' }, headers: { 'If-Match': '"bogus"' }, path: p },
        { label: `put ${p} bad body`, method: 'PUT', rest: `/items/${p}`, body: { content: 7 } },
        { label: `put ${p} with permissions`, method: 'PUT', rest: `/items/${p}`, body: { content: 'x', requiredReadPermission: 'knowledge:read' } },
        { label: `delete ${p}`, method: 'DELETE', rest: `/items/${p}` },
        { label: `restore ${p}`, method: 'POST', rest: '/trash/restore', body: { path: p } },
        { label: `purge ${p}`, method: 'DELETE', rest: `/trash/items/${p}` },
      );
    }
    for (const p of paths) writes.push({ label: `rollback ${p}`, method: 'POST', rest: '/rollback', body: { path: p, version: 1 } });
    // A move into a path is a create there; a move from a hidden item is a move from nothing.
    paths.forEach((p, i) => {
      writes.push(
        { label: `put move source ${i}`, method: 'PUT', rest: `/items/mvsrc/${i}.md`, body: { content: `moved into ${p}\n` } },
        { label: `move into ${p}`, method: 'POST', rest: '/move', body: { from: `mvsrc/${i}.md`, to: p }, path: p },
        { label: `move ${p} away if-match bogus`, method: 'POST', rest: '/move', body: { from: p, to: `mvdst/${i}.md`, ifMatch: 'bogus' }, from: p },
        { label: `move ${p} away`, method: 'POST', rest: '/move', body: { from: p, to: `mvdst/${i}.md` }, from: p },
      );
    });
    for (const p of paths) writes.push({ label: `put ${p}`, method: 'PUT', rest: `/items/${p}`, body: { content: `probe of ${p}\n` }, path: p });

    // Items a PUT created in B where A's path was taken: from then on B holds what A does not, and a
    // later PUT at or around such a path may be refused by B alone. That is the probe's doing, not a leak.
    const onlyInB: WorldItem[] = [];
    for (const w of writes) {
      // Not sent at all: B would change what it holds alone (a move would take its item away, unrecorded).
      if (w.path !== undefined && takenByHidden(w.path, onlyInB)) continue;
      if (w.from !== undefined && takenByHidden(w.from, onlyInB)) continue;
      const init = { method: w.method, body: w.body, headers: w.headers ?? {} };
      const x = await ask(a, w.rest, init);
      const y = await ask(b, w.rest, init);
      if (w.path !== undefined && role === 'writer' && takenByHidden(w.path, hidden)) {
        counts.taken++;
        if (y.status === 200) onlyInB.push({ path: w.path, level: 'read', versions: [], trashed: false });
        // The one unavoidable signal: the path cannot be created. Nothing says what holds it.
        expect(x.status, `${role}: ${w.label} in A: ${JSON.stringify(x.body)}`).to.equal(409);
        expect(x.body?.error, `${role}: ${w.label} in A`).to.match(/^Path conflict: "[^"]+" (is taken|is an item, not a folder|is a folder of other items)$/);
        expect(x.headers.has('etag'), `${role}: ${w.label} in A`).to.equal(false);
        continue;
      }
      same(w.label, x, y);
    }
  }

  it(`answers alike for each role, hidden items or not (${LEAK_RUNS} worlds)`, async () => {
    await fc.assert(
      fc.asyncProperty(world, async (items) => {
        counts.worlds++;
        const a = await newStore(items);
        for (const role of ['reader', 'writer'] as const) {
          const b = await newStore(items.filter((i) => !hiddenFrom(role, i)));
          await compareRole(role, items, a, b);
        }
      }),
      { numRuns: LEAK_RUNS, endOnFailure: true, ...(LEAK_SEED === undefined ? {} : { seed: LEAK_SEED }) },
    );
  });
});
