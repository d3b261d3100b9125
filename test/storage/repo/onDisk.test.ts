import { readFile, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { expect } from 'chai';
import { silentLogger } from '../../../src/common/log.js';
import { KeyStore } from '../../../src/storage/keys/keyStore.js';
import { commitCount, fsckStrict, git } from '../../support/git.js';
import { api, fs, startTestServer, type TestServer } from '../../support/server.js';
import { tmpDir } from '../../support/tmp.js';

/**
 * What lands on disk (see README, How it stores things), judged by C git on
 * the bare repository: one commit per change, content at its path, deleted
 * content under `.trash/`, sidecar records, trailers, authors, and a restart
 * and a clone that see the same thing.
 */

const GUIDE = 'docs/guide.md';
const TODO = 'notes/todo.md';
const CUSTOM_MESSAGE = 'Rewrite the guide for the new release';

interface Item {
  id: string;
  path: string;
  content: string;
  createdAt: string;
  updatedAt: string;
  [k: string]: unknown;
}

interface CommitInfo {
  id: string;
  authorName: string;
  authorEmail: string;
  committerName: string;
  committerEmail: string;
  subject: string;
  itemId: string;
  itemPath: string;
  itemAction: string;
  raw: string;
}

const itemUrl = (server: TestServer, path: string): string => `${server.url}/api/v1/knowledge/items/${path}`;

async function put(server: TestServer, key: string, path: string, body: Record<string, unknown>): Promise<Item> {
  const res = await api(itemUrl(server, path), { method: 'PUT', key, body });
  expect(res.status, `PUT ${path}: ${JSON.stringify(res.body)}`).to.equal(200);
  return res.body?.data?.item as Item;
}

/** Commits on main, newest first, as C git reads them (trailers parsed by git itself). */
async function commits(gitdir: string, range = 'main'): Promise<CommitInfo[]> {
  const format = ['%H', '%an', '%ae', '%cn', '%ce', '%s', '%(trailers:key=Item-Id,valueonly)', '%(trailers:key=Item-Path,valueonly)', '%(trailers:key=Item-Action,valueonly)'].join('%x00');
  const out = await git(['log', `--format=${format}%x1e`, range], { gitdir });
  const rows = out.split('\x1e').map((r) => r.trim()).filter((r) => r.length > 0);
  return Promise.all(
    rows.map(async (row) => {
      const [id, authorName, authorEmail, committerName, committerEmail, subject, itemId, itemPath, itemAction] = row.split('\x00').map((f) => f.trim());
      const raw = await git(['cat-file', 'commit', id as string], { gitdir });
      return {
        id: id as string,
        authorName: authorName as string,
        authorEmail: authorEmail as string,
        committerName: committerName as string,
        committerEmail: committerEmail as string,
        subject: subject as string,
        itemId: itemId as string,
        itemPath: itemPath as string,
        itemAction: itemAction as string,
        raw,
      };
    }),
  );
}

/** The whole-seconds timestamp of a raw commit's author line. */
function authorSeconds(raw: string): number {
  const m = /^author [^<>\n]* <[^<>\n]*> (\d+) ([+-]\d{4})$/m.exec(raw);
  expect(m, `author line in:\n${raw}`).to.not.equal(null);
  return Number((m as RegExpExecArray)[1]);
}

const seconds = (iso: string): number => Math.floor(Date.parse(iso) / 1000);

async function pathsIn(gitdir: string): Promise<string[]> {
  return (await git(['ls-tree', '-r', '--name-only', 'main'], { gitdir })).split('\n').filter((l) => l.length > 0).sort();
}

async function listFiles(dir: string, base = ''): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(join(dir, base), { withFileTypes: true })) {
    const rel = base ? `${base}/${entry.name}` : entry.name;
    if (rel === '.git') continue;
    if (entry.isDirectory()) out.push(...(await listFiles(dir, rel)));
    else out.push(rel);
  }
  return out.sort();
}

