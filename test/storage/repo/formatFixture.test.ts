import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import { createKey } from '../../../src/domain/keys.js';
import { silentLogger } from '../../../src/common/log.js';
import { KeyStore } from '../../../src/storage/keys/keyStore.js';
import { verifyRepository } from '../../../src/storage/repo/verify.js';
import { fsckStrict, git, hostGit } from '../../support/git.js';
import { api, fs, startTestServer, type TestServer } from '../../support/server.js';
import { tmpDir } from '../../support/tmp.js';

/**
 * fixtures/repos/sample-v1.bundle is a repository written by format version 1
 * (an update with a custom message, nested folders, an admin-only item, a
 * deleted item). A server must keep reading it exactly as it was written: a
 * change to the on-disk format that breaks existing repositories fails here.
 */
describe('on-disk format: a version 1 repository from fixtures/', () => {
  let server: TestServer;
  let cleanup: () => Promise<void>;
  let admin: string;
  let reader: string;
  const expected = JSON.parse(
    readFileSync(new URL('../../../fixtures/repos/sample-v1.expected.json', import.meta.url), 'utf8'),
  ) as { items: Array<Record<string, unknown>> };

  before(async () => {
    const tmp = await tmpDir('ks-fixture');
    cleanup = tmp.cleanup;
    const gitdir = `${tmp.dir}/orgs/default.git`;
    await git(['clone', '--bare', '--quiet', new URL('../../../fixtures/repos/sample-v1.bundle', import.meta.url).pathname, gitdir]);
    await git(['symbolic-ref', 'HEAD', 'refs/heads/main'], { gitdir });
    const keys = new KeyStore({ fs, dataDir: tmp.dir, logger: silentLogger });
    admin = (await createKey({ keys, orgId: 'default', role: 'admin', name: 'fixture-admin' })).secret;
    reader = (await createKey({ keys, orgId: 'default', role: 'reader', name: 'fixture-reader' })).secret;
    server = await startTestServer({ dataDir: tmp.dir });
  });

  after(async () => {
    await server.close();
    await cleanup();
  });

  it('lists every live item with its stored id, timestamps, permissions and content', async () => {
    const res = await api(`${server.url}/api/v1/knowledge`, { key: admin });
    expect(res.status).to.equal(200);
    expect(res.body?.data?.items).to.deep.equal(expected.items);
  });

  it('keeps the admin-only item hidden from a reader', async () => {
    const res = await api(`${server.url}/api/v1/knowledge`, { key: reader });
    const paths = (res.body?.data?.items as Array<{ path: string }>).map((i) => i.path);
    expect(paths).to.deep.equal(expected.items.map((i) => i.path).filter((p) => p !== 'secrets/board.md'));
    expect((await api(`${server.url}/api/v1/knowledge/items/secrets/board.md`, { key: reader })).status).to.equal(404);
  });

  it('still knows the deleted item holds its path', async () => {
    const res = await api(`${server.url}/api/v1/knowledge/items/notes/old.md`, { method: 'PUT', key: admin, body: { content: 'new' } });
    expect(res.status).to.equal(409);
  });

  it('passes verify, and stays fsck-clean after a new commit on top', async () => {
    const res = await api(`${server.url}/api/v1/knowledge/items/docs/guide.md`, { method: 'PUT', key: admin, body: { content: 'v3\n' } });
    expect(res.status).to.equal(200);
    expect(res.body?.data?.item).to.include({ id: expected.items[1]?.id, createdAt: expected.items[1]?.createdAt });
    const report = await verifyRepository({ fs, git: hostGit, gitdir: server.gitdir(), orgId: 'default' });
    expect(report.problems).to.deep.equal([]);
    expect(report).to.include({ items: expected.items.length, trashed: 1 });
    await fsckStrict(server.gitdir());
  });
});
