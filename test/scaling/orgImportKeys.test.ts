import { access, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { expect } from 'chai';
import { ensureBuilt, runCli } from '../support/child.js';
import { tmpDir } from '../support/tmp.js';
import { gitOk } from '../git/support.js';
import { createOrg } from './cluster.js';
import { keyFilesText } from '../support/keyFiles.js';

/**
 * `org import --keys` refusals (README, Backups and git access): a key file that is wrong refuses
 * the import before anything is cloned; a key that clashes with one already here refuses the keys
 * (none added) after the repository is in place, and says so.
 */
describe('scaling: org import --keys refuses a wrong key file', function () {
  this.timeout(60_000);

  let work: { dir: string; cleanup: () => Promise<void> };
  let mirror: string;
  let keysFile: string;
  const exists = (path: string): Promise<boolean> => access(path).then(() => true, () => false);

  before(async () => {
    await ensureBuilt();
    work = await tmpDir('ks-import-keys');
    const a = join(work.dir, 'a');
    await createOrg(a, 'acme');
    mirror = join(work.dir, 'acme.git');
    await gitOk(['clone', '--quiet', '--mirror', join(a, 'orgs', 'acme.git'), mirror]);
    keysFile = join(work.dir, 'acme-keys.json');
    const exported = await runCli(['key', 'export', 'acme', '--out', keysFile, '--data-dir', a]);
    expect(exported.code, exported.stderr).to.equal(0);
  });

  after(async () => {
    await work?.cleanup();
  });

  it('refuses another organization\'s key file or a file that is no export before cloning anything', async () => {
    const b = join(work.dir, 'b1');
    await createOrg(b, 'other');
    const other = join(work.dir, 'other-keys.json');
    expect((await runCli(['key', 'export', 'other', '--out', other, '--data-dir', b])).code).to.equal(0);
    const wrongOrg = await runCli(['org', 'import', 'acme', '--from', mirror, '--keys', other, '--data-dir', b]);
    expect(wrongOrg.code).to.equal(1);
    expect(wrongOrg.stderr).to.include('keys of organization "other", not "acme"');
    expect(wrongOrg.stderr).not.to.include('Cloning');
    const junk = join(work.dir, 'junk.json');
    await writeFile(junk, '[]');
    const notExport = await runCli(['org', 'import', 'acme', '--from', mirror, '--keys', junk, '--data-dir', b]);
    expect(notExport.code).to.equal(1);
    expect(notExport.stderr).to.include('Not a key export');
    expect(await exists(join(b, 'orgs', 'acme.git'))).to.equal(false);
  });

  it('imports the repository but none of its keys when a key id is taken here by a different key, and says so', async () => {
    const b = join(work.dir, 'b2');
    await createOrg(b, 'other');
    const acme = JSON.parse(await readFile(keysFile, 'utf8')) as { keys: Array<{ id: string } & Record<string, unknown>> };
    const taken = { ...(acme.keys[0] as { id: string }), orgId: 'other', hash: 'f'.repeat(64) };
    const clash = join(work.dir, 'clash.json');
    await writeFile(clash, JSON.stringify({ kind: 'knowledge-store-keys', version: 1, orgId: 'other', exportedAt: new Date().toISOString(), keys: [taken] }));
    expect((await runCli(['key', 'import', 'other', '--file', clash, '--data-dir', b])).code).to.equal(0);
    const before = await keyFilesText(readFile, b);

    const run = await runCli(['org', 'import', 'acme', '--from', mirror, '--keys', keysFile, '--data-dir', b]);
    expect(run.code).to.equal(1);
    expect(run.stderr).to.include('Organization acme was imported, but not its keys');
    expect(run.stderr).to.include(`Key ${taken.id} already exists here and differs`);
    expect(run.stderr).to.include('key import acme');
    expect(await exists(join(b, 'orgs', 'acme.git', 'HEAD'))).to.equal(true);
    expect(await keyFilesText(readFile, b)).to.equal(before);
  });
});
