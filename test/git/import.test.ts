import { randomUUID } from 'node:crypto';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { expect } from 'chai';
import { runCli } from '../support/child.js';
import { commitCount, fsckStrict, git } from '../support/git.js';
import { api, startTestServer, type ApiResponse, type TestServer } from '../support/server.js';
import { textRecord } from '../support/records.js';
import { tmpDir } from '../support/tmp.js';
import { del, itemsOf, list, put, type Item } from '../http/helpers.js';
import { cloneUrl, gitOk, runGit } from './support.js';

/**
 * `knowledge-store org import`: a clone holds everything
 * needed to rebuild an organization. A round trip through a backup clone gives
 * back the same answers from the API (ids, timestamps, permissions, history,
 * trash, folder rules); anything that is not a sound knowledge repository is
 * refused and leaves nothing behind.
 */

const KEY_LINE = /^ks_[a-z0-9-]+_[A-Za-z0-9_-]{43}\n$/;
const HISTORY = '/api/v1/knowledge/history';
const ITEMS = '/api/v1/knowledge/items';

/**
 * The answer with every `organizationId` checked against `orgId` and blanked,
 * so that answers of two organizations compare equal exactly when they differ
 * only in the organization id.
 */
function withoutOrg(value: unknown, orgId: string): unknown {
  if (Array.isArray(value)) return value.map((v) => withoutOrg(v, orgId));
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) {
      if (k === 'organizationId') {
        expect(v, 'organizationId').to.equal(orgId);
        out[k] = '<org>';
      } else out[k] = withoutOrg(v, orgId);
    }
    return out;
  }
  return value;
}

/** Every file under a directory, recursively. */
async function allFiles(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const full = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...(await allFiles(full)));
    else out.push(full);
  }
  return out;
}

