import { expect } from 'chai';
import { gzipSync } from 'node:zlib';
import fc from 'fast-check';
import { commitCount, git } from '../support/git.js';
import { api, startTestServer, type ApiResponse, type TestServer } from '../support/server.js';
import { sleep } from '../support/sleep.js';
import { ITEMS, LIST, MSG, rawRequest, UUID, type Item, type RawResponse } from '../http/helpers.js';

/**
 * Model-based fuzzing (see README, Reliability). fast-check draws sequences of operations by random roles;
 * each one runs against the real server and against the small reference model below, and the
 * two must agree on the status and the body of every answer. After each sequence they must agree
 * on every item, every list, every history and the trash, for every role, and on the number of
 * commits. A second property throws random methods, paths, headers and bodies at the server:
 * never a 5xx, always a JSON envelope with a boolean `success`.
 *
 * FUZZ_RUNS (default 30) sets the number of sequences; the input fuzzing runs ten times as many
 * requests. FUZZ_SEED replays a failure that fast-check reported.
 */
const FUZZ_RUNS = Number(process.env.FUZZ_RUNS ?? 30);
const FUZZ_SEED = process.env.FUZZ_SEED === undefined ? undefined : Number(process.env.FUZZ_SEED);
const fuzzOptions = (numRuns: number): fc.Parameters<unknown> => ({
  numRuns,
  ...(FUZZ_SEED === undefined ? {} : { seed: FUZZ_SEED }),
});

// ---------------------------------------------------------------------------------------------
// The reference model
// ---------------------------------------------------------------------------------------------

type Role = 'reader' | 'writer' | 'admin';
type Permission = 'knowledge:read' | 'knowledge:write' | 'knowledge:admin';
const ROLES: readonly Role[] = ['reader', 'writer', 'admin'];
const RANK: Record<Role | Permission, number> = {
  reader: 0,
  writer: 1,
  admin: 2,
  'knowledge:read': 0,
  'knowledge:write': 1,
  'knowledge:admin': 2,
};
const READ_VALUES = ['inherit', 'knowledge:read', 'knowledge:write', 'knowledge:admin'];
const WRITE_VALUES = ['inherit', 'knowledge:write', 'knowledge:admin'];

/**
 * A small alphabet, so that collisions happen: the same item written by several roles, an item
 * that is also a folder of another (a.md vs a.md/x.md, d/e/f.md vs d/e/f.md/g.md), folder rules on
 * the folders they share.
 */
const PATHS = ['a.md', 'b.md', 'd/a.md', 'd/e/f.md', 'a.md/x.md', 'd/e/f.md/g.md'] as const;
const FOLDERS = ['d', 'd/e', 'a.md'] as const;
const CONTENTS = ['', 'x', 'y', 'hello\n', '# Title\n\nbody ü € 😀\n', '{"json": true}'] as const;

interface ModelItem {
  content: string;
  read: string;
  write: string;
  state: 'live' | 'trashed';
  /** Actions of its versions, oldest first (create, update, permissions, delete, restore). */
  actions: string[];
  /** Bumped by every commit that changes the item: the ETag must change exactly then. */
  rev: number;
  /** Learned from the server's first answer (random or clock values), then held to. */
  id?: string;
  createdAt?: string;
  updatedAt?: string;
}

interface Model {
  items: Map<string, ModelItem>;
  folders: Map<string, { read: string; write: string }>;
  /** Commits the organization's branch must have. */
  commits: number;
  /** Every item id ever handed out in this organization: a re-created item gets a new one. */
  ids: Set<string>;
}

const can = (role: Role, permission: Permission): boolean => RANK[role] >= RANK[permission];
const highest = (a: Permission, b: Permission): Permission => (RANK[a] >= RANK[b] ? a : b);

function ancestors(path: string): string[] {
  const parts = path.split('/');
  return parts.slice(1).map((_, i) => parts.slice(0, i + 1).join('/'));
}

/** `inherit` resolves to the nearest ancestor folder rule of that kind, else the organization default. */
function resolve(m: Model, path: string, value: string, kind: 'read' | 'write'): Permission {
  if (value !== 'inherit') return value as Permission;
  for (const folder of ancestors(path).reverse()) {
    const rule = m.folders.get(folder)?.[kind];
    if (rule !== undefined && rule !== 'inherit') return rule as Permission;
  }
  return kind === 'read' ? 'knowledge:read' : 'knowledge:write';
}

const visible = (m: Model, role: Role, path: string, item: ModelItem): boolean => can(role, resolve(m, path, item.read, 'read'));
const readableLive = (m: Model, role: Role, path: string): ModelItem | undefined => {
  const item = m.items.get(path);
  return item && item.state === 'live' && visible(m, role, path, item) ? item : undefined;
};

/** What the server must answer. `item` is checked field by field; `error` exactly or by pattern. */
interface Expected {
  status: number;
  error?: string | RegExp;
  /** The item of `data.item`, and whether this answer changed it (updatedAt moves) or not. */
  item?: { path: string; model: ModelItem; changed: boolean | 'created' };
  message?: string;
  folder?: { folder: string; read: string; write: string };
}

const forbidden = (p: Permission): Expected => ({ status: 403, error: `Forbidden — requires ${p} permission` });
const notFound: Expected = { status: 404, error: MSG.notFound };

type TagKind = 'none' | 'current' | 'stale' | 'bogus';
type TagStyle = 'plain' | 'weak' | 'list';

interface PutOp {
  kind: 'put';
  role: Role;
  path: string;
  content: string;
  message?: string;
  read?: string;
  write?: string;
  ifMatch: TagKind;
  ifNoneMatch: 'none' | 'star' | 'current';
  tagStyle: TagStyle;
}

