import { createHash, randomBytes } from 'node:crypto';
import { readdir, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { expect } from 'chai';
import { silentLogger } from '../../src/common/log.js';
import { STORE_RULES } from '../../src/domain/integrity.js';
import { importOrganization } from '../../src/domain/orgImport.js';
import { KeyStore } from '../../src/storage/keys/keyStore.js';
import { OrgStore } from '../../src/storage/repo/orgStore.js';
import { fsckStrict, git, hostGit } from '../support/git.js';
import { DOCX_TYPE, makeDocx, makePdf } from '../support/fileFixtures.js';
import { api, fs, startTestServer, type TestServer } from '../support/server.js';
import { tmpDir } from '../support/tmp.js';
import { FILES, upload } from '../http/fileHelpers.js';
import { cloneUrl, runGit } from './support.js';

const LIST = '/api/v1/knowledge';

/** File items in the repository: `verify` accepts them, and `org import` brings them back byte for byte. */
describe('file items: verify and org import', function () {
  this.timeout(60_000);
  let server: TestServer;
  let restored: TestServer | undefined;
  let work: { dir: string; cleanup(): Promise<void> };

  before(async () => {
    server = await startTestServer();
    work = await tmpDir('ks-files-import');
  });
  after(async () => {
    await server.close().catch(() => undefined);
    await restored?.close();
    await work.cleanup();
  });

  it('verify is clean with live and trashed file items, and names a file whose bytes are not its record\'s blob', async () => {
    const admin = server.adminKey;
    const pdf = await makePdf('Import me');
    const docx = makeDocx({ heading: 'Trashed doc', paragraphs: ['kept in the trash'] });
    expect((await upload(server, admin, 'files/a.pdf', pdf, 'application/pdf')).status).to.equal(200);
    expect((await upload(server, admin, 'files/b.docx', docx, DOCX_TYPE)).status).to.equal(200);
    expect((await api(`${server.url}${LIST}/items/files/b.docx`, { method: 'DELETE', key: admin })).status).to.equal(200);
    const orgs = new OrgStore({ git: hostGit, fs, dataDir: server.dataDir, logger: silentLogger });
    const report = await orgs.verify('default', STORE_RULES);
    expect(report.problems).to.deep.equal([]);
    expect([report.items, report.trashed]).to.deep.equal([1, 1]);

    // A copy of the repository whose PDF was swapped for other bytes (record unchanged): verify says so.
    const copy = join(work.dir, 'swapped.git');
    await git(['clone', '--bare', '--quiet', server.gitdir(), copy]);
    const other = (await runGit(['hash-object', '-w', '--stdin'], { gitdir: copy, input: 'not the pdf' })).stdout.trim();
    const env = { GIT_INDEX_FILE: join(work.dir, 'swap.index') };
    await runGit(['read-tree', 'main'], { gitdir: copy, env });
    await runGit(['update-index', '--cacheinfo', `100644,${other},files/a.pdf`], { gitdir: copy, env });
    const tree = (await runGit(['write-tree'], { gitdir: copy, env })).stdout.trim();
    const commit = (await runGit(['commit-tree', tree, '-p', 'main', '-m', 'Swap the bytes'], { gitdir: copy })).stdout.trim();
    await git(['update-ref', 'refs/heads/main', commit], { gitdir: copy });
    const swapped = await orgs.verify('default', STORE_RULES, copy);
    expect(swapped.problems).to.deep.equal([`files/a.pdf: the file at files/a.pdf is not blob ${(await git(['rev-parse', 'main^:files/a.pdf'], { gitdir: copy })).trim()}`]);
  });

  it('a file item is a loose object until a repack, then read from the pack: the same bytes either way', async () => {
    const item = (await api(`${server.url}${LIST}/items/files/a.pdf`, { key: server.adminKey })).body?.data as { item: { fileKey: string } };
    const oid = item.item.fileKey;
    const loose = join(server.gitdir(), 'objects', oid.slice(0, 2), oid.slice(2));
    expect(await stat(loose).then(() => true, () => false), 'loose before the repack').to.equal(true);
    const before = await readOriginal(server, 'files/a.pdf');
    await git(['repack', '-a', '-d', '-q'], { gitdir: server.gitdir() });
    expect(await stat(loose).then(() => true, () => false), 'packed after it').to.equal(false);
    expect((await readOriginal(server, 'files/a.pdf')).equals(before)).to.equal(true);
  });

  it('a large file stored as a delta of its previous version once repacked: both versions read back byte for byte', async () => {
    // ~2.6 MiB: above the slice in which objects are hashed, and deltified by git against its other version.
    const lines = Array.from({ length: 40_000 }, (_, i) => `${i} ${randomBytes(45).toString('base64')}`);
    const first = Buffer.from(`${lines.join('\n')}\n`);
    lines[20_000] = 'one line changed';
    const second = Buffer.from(`${lines.join('\n')}\n`);
    for (const bytes of [first, second]) expect((await upload(server, server.adminKey, 'files/big.txt', bytes, 'text/plain')).status).to.equal(200);
    await git(['repack', '-a', '-d', '-f', '-q', '--window=10', '--depth=10'], { gitdir: server.gitdir() });
    const [pack] = (await git(['rev-parse', '--git-path', 'objects/pack'], { gitdir: server.gitdir() })).trim().split('\n');
    const packs = (await readdir(pack as string)).filter((n) => n.endsWith('.idx'));
    const verified = await git(['verify-pack', '-v', join(pack as string, packs[0] as string)]);
    const ids = [first, second].map((b) => createHash('sha1').update(`blob ${b.byteLength}\0`).update(b).digest('hex'));
    const deltified = verified.split('\n').filter((l) => ids.some((id) => l.startsWith(`${id} blob`)) && l.trim().split(/\s+/).length >= 7);
    expect(deltified, 'one version is stored as a delta of the other').to.have.length(1);
    expect((await readOriginal(server, 'files/big.txt')).equals(second), 'the current version').to.equal(true);
    const old = await fetch(`${server.url}${FILES}/files/big.txt?version=1`, { headers: { Authorization: `Bearer ${server.adminKey}` } });
    expect(old.status).to.equal(200);
    expect(Buffer.from(await old.arrayBuffer()).equals(first), 'the first version').to.equal(true);
  });

  it('org import from a clone brings file items back: bytes, text, record, trash', async () => {
    const admin = server.adminKey;
    const backup = join(work.dir, 'backup.git');
    const clone = await runGit(['clone', '--bare', '--quiet', cloneUrl(server.url, admin), backup]);
    expect(clone.code, clone.stderr).to.equal(0);
    const dataDir = join(work.dir, 'restored');
    const { secret } = await importInto(backup, 'default', dataDir);
    restored = await startTestServer({ dataDir });
    const a = await fetch(`${restored.url}${FILES}/files/a.pdf`, { headers: { Authorization: `Bearer ${secret}` } });
    expect(a.status).to.equal(200);
    expect(Buffer.from(await a.arrayBuffer()).equals(await readOriginal(server, 'files/a.pdf'))).to.equal(true);
    const before = await api(`${server.url}${LIST}/items/files/a.pdf`, { key: admin });
    const after = await api(`${restored.url}${LIST}/items/files/a.pdf`, { key: secret });
    expect(after.body?.data).to.deep.equal(before.body?.data);
    const trash = await api(`${restored.url}${LIST}/trash`, { key: secret });
    expect((trash.body?.data as { items: Array<{ path: string; itemType: string }> }).items.map((i) => [i.path, i.itemType])).to.deep.equal([['files/b.docx', 'file']]);
    await fsckStrict(restored.gitdir());
  });

  it('a restart that rebuilds the index and the search index from the tree finds file items as they were', async () => {
    const admin = server.adminKey;
    const moved = await api(`${server.url}${LIST}/move`, { method: 'POST', key: admin, body: { from: 'files/a.pdf', to: 'moved/a.pdf' } });
    expect(moved.status, JSON.stringify(moved.body)).to.equal(200);
    const before = await api(`${server.url}${LIST}/items/moved/a.pdf`, { key: admin });
    const bytes = await readOriginal(server, 'moved/a.pdf');
    const { dataDir } = server;
    await server.server.close();
    // Without the snapshot and the search index, both are rebuilt from the head commit's tree.
    await rm(join(server.gitdir(), 'knowledge-index.json'), { force: true });
    await rm(join(server.gitdir(), 'knowledge-search.sqlite'), { force: true });
    const again = await startTestServer({ dataDir });
    try {
      const after = await api(`${again.url}${LIST}/items/moved/a.pdf`, { key: admin });
      expect(after.body?.data).to.deep.equal(before.body?.data);
      expect((await readOriginal(again, 'moved/a.pdf', admin)).equals(bytes)).to.equal(true);
      const found = await api(`${again.url}${LIST}/search?q=import`, { key: admin });
      expect((found.body?.data as { results: Array<{ path: string }> }).results.map((r) => r.path)).to.deep.equal(['moved/a.pdf']);
      const tree = await git(['ls-tree', '-r', '--name-only', 'main'], { gitdir: again.gitdir() });
      expect(tree.split('\n').filter((f) => f.includes('a.pdf'))).to.deep.equal(['.knowledge/items/moved/a.pdf', '.knowledge/text/moved/a.pdf', 'moved/a.pdf']);
      expect((await git(['log', '--follow', '--format=%s', '--', 'moved/a.pdf'], { gitdir: again.gitdir() })).trim().split('\n')).to.deep.equal(['Move files/a.pdf to moved/a.pdf', 'Create files/a.pdf']);
    } finally {
      await again.close();
    }
  });

  async function importInto(source: string, orgId: string, dataDir = join(work.dir, `data-${orgId}`)) {
    const orgs = new OrgStore({ git: hostGit, fs, dataDir, logger: silentLogger });
    const keys = new KeyStore({ fs, dataDir, logger: silentLogger });
    try {
      return await importOrganization({ orgs, keys, orgId, source });
    } finally {
      await orgs.closeAll();
    }
  }
});

async function readOriginal(server: TestServer, path: string, key = server.adminKey): Promise<Buffer> {
  const res = await fetch(`${server.url}${FILES}/${path}`, { headers: { Authorization: `Bearer ${key}` } });
  return Buffer.from(await res.arrayBuffer());
}