describe('storage on disk (real git)', function () {
  this.timeout(30_000);

  let data: { dir: string; cleanup: () => Promise<void> };
  let server: TestServer | undefined;
  let gitdir: string;
  let adminKey: string;
  let writerKey: string;
  let writerId: string;
  let adminId: string;
  let commitsBefore: number;
  const guide: Item[] = [];
  let todoCreated: Item;
  let guideHeadBefore: string;

  before(async () => {
    data = await tmpDir('ks-ondisk');
    server = await startTestServer({ dataDir: data.dir });
    gitdir = server.gitdir();
    adminKey = server.adminKey;
    expect(adminKey).to.match(/^ks_/);
    writerKey = await server.key('writer', 'default', 'Alice Writer');
    const keys = await new KeyStore({ fs, dataDir: data.dir, logger: silentLogger }).list('default');
    writerId = keys.find((k) => k.name === 'Alice Writer')?.id as string;
    adminId = keys.find((k) => k.role === 'admin')?.id as string;
    expect(writerId).to.be.a('string');
    expect(adminId).to.be.a('string');
    commitsBefore = await commitCount(gitdir);

    guide.push(await put(server, writerKey, GUIDE, { content: '# Guide\n\nv1\n' }));
    guide.push(await put(server, writerKey, GUIDE, { content: '# Guide\n\nv2\n' }));
    guide.push(await put(server, writerKey, GUIDE, { content: '# Guide\n\nv3\n' }));
    todoCreated = await put(server, adminKey, TODO, { content: '- [ ] write tests\n' });
    const del = await api(itemUrl(server, TODO), { method: 'DELETE', key: adminKey });
    expect(del.status, JSON.stringify(del.body)).to.equal(200);
    guide.push(await put(server, writerKey, GUIDE, { content: '# Guide\n\nv4\n', message: CUSTOM_MESSAGE }));
    guideHeadBefore = (await git(['rev-parse', 'main'], { gitdir })).trim();
  });

  after(async () => {
    await server?.close();
    await data?.cleanup();
  });

  it('makes exactly one commit per change, in order, on main', async () => {
    expect(await commitCount(gitdir)).to.equal(commitsBefore + 6);
    const log = (await commits(gitdir)).slice(0, 6);
    expect(log.map((c) => [c.itemPath, c.itemAction])).to.deep.equal([
      [GUIDE, 'update'],
      [TODO, 'delete'],
      [TODO, 'create'],
      [GUIDE, 'update'],
      [GUIDE, 'update'],
      [GUIDE, 'create'],
    ]);
    // A linear history: every commit has exactly one parent.
    const parents = await git(['rev-list', '--parents', '-n', '6', 'main'], { gitdir });
    for (const line of parents.trim().split('\n')) expect(line.split(' ')).to.have.length(2);
  });

  it('`git log -- <path>` lists exactly the commits that changed that item', async () => {
    const guideLog = (await git(['log', '--format=%H', '--', GUIDE], { gitdir })).trim().split('\n');
    const todoLog = (await git(['log', '--format=%H', '--', TODO], { gitdir })).trim().split('\n');
    const all = await commits(gitdir);
    expect(guideLog).to.deep.equal(all.filter((c) => c.itemPath === GUIDE).map((c) => c.id));
    expect(guideLog).to.have.length(4);
    expect(todoLog).to.deep.equal(all.filter((c) => c.itemPath === TODO).map((c) => c.id));
    expect(todoLog).to.have.length(2);
    // The trash copy appears with the delete, and only then.
    const trashLog = (await git(['log', '--format=%H', '--', `.trash/${TODO}`], { gitdir })).trim().split('\n');
    expect(trashLog).to.deep.equal([todoLog[0]]);
  });

  it('holds the latest content at the item path', async () => {
    expect(await git(['show', `main:${GUIDE}`], { gitdir })).to.equal('# Guide\n\nv4\n');
    const versions = (await git(['log', '--format=%H', '--reverse', '--', GUIDE], { gitdir })).trim().split('\n');
    const contents = await Promise.all(versions.map((c) => git(['show', `${c}:${GUIDE}`], { gitdir })));
    expect(contents).to.deep.equal(['# Guide\n\nv1\n', '# Guide\n\nv2\n', '# Guide\n\nv3\n', '# Guide\n\nv4\n']);
  });

  it('moves deleted content to .trash/<path> and keeps only records, content and the config in the tree', async () => {
    expect(await git(['show', `main:.trash/${TODO}`], { gitdir })).to.equal('- [ ] write tests\n');
    let absent = false;
    await git(['cat-file', '-e', `main:${TODO}`], { gitdir }).catch(() => (absent = true));
    expect(absent, `${TODO} must not be in the tree`).to.equal(true);
    expect(await pathsIn(gitdir)).to.deep.equal(
      ['.knowledge/config.json', `.knowledge/items/${GUIDE}`, `.knowledge/items/${TODO}`, `.trash/${TODO}`, GUIDE].sort(),
    );
  });

  it('writes sidecar records: the deleted one carries deletedAt/deletedBy, the live one its history of actors', async () => {
    const todo = JSON.parse(await git(['show', `main:.knowledge/items/${TODO}`], { gitdir })) as Record<string, unknown>;
    expect(todo.id).to.equal(todoCreated.id);
    expect(todo.path).to.equal(TODO);
    expect(todo.createdAt).to.equal(todoCreated.createdAt);
    expect(todo.createdBy).to.equal(adminId);
    expect(todo.deletedBy).to.equal(adminId);
    expect(todo.deletedAt).to.be.a('string');
    expect(Number.isNaN(Date.parse(todo.deletedAt as string))).to.equal(false);
    expect(Date.parse(todo.deletedAt as string)).to.be.at.least(Date.parse(todoCreated.createdAt));

    const live = JSON.parse(await git(['show', `main:.knowledge/items/${GUIDE}`], { gitdir })) as Record<string, unknown>;
    const last = guide[3] as Item;
    expect(live).to.include({
      id: last.id,
      path: GUIDE,
      createdAt: (guide[0] as Item).createdAt,
      createdBy: writerId,
      updatedAt: last.updatedAt,
      updatedBy: writerId,
      deletedAt: null,
      deletedBy: null,
    });
  });

  it('keeps one id for the item across its updates', () => {
    expect(new Set(guide.map((g) => g.id)).size).to.equal(1);
    expect(todoCreated.id).to.not.equal((guide[0] as Item).id);
  });

  it('writes trailers, the key as author, whole-second timestamps and the custom message', async () => {
    const log = (await commits(gitdir)).slice(0, 6);
    const [update4, del, create2, update3, update2, create1] = log as CommitInfo[];
    for (const c of log) {
      const isAdmin = c.itemPath === TODO;
      expect(c.authorName, c.raw).to.equal(isAdmin ? 'admin' : 'Alice Writer');
      expect(c.authorEmail, c.raw).to.equal(isAdmin ? adminId : writerId);
      expect(c.committerName).to.equal(c.authorName);
      expect(c.committerEmail).to.equal(c.authorEmail);
      expect(c.itemId).to.equal(isAdmin ? todoCreated.id : (guide[0] as Item).id);
      // The trailer block is the message's last paragraph, in this order.
      expect(c.raw).to.match(new RegExp(`\\n\\nItem-Id: ${c.itemId}\\nItem-Path: ${c.itemPath}\\nItem-Action: ${c.itemAction}\\n$`));
      expect(c.raw).to.match(/^committer [^<>\n]* <[^<>\n]*> \d+ [+-]\d{4}$/m);
    }
    expect(create1?.subject).to.equal(`Create ${GUIDE}`);
    expect(update2?.subject).to.equal(`Update ${GUIDE}`);
    expect(update3?.subject).to.equal(`Update ${GUIDE}`);
    expect(create2?.subject).to.equal(`Create ${TODO}`);
    expect(del?.subject).to.equal(`Delete ${TODO}`);
    expect(update4?.subject).to.equal(CUSTOM_MESSAGE);

    // Commit times are the record's times, truncated to whole seconds.
    expect(authorSeconds((create1 as CommitInfo).raw)).to.equal(seconds((guide[0] as Item).createdAt));
    expect(authorSeconds((update2 as CommitInfo).raw)).to.equal(seconds((guide[1] as Item).updatedAt));
    expect(authorSeconds((update4 as CommitInfo).raw)).to.equal(seconds((guide[3] as Item).updatedAt));
    expect(authorSeconds((create2 as CommitInfo).raw)).to.equal(seconds(todoCreated.createdAt));
    const todoRecord = JSON.parse(await git(['show', `main:.knowledge/items/${TODO}`], { gitdir })) as { deletedAt: string };
    expect(authorSeconds((del as CommitInfo).raw)).to.equal(seconds(todoRecord.deletedAt));
  });

  it('passes git fsck --strict', async () => {
    await fsckStrict(gitdir);
  });

  it('clones with plain `git clone` into a working tree with the items at their paths', async () => {
    const tmp = await tmpDir('ks-clone');
    try {
      const dir = join(tmp.dir, 'clone');
      await git(['clone', '--quiet', gitdir, dir]);
      expect(await readFile(join(dir, GUIDE), 'utf8')).to.equal('# Guide\n\nv4\n');
      expect(await readFile(join(dir, '.trash', TODO), 'utf8')).to.equal('- [ ] write tests\n');
      expect(await listFiles(dir)).to.deep.equal(
        ['.knowledge/config.json', `.knowledge/items/${GUIDE}`, `.knowledge/items/${TODO}`, `.trash/${TODO}`, GUIDE].sort(),
      );
      const cloneLog = (await git(['log', '--format=%H', '--', GUIDE], { cwd: dir })).trim().split('\n');
      const bareLog = (await git(['log', '--format=%H', '--', GUIDE], { gitdir })).trim().split('\n');
      expect(cloneLog).to.deep.equal(bareLog);
      expect((await git(['status', '--porcelain'], { cwd: dir })).trim()).to.equal('');
    } finally {
      await tmp.cleanup();
    }
  });

  it('serves the same items, ids, timestamps and ETags after a restart on the same data dir', async () => {
    const first = server as TestServer;
    const listBefore = await api(`${first.url}/api/v1/knowledge`, { key: adminKey });
    const getBefore = await api(itemUrl(first, GUIDE), { key: adminKey });
    expect(listBefore.status).to.equal(200);
    await first.close();
    server = undefined;
    // The first server made no temp dir of its own, so closing it left the data in place.
    server = await startTestServer({ dataDir: data.dir });
    expect(server.adminKey, 'no new admin key on a restart').to.equal('');

    const listAfter = await api(`${server.url}/api/v1/knowledge`, { key: adminKey });
    expect(listAfter.status).to.equal(200);
    expect(listAfter.body?.data).to.deep.equal(listBefore.body?.data);
    const items = listAfter.body?.data?.items as Item[];
    expect(items.map((i) => [i.path, i.id, i.content, i.createdAt, i.updatedAt])).to.deep.equal([
      [GUIDE, (guide[0] as Item).id, '# Guide\n\nv4\n', (guide[0] as Item).createdAt, (guide[3] as Item).updatedAt],
    ]);
    const getAfter = await api(itemUrl(server, GUIDE), { key: writerKey });
    expect(getAfter.status).to.equal(200);
    expect(getAfter.body?.data?.item).to.deep.equal(getBefore.body?.data?.item);
    expect(getAfter.headers.get('etag')).to.equal(getBefore.headers.get('etag'));
    expect((await api(itemUrl(server, TODO), { key: adminKey })).status).to.equal(404);

    // The restarted server continues the same history rather than starting a new one.
    const next = await put(server, writerKey, GUIDE, { content: '# Guide\n\nv5\n' });
    expect(next.id).to.equal((guide[0] as Item).id);
    expect(next.createdAt).to.equal((guide[0] as Item).createdAt);
    expect((await git(['rev-parse', 'main^'], { gitdir })).trim()).to.equal(guideHeadBefore);
    expect(await commitCount(gitdir)).to.equal(commitsBefore + 7);
    await fsckStrict(gitdir);
  });
});