function modelPut(m: Model, op: PutOp): Expected {
  if (!can(op.role, 'knowledge:write')) return forbidden('knowledge:write');
  if (!op.content.isWellFormed()) return { status: 400, error: /lone surrogate/ };
  if (op.message !== undefined && op.message.trim() === '') return { status: 400, error: 'message must not be empty' };
  if (op.read !== undefined && !READ_VALUES.includes(op.read)) return { status: 400, error: /^requiredReadPermission must be one of/ };
  if (op.write !== undefined && !WRITE_VALUES.includes(op.write)) return { status: 400, error: /^requiredWritePermission must be one of/ };
  if ((op.read !== undefined || op.write !== undefined) && op.role !== 'admin') return forbidden('knowledge:admin');

  const current = m.items.get(op.path);
  if (!current) {
    for (const folder of ancestors(op.path)) {
      if (m.items.has(folder)) return { status: 409, error: `Path conflict: "${folder}" is an item, not a folder` };
    }
    if ([...m.items.keys()].some((p) => p.startsWith(`${op.path}/`))) {
      return { status: 409, error: `Path conflict: "${op.path}" is a folder of other items` };
    }
    // Any If-Match names a version, and there is none.
    if (op.ifMatch !== 'none') return { status: 412, error: MSG.changed };
    // Creating needs what the new item will require, folder rules included.
    const neededToCreate = highest(resolve(m, op.path, op.read ?? 'inherit', 'read'), resolve(m, op.path, op.write ?? 'inherit', 'write'));
    if (!can(op.role, neededToCreate)) return forbidden(neededToCreate);
    const item: ModelItem = {
      content: op.content,
      read: op.read ?? 'inherit',
      write: op.write ?? 'inherit',
      state: 'live',
      actions: ['create'],
      rev: 1,
    };
    m.items.set(op.path, item);
    m.commits++;
    return { status: 200, item: { path: op.path, model: item, changed: 'created' } };
  }
  // An item the role may not read, live or trashed, only makes the path taken (no existence leak).
  if (!can(op.role, resolve(m, op.path, current.read, 'read'))) return { status: 409, error: `Path conflict: "${op.path}" is taken` };
  if (current.state === 'trashed') return { status: 409, error: MSG.inTrash };
  const needed = highest(resolve(m, op.path, current.read, 'read'), resolve(m, op.path, current.write, 'write'));
  if (!can(op.role, needed)) return forbidden(needed);
  if (op.ifNoneMatch !== 'none') return { status: 412, error: 'Precondition failed: the item already exists' };
  if (op.ifMatch === 'stale' || op.ifMatch === 'bogus') return { status: 412, error: MSG.changed };
  const read = op.read ?? current.read;
  const write = op.write ?? current.write;
  const sameContent = op.content === current.content;
  if (sameContent && read === current.read && write === current.write) {
    return { status: 200, item: { path: op.path, model: current, changed: false } };
  }
  Object.assign(current, { content: op.content, read, write, rev: current.rev + 1 });
  current.actions.push(sameContent ? 'permissions' : 'update');
  m.commits++;
  return { status: 200, item: { path: op.path, model: current, changed: true } };
}

function modelGet(m: Model, role: Role, path: string): Expected {
  const item = readableLive(m, role, path);
  return item ? { status: 200, item: { path, model: item, changed: false } } : notFound;
}

function modelDelete(m: Model, role: Role, path: string): Expected {
  if (role !== 'admin') return forbidden('knowledge:admin');
  const item = readableLive(m, role, path);
  if (!item) return notFound;
  item.state = 'trashed';
  item.actions.push('delete');
  item.rev++;
  m.commits++;
  return { status: 200, message: MSG.deleted };
}

function modelRestore(m: Model, role: Role, path: string): Expected {
  if (role !== 'admin') return forbidden('knowledge:admin');
  const item = m.items.get(path);
  if (!item || item.state !== 'trashed') return notFound;
  item.state = 'live';
  item.actions.push('restore');
  item.rev++;
  m.commits++;
  return { status: 200, item: { path, model: item, changed: true } };
}

function modelPurge(m: Model, role: Role, path: string): Expected {
  if (role !== 'admin') return forbidden('knowledge:admin');
  const item = m.items.get(path);
  if (!item || item.state !== 'trashed') return notFound;
  m.items.delete(path);
  m.commits++;
  return { status: 200, message: 'Knowledge item purged' };
}

function modelSetFolder(m: Model, role: Role, folder: string, read?: string, write?: string): Expected {
  if (role !== 'admin') return forbidden('knowledge:admin');
  if (read !== undefined && !READ_VALUES.includes(read)) return { status: 400, error: /^requiredReadPermission must be one of/ };
  if (write !== undefined && !WRITE_VALUES.includes(write)) return { status: 400, error: /^requiredWritePermission must be one of/ };
  const current = m.folders.get(folder) ?? { read: 'inherit', write: 'inherit' };
  const next = { read: read ?? current.read, write: write ?? current.write };
  if (next.read !== current.read || next.write !== current.write) {
    m.commits++;
    if (next.read === 'inherit' && next.write === 'inherit') m.folders.delete(folder);
    else m.folders.set(folder, next);
  }
  return { status: 200, folder: { folder, ...next } };
}

function modelHistory(m: Model, role: Role, path: string): { status: number; actions?: string[] } {
  const item = m.items.get(path);
  if (!item || !visible(m, role, path, item)) return { status: 404 };
  return { status: 200, actions: [...item.actions].reverse() };
}