describe('org import: restore an organization from a clone', function () {
  this.timeout(60_000);

  let original: TestServer;
  let restored: TestServer;
  let work: { dir: string; cleanup: () => Promise<void> };
  let restoredData: string;
  let restoredKey: string;
  let origReader: string;
  let restoredReader: string;
  let backup: string;
  /** Every path that ever held an item in the original, live or in the trash (not the purged one). */
  const paths = {
    guide: 'docs/guide.md',
    nested: 'docs/nested/deep/x/y.md',
    root: 'readme.md',
    secret: 'admin/secret.md',
    ruled: 'restricted/plan.md',
    perms: 'docs/locked.md',
    trashed: 'old/trashed.md',
    restoredItem: 'old/back.md',
    purged: 'old/purged.md',
  };

  const importCli = (orgId: string, from: string, dataDir: string) => runCli(['org', 'import', orgId, '--from', from, '--data-dir', dataDir], 30_000);

  before(async () => {
    work = await tmpDir('ks-import');
    original = await startTestServer();
    const admin = original.adminKey;
    const writer = await original.key('writer', 'default', 'Writer One');
    origReader = await original.key('reader');
    const ok = async (res: Promise<ApiResponse>, what: string): Promise<void> => {
      const r = await res;
      expect(r.status, `${what}: ${JSON.stringify(r.body)}`).to.equal(200);
    };
    await ok(put(original, writer, paths.guide, { content: '# Guide\n\nfirst\n' }), 'create guide');
    await ok(put(original, writer, paths.guide, { content: '# Guide\n\nsecond\n', message: 'Rewrite the guide, by hand' }), 'update guide');
    await ok(put(original, writer, paths.nested, { content: 'deep — ünïcödé ✓\n' }), 'nested');
    await ok(put(original, writer, paths.root, { content: '' }), 'root item, empty content');
    await ok(put(original, admin, paths.secret, { content: 'for admins\n', requiredReadPermission: 'knowledge:admin' }), 'admin-only');
    await ok(api(`${original.url}/api/v1/knowledge/folders/restricted`, { method: 'PUT', key: admin, body: { requiredReadPermission: 'knowledge:write' } }), 'folder rule');
    await ok(put(original, writer, paths.ruled, { content: 'writers and admins\n' }), 'item under the folder rule');
    await ok(put(original, writer, paths.perms, { content: 'locked\n' }), 'create locked');
    await ok(put(original, admin, paths.perms, { content: 'locked\n', requiredWritePermission: 'knowledge:admin' }), 'permissions of locked');
    await ok(put(original, writer, paths.trashed, { content: 'in the trash\n' }), 'create trashed');
    await ok(del(original, admin, paths.trashed), 'delete trashed');
    await ok(put(original, writer, paths.restoredItem, { content: 'back again\n' }), 'create restored');
    await ok(del(original, admin, paths.restoredItem), 'delete restored');
    await ok(api(`${original.url}/api/v1/knowledge/trash/restore`, { method: 'POST', key: admin, body: { path: paths.restoredItem } }), 'restore');
    await ok(put(original, writer, paths.purged, { content: 'purged\n' }), 'create purged');
    await ok(del(original, admin, paths.purged), 'delete purged');
    await ok(api(`${original.url}/api/v1/knowledge/trash/items/${paths.purged}`, { method: 'DELETE', key: admin }), 'purge');

    backup = join(work.dir, 'backup.git');
    const clone = await runGit(['clone', '--bare', '--quiet', cloneUrl(original.url, admin), backup]);
    expect(clone.code, clone.stderr).to.equal(0);

    restoredData = join(work.dir, 'restored-data');
    const run = await importCli('restored', backup, restoredData);
    expect(run.code, run.stderr).to.equal(0);
    expect(run.stdout).to.match(KEY_LINE);
    restoredKey = run.stdout.trim();
    restored = await startTestServer({ dataDir: restoredData });
    const created = await api(`${restored.url}/api/v1/knowledge/keys`, { method: 'POST', key: restoredKey, body: { name: 'reader', role: 'reader' } });
    expect(created.status, JSON.stringify(created.body)).to.equal(200);
    restoredReader = created.body?.data?.secret as string;
  });

  after(async () => {
    await original?.close();
    await restored?.close();
    await work?.cleanup();
  });

  /** GETs `path` from both servers and checks the answers differ only in the organization id. */
  async function same(path: string, keys: [string, string] = [original.adminKey, restoredKey]): Promise<ApiResponse> {
    const a = await api(`${original.url}${path}`, { key: keys[0] });
    const b = await api(`${restored.url}${path}`, { key: keys[1] });
    expect(a.status, `${path} (original): ${JSON.stringify(a.body)}`).to.equal(200);
    expect(b.status, `${path} (restored): ${JSON.stringify(b.body)}`).to.equal(200);
    expect(withoutOrg(b.body, 'restored'), path).to.deep.equal(withoutOrg(a.body, 'default'));
    return a;
  }

  describe('round trip through a bare backup clone', () => {
    it('the import printed only the new key, which is an admin key of the restored organization alone', async () => {
      expect(restoredKey).to.not.equal(original.adminKey);
      expect((await api(`${restored.url}/api/v1/knowledge`, { key: original.adminKey })).status).to.equal(401);
      const keys = await api(`${restored.url}/api/v1/knowledge/keys`, { key: restoredKey });
      expect(keys.status).to.equal(200);
      const listed = keys.body?.data?.keys as Array<{ role: string; organizationId: string }>;
      expect(listed.map((k) => k.role).sort()).to.deep.equal(['admin', 'reader']);
      expect(listed.every((k) => k.organizationId === 'restored')).to.equal(true);
      expect(await readdir(join(restoredData, 'orgs'))).to.deep.equal(['restored.git']);
    });

    it('the repository is the same: same head, same commits, fsck --strict clean', async () => {
      const head = (await git(['rev-parse', 'main'], { gitdir: original.gitdir() })).trim();
      expect((await git(['rev-parse', 'main'], { gitdir: restored.gitdir('restored') })).trim()).to.equal(head);
      expect(await commitCount(restored.gitdir('restored'))).to.equal(await commitCount(original.gitdir()));
      expect((await git(['symbolic-ref', 'HEAD'], { gitdir: restored.gitdir('restored') })).trim()).to.equal('refs/heads/main');
      await fsckStrict(restored.gitdir('restored'));
    });

    it('the list is the same, for an admin and for a reader', async () => {
      const adminList = itemsOf(await same('/api/v1/knowledge'));
      expect(adminList.map((i) => i.path)).to.deep.equal([paths.secret, paths.guide, paths.perms, paths.nested, paths.restoredItem, paths.root, paths.ruled]);
      const readerList = itemsOf(await same('/api/v1/knowledge', [origReader, restoredReader]));
      // Not a trivial comparison: the reader sees fewer items (admin-only item, folder rule).
      expect(readerList.map((i) => i.path)).to.deep.equal([paths.guide, paths.perms, paths.nested, paths.restoredItem, paths.root]);
      itemsOf(await same('/api/v1/knowledge?content=false'));
      itemsOf(await same('/api/v1/knowledge?prefix=docs/'));
    });

    it('every item is the same: id, timestamps, permissions, content; every version of it too', async () => {
      const items = itemsOf(await api(`${original.url}/api/v1/knowledge`, { key: original.adminKey }));
      expect(items.length).to.equal(7);
      const byPath = new Map<string, Item>(items.map((i) => [i.path, i]));
      expect(byPath.get(paths.secret)?.requiredReadPermission).to.equal('knowledge:admin');
      expect(byPath.get(paths.perms)?.requiredWritePermission).to.equal('knowledge:admin');
      for (const item of items) {
        const res = await same(`${ITEMS}/${item.path}`);
        expect((res.body?.data?.item as Item).id).to.equal(item.id);
        const history = await same(`${HISTORY}/${item.path}`);
        const versions = history.body?.data?.versions as Array<{ version: number }>;
        expect(versions.length, item.path).to.be.greaterThan(0);
        for (const { version } of versions) await same(`${ITEMS}/${item.path}?version=${version}`);
      }
    });

    it('/history of each item is the same (commit ids, actions, messages, authors, timestamps)', async () => {
      const guide = await same(`${HISTORY}/${paths.guide}`);
      const versions = guide.body?.data?.versions as Array<{ action: string; message: string; author: { name: string } }>;
      expect(versions.map((v) => v.action)).to.deep.equal(['update', 'create']);
      expect(versions[0]?.message).to.equal('Rewrite the guide, by hand');
      expect(versions[0]?.author.name).to.equal('Writer One');
      const locked = await same(`${HISTORY}/${paths.perms}`);
      expect((locked.body?.data?.versions as Array<{ action: string }>).map((v) => v.action)).to.deep.equal(['permissions', 'create']);
      const back = await same(`${HISTORY}/${paths.restoredItem}`);
      expect((back.body?.data?.versions as Array<{ action: string }>).map((v) => v.action)).to.deep.equal(['restore', 'delete', 'create']);
      const trashed = await same(`${HISTORY}/${paths.trashed}`);
      expect((trashed.body?.data?.versions as Array<{ action: string }>).map((v) => v.action)).to.deep.equal(['delete', 'create']);
    });

    it('/trash is the same; the purged item is gone from both', async () => {
      const trash = await same('/api/v1/knowledge/trash');
      const items = trash.body?.data?.items as Array<{ path: string; deletedAt: string; deletedBy: string }>;
      expect(items.map((i) => i.path)).to.deep.equal([paths.trashed]);
      expect(items[0]?.deletedAt).to.be.a('string');
      for (const server of [original, restored]) {
        const key = server === original ? original.adminKey : restoredKey;
        expect((await api(`${server.url}${ITEMS}/${paths.purged}`, { key })).status).to.equal(404);
        expect((await api(`${server.url}${HISTORY}/${paths.purged}`, { key })).status).to.equal(404);
      }
    });

    it('/folders is the same, and the folder rule still applies', async () => {
      const folders = await same('/api/v1/knowledge/folders');
      const rules = folders.body?.data?.folders as Array<{ folder: string; requiredReadPermission: string }>;
      expect(rules.map((r) => [r.folder, r.requiredReadPermission])).to.deep.equal([['restricted', 'knowledge:write']]);
      await same('/api/v1/knowledge/folders/restricted');
      expect((await api(`${restored.url}${ITEMS}/${paths.ruled}`, { key: restoredReader })).status).to.equal(404);
    });

    it('the change feed from the first commit is the same', async () => {
      const first = (await git(['rev-list', '--max-parents=0', 'main'], { gitdir: original.gitdir() })).trim();
      const changes = await same(`/api/v1/knowledge/changes?since=${first}`);
      expect((changes.body?.data?.changes as unknown[]).length).to.be.greaterThan(5);
    });

    it('the restored organization takes writes, and a trashed item restores with the same id', async () => {
      const trashedId = ((await api(`${original.url}/api/v1/knowledge/trash`, { key: original.adminKey })).body?.data?.items as Item[])[0]?.id;
      const restore = await api(`${restored.url}/api/v1/knowledge/trash/restore`, { method: 'POST', key: restoredKey, body: { path: paths.trashed } });
      expect(restore.status, JSON.stringify(restore.body)).to.equal(200);
      expect((restore.body?.data?.item as Item).id).to.equal(trashedId);
      const write = await put(restored, restoredKey, paths.guide, { content: 'third, after the restore\n' });
      expect(write.status).to.equal(200);
      const history = await api(`${restored.url}${HISTORY}/${paths.guide}`, { key: restoredKey });
      expect((history.body?.data?.versions as unknown[]).length).to.equal(3);
      await fsckStrict(restored.gitdir('restored'));
      const verify = await runCli(['verify', '--data-dir', restoredData]);
      expect(verify.code, verify.stdout + verify.stderr).to.equal(0);
    });
  });

  describe('import straight from the server over HTTP', () => {
    it('works with the key in the URL, and keeps neither a remote nor the key anywhere in the repository', async () => {
      const url = cloneUrl(original.url, original.adminKey);
      const run = await importCli('fromurl', url, restoredData);
      expect(run.code, run.stderr).to.equal(0);
      expect(run.stdout).to.match(KEY_LINE);
      expect(run.stderr).to.not.contain(original.adminKey);
      const key = run.stdout.trim();
      const gitdir = join(restoredData, 'orgs/fromurl.git');
      const config = await readFile(join(gitdir, 'config'), 'utf8');
      expect(config).to.not.match(/\[remote/);
      expect(config).to.not.contain(original.adminKey);
      expect((await runGit(['config', '--get-regexp', '^remote\\.'], { gitdir })).stdout).to.equal('');
      const files = await allFiles(gitdir);
      expect(files.length).to.be.greaterThan(3);
      for (const file of files) {
        const bytes = await readFile(file);
        expect(bytes.includes(Buffer.from(original.adminKey)), `${file} holds the key`).to.equal(false);
        expect(bytes.includes(Buffer.from(`x:${original.adminKey}`)), file).to.equal(false);
      }
      expect((await gitOk(['for-each-ref', '--format=%(refname)'], { gitdir })).trim()).to.equal('refs/heads/main');
      // The running server picks the new organization up, with the original's items.
      const items = itemsOf(await list(restored, key));
      const originalItems = itemsOf(await list(original, original.adminKey));
      expect(withoutOrg(items, 'fromurl')).to.deep.equal(withoutOrg(originalItems, 'default'));
    });

    it('a wrong key in the URL: refused, the key is not echoed, nothing created', async () => {
      const before = await readdir(join(restoredData, 'orgs'));
      const wrong = `ks_${'Z'.repeat(43)}`;
      const run = await importCli('wrongkey', cloneUrl(original.url, wrong), restoredData);
      expect(run.code).to.not.equal(0);
      expect(run.stdout).to.equal('');
      expect(run.stderr).to.match(/git clone failed/);
      expect(run.stderr).to.not.contain(wrong);
      expect(await readdir(join(restoredData, 'orgs'))).to.deep.equal(before);
    });
  });

  describe('refusals: non-zero, problems on stderr, no organization created, nothing left in orgs/', () => {
    let orgsDir: string;

    before(() => {
      orgsDir = join(restoredData, 'orgs');
    });

    async function refused(orgId: string, from: string, problem: RegExp): Promise<string> {
      const before = (await readdir(orgsDir)).sort();
      const run = await importCli(orgId, from, restoredData);
      expect(run.code, `import ${orgId} should fail\n${run.stdout}`).to.not.equal(0);
      expect(run.stdout).to.equal('');
      expect(run.stderr, 'stderr').to.match(problem);
      expect(run.stderr).to.not.match(/\n\s+at .+:\d+:\d+/);
      expect((await readdir(orgsDir)).sort(), 'orgs/ after the refusal').to.deep.equal(before);
      expect((await api(`${restored.url}/api/v1/knowledge`, { key: restoredKey })).status).to.equal(200);
      return run.stderr;
    }

    it('an organization that already exists (and it is left as it was)', async () => {
      const gitdir = restored.gitdir('restored');
      const head = (await git(['rev-parse', 'main'], { gitdir })).trim();
      await refused('restored', backup, /Organization "restored" already exists/);
      expect((await git(['rev-parse', 'main'], { gitdir })).trim()).to.equal(head);
    });

    it('an invalid organization id', async () => {
      await refused('Bad_Org', backup, /Invalid organization id "Bad_Org"/);
      await refused('a'.repeat(64), backup, /Invalid organization id/);
    });

    it('a source that does not exist', async () => {
      await refused('nosource', join(work.dir, 'does-not-exist'), /git clone failed: .*does not exist/);
    });

    it('a git repository that is not a knowledge store (no .knowledge/config.json)', async () => {
      const plain = join(work.dir, 'plain');
      await gitOk(['init', '--quiet', '-b', 'main', plain]);
      await writeFile(join(plain, 'readme.md'), 'hello\n');
      await gitOk(['add', 'readme.md'], { cwd: plain });
      await gitOk(['commit', '--quiet', '-m', 'a file'], { cwd: plain });
      const stderr = await refused('plainrepo', plain, /\.knowledge\/config\.json/);
      expect(stderr).to.match(/not a knowledge store/);
    });

    it('a repository without a main branch', async () => {
      const other = join(work.dir, 'nomain');
      await gitOk(['init', '--quiet', '-b', 'trunk', other]);
      await gitOk(['commit', '--quiet', '--allow-empty', '-m', 'x'], { cwd: other });
      await refused('nomain', other, /no branch main/);
    });

    describe('crafted repositories (C git plumbing)', () => {
      const CONFIG = `${JSON.stringify({ format: 'knowledge-store', version: 1 }, null, 2)}\n`;
      const WHEN = '2024-05-01T10:00:00.000Z';

      const record = (path: string, overrides: Record<string, unknown> = {}): string =>
        `${JSON.stringify({ ...textRecord(path, { createdAt: WHEN, createdBy: 'key-1', updatedAt: WHEN, updatedBy: 'key-1' }), ...overrides }, null, 2)}\n`;

      type Entry = { mode: '100644' | '040000'; type: 'blob' | 'tree'; oid: string };
      interface Spec {
        /** path -> text content, or { oid } for a blob id written as is (possibly missing). */
        files: Record<string, string | { oid: string }>;
        /** Extra entries of the root tree, by raw name (names no path can express: "..", ".git"), made in the repository. */
        rootExtras?: (gitdir: string) => Promise<Record<string, Entry>>;
      }

      let n = 0;

      /** A bare repository whose main is one commit of exactly the given tree, built with plumbing. */
      async function craft(spec: Spec): Promise<string> {
        const gitdir = join(work.dir, `crafted-${n++}.git`);
        await gitOk(['init', '--quiet', '--bare', '-b', 'main', gitdir]);
        const blob = async (text: string): Promise<string> => (await gitOk(['hash-object', '-w', '--stdin'], { gitdir, input: text })).trim();
        interface Dir {
          [name: string]: Dir | Entry;
        }
        const root: Dir = {};
        for (const [path, content] of Object.entries(spec.files)) {
          const parts = path.split('/');
          let dir = root;
          for (const part of parts.slice(0, -1)) dir = (dir[part] ??= {}) as Dir;
          const oid = typeof content === 'string' ? await blob(content) : content.oid;
          dir[parts.at(-1) as string] = { mode: '100644', type: 'blob', oid };
        }
        const isEntry = (x: Dir | Entry): x is Entry => typeof (x as Entry).oid === 'string' && typeof (x as Entry).mode === 'string';
        const mktree = async (dir: Dir, extras: Record<string, Entry> = {}): Promise<string> => {
          const lines: string[] = [];
          for (const [name, child] of Object.entries(dir)) {
            const e = isEntry(child) ? child : { mode: '040000', type: 'tree', oid: await mktree(child) };
            lines.push(`${e.mode} ${e.type} ${e.oid}\t${name}`);
          }
          for (const [name, e] of Object.entries(extras)) lines.push(`${e.mode} ${e.type} ${e.oid}\t${name}`);
          return (await gitOk(['mktree', '--missing'], { gitdir, input: `${lines.join('\n')}\n` })).trim();
        };
        const tree = await mktree(root, spec.rootExtras ? await spec.rootExtras(gitdir) : {});
        const commit = (await gitOk(['commit-tree', tree, '-m', 'crafted'], { gitdir })).trim();
        await gitOk(['update-ref', 'refs/heads/main', commit], { gitdir });
        return gitdir;
      }

      /** A sound repository: the store marker and one item, with its record. */
      const base = (): Record<string, string | { oid: string }> => ({
        '.knowledge/config.json': CONFIG,
        'docs/a.md': 'hello\n',
        '.knowledge/items/docs/a.md': record('docs/a.md'),
      });

      it('control: a sound crafted repository imports, and its item is served', async () => {
        const gitdir = await craft({ files: base() });
        const run = await importCli('crafted-ok', gitdir, restoredData);
        expect(run.code, run.stderr).to.equal(0);
        expect(run.stdout).to.match(KEY_LINE);
        const items = itemsOf(await list(restored, run.stdout.trim()));
        expect(items.map((i) => [i.path, i.content, i.createdAt])).to.deep.equal([['docs/a.md', 'hello\n', WHEN]]);
      });

      const writeBlob = async (gitdir: string, text: string): Promise<string> =>
        (await gitOk(['hash-object', '-w', '--stdin'], { gitdir, input: text })).trim();

      it('a tree entry ".."', async () => {
        const gitdir = await craft({
          files: base(),
          rootExtras: async (dir) => ({ '..': { mode: '100644', type: 'blob', oid: await writeBlob(dir, 'x\n') } }),
        });
        expect((await gitOk(['ls-tree', '--name-only', 'main'], { gitdir })).split('\n')).to.include('..');
        await refused('dotdot', gitdir, /git clone failed.*(\.\.|dotdot)/is);
      });

      it('a tree entry ".git" (a subtree holding a config)', async () => {
        const gitdir = await craft({
          files: base(),
          rootExtras: async (dir) => {
            const config = await writeBlob(dir, '[core]\n\tfsmonitor = echo pwned\n');
            const tree = (await gitOk(['mktree'], { gitdir: dir, input: `100644 blob ${config}\tconfig\n` })).trim();
            return { '.git': { mode: '040000', type: 'tree', oid: tree } };
          },
        });
        expect((await gitOk(['ls-tree', '--name-only', 'main'], { gitdir })).split('\n')).to.include('.git');
        await refused('dotgit', gitdir, /git clone failed.*(\.git|dotgit)/is);
      });

      it('an uppercase path Docs/A.md with a matching record', async () => {
        const gitdir = await craft({
          files: { '.knowledge/config.json': CONFIG, 'Docs/A.md': 'upper\n', '.knowledge/items/Docs/A.md': record('Docs/A.md') },
        });
        await refused('upper', gitdir, /Docs\/A\.md: Invalid path/);
      });

      // Paths that break a clone on Windows or macOS, or a shell tool pointed at it.
      for (const [n, [label, path, rule]] of ([
        ['a folder ending in "."', 'a./x.md', /a\.\/x\.md: Invalid path: no segment may end with "\."/],
        ['a Windows device name', 'aux/con.md', /aux\/con\.md: Invalid path: no segment may be a Windows device name/],
        ['a device name with two extensions', 'nul.tar.gz', /nul\.tar\.gz: Invalid path: no segment may be a Windows device name/],
        ['a leading "-"', '-rf.md', /-rf\.md: Invalid path: no segment may start with "-"/],
      ] as const).entries()) {
        it(`an item path with ${label}: ${path}`, async () => {
          const gitdir = await craft({ files: { '.knowledge/config.json': CONFIG, [path]: 'x\n', [`.knowledge/items/${path}`]: record(path) } });
          await refused(`hostile-${n}`, gitdir, rule);
        });
      }

      it('a record whose content blob is missing from the repository', async () => {
        const missing = (await gitOk(['hash-object', '--stdin'], { input: `never written ${randomUUID()}\n` })).trim();
        const gitdir = await craft({
          files: { '.knowledge/config.json': CONFIG, 'docs/a.md': { oid: missing }, '.knowledge/items/docs/a.md': record('docs/a.md') },
        });
        expect((await runGit(['cat-file', '-e', missing], { gitdir })).code).to.not.equal(0);
        await refused('missingblob', gitdir, new RegExp(`git clone failed[\\s\\S]*${missing}`));
      });

      it('a record that names a different path', async () => {
        const gitdir = await craft({
          files: { '.knowledge/config.json': CONFIG, 'docs/a.md': 'a\n', '.knowledge/items/docs/a.md': record('docs/b.md') },
        });
        await refused('otherpath', gitdir, /record names path "docs\/b\.md"/);
      });

      it('a record with a bad permission value', async () => {
        const gitdir = await craft({
          files: {
            '.knowledge/config.json': CONFIG,
            'docs/a.md': 'a\n',
            '.knowledge/items/docs/a.md': record('docs/a.md', { requiredReadPermission: 'knowledge:root' }),
          },
        });
        await refused('badperm', gitdir, /bad requiredReadPermission/);
      });

      it('a record with no content at its path, and a file with no record', async () => {
        const gitdir = await craft({
          files: { '.knowledge/config.json': CONFIG, 'docs/stray.md': 'stray\n', '.knowledge/items/docs/a.md': record('docs/a.md') },
        });
        const stderr = await refused('norecord', gitdir, /record has no content/);
        expect(stderr).to.match(/docs\/stray\.md: file has no item record/);
      });
    });
  });
});