function modelList(m: Model, role: Role, prefix = ''): [string, ModelItem][] {
  return [...m.items.entries()]
    .filter(([path, item]) => path.startsWith(prefix) && item.state === 'live' && visible(m, role, path, item))
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
}

// ---------------------------------------------------------------------------------------------
// The real side, and the comparison
// ---------------------------------------------------------------------------------------------

interface Real {
  server: TestServer;
  orgId: string;
  keys: Record<Role, string>;
  /** ETags seen per item id and revision: equal within a revision, different across them. */
  tags: Map<string, Map<number, string>>;
  /** Every ETag ever seen per path (stale candidates for If-Match). */
  seen: Map<string, Set<string>>;
}

const stats = { sequences: 0, commands: 0, requests: 0, statuses: new Map<number, number>() };

async function call(real: Real, url: string, options: Parameters<typeof api>[1]): Promise<ApiResponse> {
  stats.requests++;
  const res = await api(`${real.server.url}${url}`, options);
  stats.statuses.set(res.status, (stats.statuses.get(res.status) ?? 0) + 1);
  return res;
}

const itemPath = (path: string): string => `${ITEMS}/${path}`;

function sameEnvelope(label: string, res: ApiResponse, exp: Expected): void {
  const where = `${label}: ${JSON.stringify(res.body)}`;
  expect(res.status, where).to.equal(exp.status);
  expect(res.body, where).to.be.an('object');
  expect(res.body?.success, where).to.equal(exp.status === 200);
  if (exp.status !== 200) {
    expect(res.body?.error, where).to.be.a('string');
    if (typeof exp.error === 'string') expect(res.body?.error, where).to.equal(exp.error);
    else if (exp.error) expect(res.body?.error, where).to.match(exp.error);
    expect(res.body, where).to.not.have.property('data');
  }
}

/** `data.item` against the model, learning the id and timestamps the first time. */
function sameItem(label: string, real: Real, m: Model, got: Item, path: string, item: ModelItem, changed: boolean | 'created'): void {
  const where = `${label}: ${JSON.stringify(got)}`;
  expect(got.path, where).to.equal(path);
  expect(got.organizationId, where).to.equal(real.orgId);
  expect(got.requiredReadPermission, where).to.equal(item.read);
  expect(got.requiredWritePermission, where).to.equal(item.write);
  expect(got.itemType, where).to.equal('text');
  for (const f of ['fileKey', 'fileName', 'contentType', 'fileSize'] as const) expect(got[f], `${where} ${f}`).to.equal(null);
  if ('content' in got) expect(got.content, where).to.equal(item.content);
  if (changed === 'created') {
    expect(got.id, where).to.match(UUID);
    expect(m.ids.has(got.id), `${where}: a new item reuses an old id`).to.equal(false);
    expect(got.createdAt, where).to.equal(got.updatedAt);
    m.ids.add(got.id);
    Object.assign(item, { id: got.id, createdAt: got.createdAt, updatedAt: got.updatedAt });
    return;
  }
  expect(got.id, `${where}: id`).to.equal(item.id);
  expect(got.createdAt, `${where}: createdAt`).to.equal(item.createdAt);
  if (changed) {
    expect(Date.parse(got.updatedAt), `${where}: updatedAt moves forward`).to.be.at.least(Date.parse(item.updatedAt ?? ''));
    item.updatedAt = got.updatedAt;
  } else {
    expect(got.updatedAt, `${where}: updatedAt of an unchanged item`).to.equal(item.updatedAt);
  }
}

/** An ETag is the same for one revision of an item and differs between revisions. */
function sameTag(label: string, real: Real, path: string, item: ModelItem, res: ApiResponse): void {
  const tag = res.headers.get('etag');
  expect(tag, `${label}: ETag`).to.be.a('string').and.match(/^"[^"]+"$/);
  if (!tag || !item.id) return;
  const byRev = real.tags.get(item.id) ?? new Map<number, string>();
  real.tags.set(item.id, byRev);
  for (const [rev, seen] of byRev) {
    if (rev === item.rev) expect(tag, `${label}: ETag of an unchanged item`).to.equal(seen);
    else expect(tag, `${label}: ETag of revision ${item.rev} equals that of revision ${rev}`).to.not.equal(seen);
  }
  byRev.set(item.rev, tag);
  const seenHere = real.seen.get(path) ?? new Set<string>();
  seenHere.add(tag);
  real.seen.set(path, seenHere);
}

function check(label: string, real: Real, m: Model, res: ApiResponse, exp: Expected): void {
  sameEnvelope(label, res, exp);
  if (exp.status !== 200) return;
  const data = res.body?.data ?? {};
  if (exp.item) {
    sameItem(label, real, m, data.item as Item, exp.item.path, exp.item.model, exp.item.changed);
  }
  if (exp.message !== undefined) expect(data.message, label).to.equal(exp.message);
  if (exp.folder) {
    const f = data.folder as { folder: string; requiredReadPermission: string; requiredWritePermission: string };
    expect([f.folder, f.requiredReadPermission, f.requiredWritePermission], label).to.deep.equal([
      exp.folder.folder,
      exp.folder.read,
      exp.folder.write,
    ]);
  }
}

const quote = (tag: string, style: TagStyle): string =>
  style === 'weak' ? `W/${tag}` : style === 'list' ? `"not-this-one", ${tag}` : tag;

/** The item's ETag as the server has it now (an admin GET), or undefined when it is not live. */
async function currentTag(real: Real, path: string): Promise<string | undefined> {
  const res = await call(real, itemPath(path), { key: real.keys.admin });
  return res.status === 200 ? (res.headers.get('etag') ?? undefined) : undefined;
}

async function runPut(m: Model, real: Real, op: PutOp): Promise<void> {
  const headers: Record<string, string> = {};
  const now = op.ifMatch === 'current' || op.ifMatch === 'stale' || op.ifNoneMatch === 'current' ? await currentTag(real, op.path) : undefined;
  if (op.ifMatch === 'current') headers['If-Match'] = quote(now ?? '"bogus"', op.tagStyle);
  if (op.ifMatch === 'stale') {
    const stale = [...(real.seen.get(op.path) ?? [])].find((t) => t !== now);
    headers['If-Match'] = quote(stale ?? '"stale-bogus"', op.tagStyle);
  }
  if (op.ifMatch === 'bogus') headers['If-Match'] = quote('"0000bogus"', op.tagStyle);
  if (op.ifNoneMatch === 'star') headers['If-None-Match'] = '*';
  if (op.ifNoneMatch === 'current') headers['If-None-Match'] = quote(now ?? '"bogus"', op.tagStyle);
  // With no current tag, "current" is as good as a bogus one: the model says so too.
  const modelOp: PutOp = { ...op, ifNoneMatch: op.ifNoneMatch === 'current' && now === undefined ? 'none' : op.ifNoneMatch };

  const body: Record<string, unknown> = { content: op.content };
  if (op.message !== undefined) body.message = op.message;
  if (op.read !== undefined) body.requiredReadPermission = op.read;
  if (op.write !== undefined) body.requiredWritePermission = op.write;
  const res = await call(real, itemPath(op.path), { method: 'PUT', key: real.keys[op.role], body, headers });
  const exp = modelPut(m, modelOp);
  check(`PUT ${op.path} as ${op.role}`, real, m, res, exp);
  if (exp.item) sameTag(`PUT ${op.path}`, real, op.path, exp.item.model, res);
}

async function runGet(m: Model, real: Real, role: Role, path: string, label = `GET ${path} as ${role}`): Promise<void> {
  const res = await call(real, itemPath(path), { key: real.keys[role] });
  const exp = modelGet(m, role, path);
  check(label, real, m, res, exp);
  if (exp.item) sameTag(label, real, path, exp.item.model, res);
}

async function runHistory(m: Model, real: Real, role: Role, path: string): Promise<void> {
  const res = await call(real, `${LIST}/history/${path}`, { key: real.keys[role] });
  const exp = modelHistory(m, role, path);
  const label = `GET /history/${path} as ${role}`;
  sameEnvelope(label, res, { status: exp.status, ...(exp.status === 404 ? { error: MSG.notFound } : {}) });
  const actions = exp.actions;
  if (actions) {
    const versions = res.body?.data?.versions as { version: number; action: string }[];
    expect(
      versions.map((v) => v.action),
      `${label}: ${JSON.stringify(versions)}`,
    ).to.deep.equal(actions);
    expect(versions.map((v) => v.version)).to.deep.equal(actions.map((_, i) => actions.length - i));
  }
}

async function runList(m: Model, real: Real, role: Role, query = '', prefix = ''): Promise<void> {
  const res = await call(real, `${LIST}${query}`, { key: real.keys[role] });
  const label = `GET ${LIST}${query} as ${role}`;
  sameEnvelope(label, res, { status: 200 });
  const got = res.body?.data?.items as Item[];
  const want = modelList(m, role, prefix);
  expect(
    got.map((i) => i.path),
    `${label}: paths`,
  ).to.deep.equal(want.map(([p]) => p));
  got.forEach((item, i) => {
    const [path, model] = want[i] as [string, ModelItem];
    sameItem(label, real, m, item, path, model, false);
  });
}

/** Every page of a paged list, as the admin: concatenated, the plain list. */
async function runPagedList(m: Model, real: Real, role: Role): Promise<void> {
  const paths: string[] = [];
  let cursor: string | null = null;
  for (let page = 0; page < 10; page++) {
    const query: string = `?limit=2&content=false${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
    const res = await call(real, `${LIST}${query}`, { key: real.keys[role] });
    sameEnvelope(`paged list as ${role}`, res, { status: 200 });
    const items = res.body?.data?.items as Item[];
    expect(items.length).to.be.at.most(2);
    for (const item of items) expect(item, 'content=false').to.not.have.property('content');
    paths.push(...items.map((i) => i.path));
    cursor = res.body?.data?.nextCursor as string | null;
    if (cursor === null) break;
  }
  expect(paths, `paged list as ${role}`).to.deep.equal(modelList(m, role).map(([p]) => p));
}

/** After a sequence: every GET, list, history and the trash for every role; commits; the git tree. */
async function compareEverything(m: Model, real: Real): Promise<void> {
  for (const role of ROLES) {
    await runList(m, real, role);
    await runList(m, real, role, '?prefix=d/', 'd/');
    await runPagedList(m, real, role);
    for (const path of PATHS) {
      await runGet(m, real, role, path, `final GET ${path} as ${role}`);
      await runHistory(m, real, role, path);
      // Who may write what: an identical PUT changes nothing where it is allowed, so every role
      // tries every existing item (live or trashed) and the statuses must match the model's.
      const item = m.items.get(path);
      if (item) await runPut(m, real, { kind: 'put', role, path, content: item.content, ifMatch: 'none', ifNoneMatch: 'none', tagStyle: 'plain' });
    }
    const trash = await call(real, `${LIST}/trash`, { key: real.keys[role] });
    if (role !== 'admin') {
      sameEnvelope(`GET /trash as ${role}`, trash, forbidden('knowledge:admin'));
    } else {
      sameEnvelope('GET /trash', trash, { status: 200 });
      const got = (trash.body?.data?.items as (Item & { deletedAt: string })[]).map((i) => i.path).sort();
      const want = [...m.items.entries()].filter(([, i]) => i.state === 'trashed').map(([p]) => p).sort();
      expect(got, 'trash').to.deep.equal(want);
    }
  }
  const gitdir = real.server.gitdir(real.orgId);
  expect(await commitCount(gitdir), 'commits on main').to.equal(m.commits);
  const tree = (await git(['ls-tree', '-r', '--name-only', 'main'], { gitdir })).split('\n').filter((n) => n && !n.startsWith('.knowledge/'));
  const wantTree = [...m.items.entries()].map(([p, i]) => (i.state === 'live' ? p : `.trash/${p}`));
  expect(tree.sort(), 'content files in the git tree').to.deep.equal(wantTree.sort());
}

// ---------------------------------------------------------------------------------------------
// Commands
// ---------------------------------------------------------------------------------------------

type Op =
  | PutOp
  | { kind: 'get' | 'delete' | 'restore' | 'purge' | 'history'; role: Role; path: string }
  | { kind: 'list'; role: Role }
  | { kind: 'folder'; role: Role; folder: string; read?: string; write?: string };

class OpCommand implements fc.AsyncCommand<Model, Real> {
  constructor(readonly op: Op) {}
  check(): boolean {
    return true; // every operation is legal in every state: the server must answer it correctly
  }
  async run(m: Model, real: Real): Promise<void> {
    stats.commands++;
    const { op } = this;
    switch (op.kind) {
      case 'put':
        return runPut(m, real, op);
      case 'get':
        return runGet(m, real, op.role, op.path);
      case 'history':
        return runHistory(m, real, op.role, op.path);
      case 'list':
        return runList(m, real, op.role);
      case 'delete': {
        const res = await call(real, itemPath(op.path), { method: 'DELETE', key: real.keys[op.role] });
        return check(`DELETE ${op.path} as ${op.role}`, real, m, res, modelDelete(m, op.role, op.path));
      }
      case 'restore': {
        const res = await call(real, `${LIST}/trash/restore`, { method: 'POST', key: real.keys[op.role], body: { path: op.path } });
        return check(`restore ${op.path} as ${op.role}`, real, m, res, modelRestore(m, op.role, op.path));
      }
      case 'purge': {
        const res = await call(real, `${LIST}/trash/items/${op.path}`, { method: 'DELETE', key: real.keys[op.role] });
        return check(`purge ${op.path} as ${op.role}`, real, m, res, modelPurge(m, op.role, op.path));
      }
      case 'folder': {
        const body: Record<string, string> = {};
        if (op.read !== undefined) body.requiredReadPermission = op.read;
        if (op.write !== undefined) body.requiredWritePermission = op.write;
        const res = await call(real, `${LIST}/folders/${op.folder}`, { method: 'PUT', key: real.keys[op.role], body });
        return check(`PUT /folders/${op.folder} as ${op.role}`, real, m, res, modelSetFolder(m, op.role, op.folder, op.read, op.write));
      }
    }
  }
  toString(): string {
    return JSON.stringify(this.op);
  }
}

const role = fc.constantFrom(...ROLES);
/** Paths that collide (an item and a folder of the same name) come up most often. */
const path = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom('a.md', 'a.md/x.md') },
  { weight: 2, arbitrary: fc.constantFrom('d/e/f.md', 'd/e/f.md/g.md') },
  { weight: 1, arbitrary: fc.constantFrom('b.md', 'd/a.md') },
);
/** Mostly absent; sometimes a valid value; rarely one the field refuses. */
const permissionField = fc.oneof(
  { weight: 6, arbitrary: fc.constant(undefined) },
  { weight: 3, arbitrary: fc.constantFrom('inherit', 'knowledge:read', 'knowledge:write', 'knowledge:admin') },
  { weight: 1, arbitrary: fc.constant('knowledge:root') },
);
const content = fc.oneof(
  { weight: 8, arbitrary: fc.constantFrom(...CONTENTS) },
  { weight: 1, arbitrary: fc.string({ maxLength: 6 }) },
  { weight: 1, arbitrary: fc.constant('lone \ud800 surrogate') },
);

const putOp: fc.Arbitrary<Op> = fc.record(
  {
    kind: fc.constant('put' as const),
    role,
    path,
    content,
    message: fc.oneof({ weight: 8, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: fc.constantFrom('A note', '   ') }),
    read: permissionField,
    write: permissionField,
    ifMatch: fc.constantFrom<TagKind>('none', 'none', 'none', 'none', 'current', 'stale', 'bogus'),
    ifNoneMatch: fc.constantFrom('none', 'none', 'none', 'none', 'star', 'current') as fc.Arbitrary<PutOp['ifNoneMatch']>,
    tagStyle: fc.constantFrom<TagStyle>('plain', 'plain', 'weak', 'list'),
  },
  { requiredKeys: ['kind', 'role', 'path', 'content', 'ifMatch', 'ifNoneMatch', 'tagStyle'] },
);
const pathOp = (kind: 'get' | 'delete' | 'restore' | 'purge' | 'history'): fc.Arbitrary<Op> => fc.record({ kind: fc.constant(kind), role, path });
/** Folder rules are the admin's: other roles get a few 403s, the admin sets values most of the time. */
const folderPermission = fc.oneof(
  { weight: 2, arbitrary: fc.constant(undefined) },
  { weight: 4, arbitrary: fc.constantFrom('inherit', 'knowledge:read', 'knowledge:write', 'knowledge:admin') },
  { weight: 1, arbitrary: fc.constant('knowledge:root') },
);
const folderOp: fc.Arbitrary<Op> = fc.record({
  kind: fc.constant('folder' as const),
  role: fc.oneof({ weight: 4, arbitrary: fc.constant<Role>('admin') }, { weight: 1, arbitrary: role }),
  folder: fc.constantFrom(...FOLDERS),
  read: folderPermission,
  write: folderPermission,
});

const commands = fc.commands(
  [
    putOp,
    putOp,
    putOp,
    putOp,
    pathOp('get'),
    pathOp('delete'),
    pathOp('delete'),
    pathOp('restore'),
    pathOp('purge'),
    pathOp('history'),
    fc.record({ kind: fc.constant('list' as const), role }),
    folderOp,
    folderOp,
  ].map((arb) => arb.map((op) => new OpCommand(op))),
  { maxCommands: 30, size: 'medium' },
);

/** A new key is picked up by the server within moments (it re-reads the key file on an unknown key). */
async function waitForKey(server: TestServer, key: string): Promise<void> {
  for (let i = 0; i < 100; i++) {
    const res = await rawRequest(server, { path: LIST, headers: { Authorization: `Bearer ${key}` } });
    if (res.status === 200) return;
    await sleep(20);
  }
  throw new Error('a new key was never accepted');
}

let orgCounter = 0;

async function freshOrg(server: TestServer): Promise<Real> {
  const orgId = `m${orgCounter++}`;
  const admin = await server.org(orgId);
  const keys: Record<Role, string> = { admin, writer: await server.key('writer', orgId), reader: await server.key('reader', orgId) };
  for (const key of Object.values(keys)) await waitForKey(server, key);
  return { server, orgId, keys, tags: new Map(), seen: new Map() };
}

describe('Reliability: model-based fuzzing against a reference model', function () {
  this.timeout(15 * 60_000);
  let server: TestServer;

  before(async () => {
    server = await startTestServer();
  });
  after(async () => {
    await server?.close();
  });

  it(`random sequences of operations by random roles agree with the model (${FUZZ_RUNS} sequences)`, async () => {
    const started = Date.now();
    const before = { ...stats };
    await fc.assert(
      fc.asyncProperty(commands, async (cmds) => {
        stats.sequences++;
        const real = await freshOrg(server);
        const model: Model = { items: new Map(), folders: new Map(), commits: await commitCount(server.gitdir(real.orgId)), ids: new Set() };
        await fc.asyncModelRun(() => ({ model, real }), cmds);
        await compareEverything(model, real);
      }),
      fuzzOptions(FUZZ_RUNS),
    );
    const statuses = [...stats.statuses.entries()].sort(([a], [b]) => a - b).map(([s, n]) => `${s}×${n}`);
    console.log(
      `      model fuzzing: ${stats.sequences - before.sequences} sequences, ${stats.commands - before.commands} commands, ` +
        `${stats.requests - before.requests} requests (${statuses.join(' ')}) in ${((Date.now() - started) / 1000).toFixed(1)} s`,
    );
  });

  it(`random methods, paths, headers and bodies never give a 5xx, always a JSON envelope (${FUZZ_RUNS * 10} requests)`, async () => {
    const real = await freshOrg(server);
    await api(`${server.url}${itemPath('a.md')}`, { method: 'PUT', key: real.keys.admin, body: { content: 'seed' } });
    const statuses = new Map<number, number>();
    const started = Date.now();
    await fc.assert(
      fc.asyncProperty(requestArb(real), async (req) => {
        const res = await answerOf(server, req);
        statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
      }),
      fuzzOptions(FUZZ_RUNS * 10),
    );
    const summary = [...statuses.entries()].sort(([a], [b]) => a - b).map(([s, n]) => `${s}×${n}`);
    console.log(`      input fuzzing: ${FUZZ_RUNS * 10} requests (${summary.join(' ')}) in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  });

  describe('counterexamples the input fuzzing found, pinned', () => {
    let real: Real;
    before(async () => {
      real = await freshOrg(server);
    });
    const json = (key: string, encoding: string, body: string | Buffer): Record<string, string> => ({
      Authorization: `Bearer ${key}`,
      'Content-Type': 'application/json',
      'Content-Encoding': encoding,
      'Content-Length': String(Buffer.byteLength(body)),
    });
    const gzipped = gzipSync('{"content":"x"}');
    const cases: { name: string; req: () => RandomRequest }[] = [
      { name: 'PUT, Content-Encoding: gzip on a body that is not gzip', req: () => ({ method: 'PUT', path: itemPath('a.md'), headers: json(real.keys.admin, 'gzip', '{"content":"x"}'), body: '{"content":"x"}' }) },
      { name: 'PUT, Content-Encoding: deflate on a body that is not deflate', req: () => ({ method: 'PUT', path: itemPath('a.md'), headers: json(real.keys.admin, 'deflate', '{"content":"x"}'), body: '{"content":"x"}' }) },
      { name: 'PUT, Content-Encoding: br on a body that is not brotli', req: () => ({ method: 'PUT', path: itemPath('a.md'), headers: json(real.keys.admin, 'br', '{"content":"x"}'), body: '{"content":"x"}' }) },
      { name: 'PUT, a truncated gzip body', req: () => ({ method: 'PUT', path: itemPath('a.md'), headers: json(real.keys.admin, 'gzip', gzipped.subarray(0, 15)), body: gzipped.subarray(0, 15) }) },
      { name: 'POST /rollback, gzip that is not gzip', req: () => ({ method: 'POST', path: `${LIST}/rollback`, headers: json(real.keys.writer, 'gzip', '{"content":{"a":1}}'), body: '{"content":{"a":1}}' }) },
      { name: 'POST /trash/restore, gzip that is not gzip', req: () => ({ method: 'POST', path: `${LIST}/trash/restore`, headers: json(real.keys.admin, 'gzip', '{}'), body: '{}' }) },
      {
        // The HTTP parser refuses the raw byte 0xE9 in the target; the answer to a HEAD must have no body.
        name: 'HEAD with a raw non-ASCII byte in the target',
        req: () => ({ method: 'HEAD', path: `${ITEMS}/\u00e9`, headers: { Authorization: `Bearer ${real.keys.admin}` } }),
      },
    ];
    for (const { name, req } of cases) {
      it(`${name}: a readable 4xx, not a 5xx`, async () => {
        const res = await answerOf(server, req());
        expect(res.status).to.be.within(400, 499);
      });
    }
    it('a well-formed gzip body is accepted (the encoding itself is fine)', async () => {
      const res = await answerOf(server, { method: 'PUT', path: itemPath('gz.md'), headers: json(real.keys.admin, 'gzip', gzipped), body: gzipped });
      expect(res.status, res.text).to.equal(200);
    });
  });
});

// ---------------------------------------------------------------------------------------------
// Random requests
// ---------------------------------------------------------------------------------------------

/** Sends one request and checks what every answer must be: below 500, a JSON envelope, a request id. */
async function answerOf(server: TestServer, req: RandomRequest): Promise<RawResponse> {
  let res: RawResponse;
  try {
    res = await rawRequest(server, req);
  } catch (err) {
    throw new Error(`${describeRequest(req)}: no readable answer (${(err as Error).message})`, { cause: err });
  }
  const where = `${describeRequest(req)} -> ${res.status} ${res.text.slice(0, 300)}`;
  expect(res.status, where).to.be.within(200, 499);
  expect(res.headers['x-request-id'], where).to.be.a('string');
  if (req.method === 'HEAD' || res.status === 304) {
    expect(res.text, where).to.equal('');
    return res;
  }
  expect(res.body, where).to.be.an('object');
  expect(res.body?.success, where).to.be.a('boolean');
  if (res.status >= 400) {
    expect(res.body?.success, where).to.equal(false);
    expect(res.body?.error, where).to.be.a('string');
  } else {
    expect(res.body?.success, where).to.equal(true);
  }
  return res;
}

interface RandomRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: string | Buffer;
}

function describeRequest(req: RandomRequest): string {
  const body = req.body === undefined ? '' : ` body=${JSON.stringify(typeof req.body === 'string' ? req.body.slice(0, 200) : req.body.toString('hex').slice(0, 200))}`;
  const headers = Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, /^Bearer ks_/.test(v) ? 'Bearer ks_<valid>' : v]));
  return `${req.method} ${JSON.stringify(req.path)} headers=${JSON.stringify(headers)}${body}`;
}

/**
 * A string as it can go on the wire in a request target: characters node's client refuses
 * (outside U+0021..U+00FF) become the percent-encoded UTF-8 of the character; U+0080..U+00FF
 * stay and go out as single raw bytes (invalid UTF-8 in the target).
 */
function onTheWire(s: string): string {
  let out = '';
  for (const ch of s) {
    const code = ch.codePointAt(0) ?? 0;
    if (code >= 0x21 && code <= 0xff) out += ch;
    else for (const byte of Buffer.from(ch, 'utf8')) out += `%${byte.toString(16).padStart(2, '0').toUpperCase()}`;
  }
  return out;
}

/** Header values node will send: tab, printable ASCII and U+0080..U+00FF (as latin1 bytes). */
const headerChar = fc.oneof(
  fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)),
  fc.integer({ min: 0x80, max: 0xff }).map((c) => String.fromCharCode(c)),
  fc.constant('\t'),
);
const headerValue = fc.string({ unit: headerChar, maxLength: 40 });

const SEGMENTS = ['a.md', 'b.md', 'd', 'x.y', '..', '.', '%2e%2e', '%2E', '.git', '.trash', '.knowledge', '%2F', '%00', '%', '%zz', '%c0%ae', '\\', '~', 'A.md', '', 'con.md', '%e2%80%8b', 'é'];
const randomPath = fc.oneof(
  fc.constantFrom(...PATHS),
  fc.array(fc.constantFrom(...SEGMENTS), { maxLength: 8 }).map((s) => s.join('/')),
  fc.string({ unit: 'binary', maxLength: 30 }).map(onTheWire),
  fc.string({ unit: 'grapheme', maxLength: 12 }).map((s) => onTheWire(s)),
  fc.string({ maxLength: 30 }).map((s) => encodeURIComponent(s)),
  fc.uint8Array({ maxLength: 12 }).map((bytes) => [...bytes].map((b) => `%${b.toString(16).padStart(2, '0')}`).join('')),
  fc.integer({ min: 240, max: 2100 }).map((n) => `${'a/'.repeat(n % 9)}${'b'.repeat(n)}.md`),
);

const ROUTES = [
  '/api/v1/knowledge',
  '/api/v1/knowledge/',
  '/api/v1/knowledge/items/',
  '/api/v1/knowledge/history/',
  '/api/v1/knowledge/diff/',
  '/api/v1/knowledge/trash',
  '/api/v1/knowledge/trash/restore',
  '/api/v1/knowledge/trash/items/',
  '/api/v1/knowledge/rollback',
  '/api/v1/knowledge/folders',
  '/api/v1/knowledge/folders/',
  '/api/v1/knowledge/changes',
  '/api/v1/knowledge/keys',
  '/api/v1/knowledge/keys/',
  '/api/',
  '/api/v2/knowledge/items/',
];
const QUERY_KEYS = ['limit', 'prefix', 'cursor', 'content', 'version', 'ref', 'from', 'to', 'since', 'x', '__proto__', 'constructor'];
const query = fc.oneof(
  { weight: 3, arbitrary: fc.constant('') },
  {
    weight: 2,
    arbitrary: fc
      .array(fc.tuple(fc.constantFrom(...QUERY_KEYS), fc.oneof(fc.constantFrom('1', '0', '-1', '2', '1e3', 'false', 'd/', '', 'null', 'abc', 'HEAD'), fc.string({ maxLength: 10 }))), {
        minLength: 1,
        maxLength: 4,
      })
      .map((pairs) => `?${pairs.map(([k, v]) => `${k}=${encodeURIComponent(v.toWellFormed())}`).join('&')}`),
  },
  { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 20 }).map((s) => `?${onTheWire(s)}`) },
);

const BODY_KEYS = ['content', 'message', 'requiredReadPermission', 'requiredWritePermission', 'path', 'version', 'name', 'role', '__proto__', 'constructor', 'prototype', 'x'];
const body: fc.Arbitrary<string | Buffer | undefined> = fc.oneof(
  fc.constant(undefined),
  fc.jsonValue().map((v) => JSON.stringify(v)),
  fc.dictionary(fc.constantFrom(...BODY_KEYS), fc.oneof(fc.constantFrom('x', 'inherit', 'knowledge:admin', 'a.md', 'reader', 1, null), fc.jsonValue()), { maxKeys: 5 }).map((o) =>
    JSON.stringify(o),
  ),
  fc.anything().map((v) => {
    try {
      return JSON.stringify(v) ?? 'undefined';
    } catch {
      return String(v);
    }
  }),
  fc.string({ unit: 'binary', maxLength: 60 }),
  fc.uint8Array({ maxLength: 80 }).map((b) => Buffer.from(b)),
  fc.integer({ min: 1, max: 20_000 }).map((n) => `${'['.repeat(n)}${']'.repeat(n)}`),
  fc.integer({ min: 1, max: 5_000 }).map((n) => `{"content":${'{"a":'.repeat(n)}1${'}'.repeat(n)}}`),
  fc.constantFrom('', 'null', '{', '{"content":"x"', '{"content":"x"}', '{"content":"x","message":""}', '{"__proto__":{"content":"x"}}', '{"content":"\\ud800"}', '\ufeff{"content":"x"}'),
);

function requestArb(real: Real): fc.Arbitrary<RandomRequest> {
  const keys = real.keys;
  const auth = fc.oneof(
    { weight: 4, arbitrary: fc.constantFrom(`Bearer ${keys.admin}`, `Bearer ${keys.writer}`, `Bearer ${keys.reader}`) },
    { weight: 1, arbitrary: fc.constantFrom('Bearer', 'Bearer ', 'Bearer junk', `Bearer ${keys.admin} extra`, `bearer ${keys.admin}`, 'Basic eDp5', `Bearer ${keys.admin.slice(0, -1)}`) },
    { weight: 1, arbitrary: headerValue },
  );
  const contentType = fc.oneof(
    fc.constantFrom(
      'application/json',
      'application/json; charset=utf-8',
      'application/json; charset=latin1',
      'application/json; charset=utf-16',
      'application/json; charset=bogus',
      'APPLICATION/JSON',
      'application/json-patch+json',
      'application/vnd.api+json',
      'text/plain',
      'application/x-www-form-urlencoded',
      'multipart/form-data; boundary=x',
      '*/*',
      '',
      ';;;',
    ),
    headerValue,
  );
  const tag = fc.oneof(fc.constantFrom('*', '"x"', 'W/"x"', '"a", "b"', ',,', '"', 'W/', '*, "x"'), headerValue);
  const headers = fc
    .record(
      {
        Authorization: auth,
        'X-API-Key': fc.oneof(fc.constant(keys.writer), headerValue),
        'Content-Type': contentType,
        'If-Match': tag,
        'If-None-Match': tag,
        'Content-Encoding': fc.constantFrom('gzip', 'deflate', 'br', 'identity', 'bogus', 'gzip, gzip'),
        Accept: headerValue,
        'X-Forwarded-For': headerValue,
      },
      { requiredKeys: ['Authorization'] },
    )
    .map((h) => Object.fromEntries(Object.entries(h).filter(([, v]) => v !== undefined)) as Record<string, string>);
  return fc
    .record({
      method: fc.constantFrom('GET', 'GET', 'PUT', 'PUT', 'POST', 'DELETE', 'PATCH', 'OPTIONS', 'HEAD'),
      route: fc.constantFrom(...ROUTES),
      path: randomPath,
      query,
      headers,
      body,
    })
    .map(({ method, route, path, query, headers, body }) => ({
      method,
      path: `${route}${route.endsWith('/') ? path : ''}${query}`,
      // A body is always framed: node's client sends a GET/HEAD/DELETE/OPTIONS body with neither
      // Content-Length nor chunking, which is not a request but a request followed by garbage.
      headers: body === undefined ? headers : { ...headers, 'Content-Length': String(Buffer.byteLength(body)) },
      ...(body === undefined ? {} : { body }),
    }));
}
