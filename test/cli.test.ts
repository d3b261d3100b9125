import { execFile } from 'node:child_process';
import { createHash, randomUUID } from 'node:crypto';
import { promises as nodeFs } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { putItem } from '../src/domain/items.js';
import { silentLogger } from '../src/common/log.js';
import type { FsPromises } from '../src/storage/fs/fs.js';
import { OrgStore } from '../src/storage/repo/orgStore.js';
import { git, hostGit } from './support/git.js';
import { api, startTestServer, type TestServer } from './support/server.js';
import { sleep } from './support/sleep.js';
import { tmpDir } from './support/tmp.js';
import { keyFilesText } from './support/keyFiles.js';

/**
 * `knowledge-store` as a child process: results on stdout (only
 * the key, for the create commands), errors on stderr with nothing on stdout,
 * exit codes, and the same data dir shared with a running server.
 * Runs the build in dist/ (`npm test` builds first).
 */

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const CLI = join(ROOT, 'dist/src/cli/main.js');
const KEY = /^ks_[a-z0-9-]+_[A-Za-z0-9_-]{43}$/;
const fs = nodeFs as unknown as FsPromises;
const sha256 = (s: string): string => createHash('sha256').update(s, 'utf8').digest('hex');

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function cli(args: string[]): Promise<Run> {
  const env: NodeJS.ProcessEnv = { ...process.env, LOG_LEVEL: '' };
  delete env.KNOWLEDGE_DATA_DIR;
  return new Promise((resolve) => {
    execFile(process.execPath, [CLI, ...args], { cwd: ROOT, env, timeout: 20_000 }, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === 'number' ? err.code : -1) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

/** A run that must succeed; returns stdout. */
async function ok(args: string[]): Promise<string> {
  const run = await cli(args);
  expect(run.code, `${args.join(' ')}\nstderr: ${run.stderr}`).to.equal(0);
  return run.stdout;
}

/** A run that must fail the way every command fails: non-zero, nothing on stdout, a message (no stack) on stderr. */
async function fails(args: string[], message?: RegExp): Promise<Run> {
  const run = await cli(args);
  expect(run.code, `${args.join(' ')} should fail`).to.not.equal(0);
  expect(run.stdout, `${args.join(' ')} stdout`).to.equal('');
  expect(run.stderr.trim(), `${args.join(' ')} stderr`).not.to.equal('');
  expect(run.stderr).not.to.match(/\n\s+at .+:\d+:\d+/);
  if (message) expect(run.stderr).to.match(message);
  return run;
}

/** The one line a create command prints: the key. */
function onlyKey(stdout: string): string {
  expect(stdout).to.match(/^ks_[a-z0-9-]+_[A-Za-z0-9_-]{43}\n$/);
  const key = stdout.trim();
  expect(key).to.match(KEY);
  return key;
}

interface ListedKey {
  id: string;
  orgId: string;
  name: string;
  role: string;
  createdAt: string;
  revokedAt: string | null;
  lastUsedAt: string | null;
}

/** Polls `fn` until it returns true or `ms` pass; returns the time it took, or -1. */
async function within(ms: number, fn: () => Promise<boolean>): Promise<number> {
  const started = Date.now();
  while (Date.now() - started < ms) {
    if (await fn()) return Date.now() - started;
    await sleep(25);
  }
  return (await fn()) ? Date.now() - started : -1;
}

const listStatus = async (server: TestServer, key: string): Promise<number> => (await api(`${server.url}/api/v1/knowledge`, { key })).status;

describe('cli (knowledge-store as a child process)', function () {
  this.timeout(60_000);
  let tmp: { dir: string; cleanup: () => Promise<void> };
  let D: string;
  let acmeKey: Run;

  before(async () => {
    await nodeFs.access(CLI).catch(() => {
      throw new Error(`${CLI} is missing: run \`npm run build\` (npm test builds first)`);
    });
    tmp = await tmpDir('ks-cli');
    D = join(tmp.dir, 'data');
    acmeKey = await cli(['org', 'create', 'acme', '--data-dir', D]);
  });

  after(async () => {
    await tmp.cleanup();
  });

  describe('org create', () => {
    it('prints only the new admin key, on one line, and exits 0', async () => {
      expect(acmeKey.code, acmeKey.stderr).to.equal(0);
      onlyKey(acmeKey.stdout);
      await nodeFs.access(join(D, 'orgs', 'acme.git', 'HEAD'));
      const keys = JSON.parse(await ok(['key', 'list', '--org', 'acme', '--data-dir', D, '--json'])) as ListedKey[];
      expect(keys.map((k) => k.role)).to.deep.equal(['admin']);
    });

    it('refuses an organization that exists: non-zero, stderr only', async () => {
      await fails(['org', 'create', 'acme', '--data-dir', D], /already exists/);
    });

    it('refuses invalid organization ids and creates nothing', async () => {
      for (const bad of ['Bad_Org', '-leading-dash', 'a'.repeat(64), 'has.dot', 'UPPER', 'sp ace']) {
        await fails(['org', 'create', '--data-dir', D, '--', bad], /Invalid organization id/);
      }
      expect((await nodeFs.readdir(join(D, 'orgs'))).sort()).to.deep.equal(['acme.git']);
    });

    it('accepts the longest valid id (63 characters)', async () => {
      const id = `a${'-'.repeat(61)}z`;
      onlyKey(await ok(['org', 'create', id, '--data-dir', D]));
    });

    it('--json prints the org, key id and key as JSON', async () => {
      const out = JSON.parse(await ok(['org', 'create', 'globex', '--data-dir', D, '--json'])) as Record<string, string>;
      expect(out.orgId).to.equal('globex');
      expect(out.keyId).to.match(/^key_[0-9a-f]{16}$/);
      expect(out.key).to.match(KEY);
    });
  });

  describe('key create', () => {
    it('prints only the new key', async () => {
      const key = onlyKey(await ok(['key', 'create', '--org', 'acme', '--role', 'writer', '--data-dir', D]));
      const keys = JSON.parse(await ok(['key', 'list', '--org', 'acme', '--data-dir', D, '--json'])) as ListedKey[];
      expect(keys.some((k) => k.role === 'writer')).to.equal(true);
      expect(JSON.stringify(keys)).not.to.include(key);
    });

    it('--json prints key id, org, role, name and the key', async () => {
      const out = JSON.parse(await ok(['key', 'create', '--org', 'acme', '--role', 'reader', '--name', 'docs bot', '--data-dir', D, '--json'])) as Record<
        string,
        string
      >;
      expect(out).to.include({ orgId: 'acme', role: 'reader', name: 'docs bot' });
      expect(out.keyId).to.match(/^key_[0-9a-f]{16}$/);
      expect(out.key).to.match(KEY);
    });

    it('refuses an unknown role, a missing organization, a bad name, and a missing --role; stores nothing', async () => {
      const before = await keyFilesText(nodeFs.readFile, D);
      await fails(['key', 'create', '--org', 'acme', '--role', 'boss', '--data-dir', D], /role/i);
      await fails(['key', 'create', '--org', 'missing', '--role', 'reader', '--data-dir', D], /missing/);
      await fails(['key', 'create', '--org', 'Bad_Org', '--role', 'reader', '--data-dir', D], /Invalid organization id/);
      await fails(['key', 'create', '--org', 'acme', '--role', 'reader', '--name', 'evil <x>', '--data-dir', D]);
      await fails(['key', 'create', '--org', 'acme', '--data-dir', D], /--role/);
      expect(await keyFilesText(nodeFs.readFile, D)).to.equal(before);
    });
  });

  describe('key create --scope', () => {
    it('limits the key to the folders given (repeatable, normalised), shown by key list', async () => {
      const created = JSON.parse(
        await ok(['key', 'create', '--org', 'acme', '--role', 'reader', '--scope', 'notes', '--scope', 'docs/', '--data-dir', D, '--json']),
      ) as { keyId: string; scopes: string[] };
      expect(created.scopes).to.deep.equal(['docs/', 'notes/']);
      const listed = JSON.parse(await ok(['key', 'list', '--org', 'acme', '--data-dir', D, '--json'])) as Array<ListedKey & { scopes?: string[] }>;
      expect(listed.find((k) => k.id === created.keyId)?.scopes).to.deep.equal(['docs/', 'notes/']);
      expect(await ok(['key', 'list', '--org', 'acme', '--data-dir', D])).to.match(new RegExp(`${created.keyId}.*\tdocs/,notes/`));
    });

    it('refuses bad scopes and creates no key', async () => {
      const before = (JSON.parse(await ok(['key', 'list', '--org', 'acme', '--data-dir', D, '--json'])) as ListedKey[]).length;
      await fails(['key', 'create', '--org', 'acme', '--role', 'reader', '--scope', 'docs/', '--scope', 'docs/a/', '--data-dir', D], /inside scope "docs\/"/);
      await fails(['key', 'create', '--org', 'acme', '--role', 'reader', '--scope', '../x', '--data-dir', D], /Invalid scope/);
      expect((JSON.parse(await ok(['key', 'list', '--org', 'acme', '--data-dir', D, '--json'])) as ListedKey[]).length).to.equal(before);
    });
  });

  describe('key list', () => {
    it('shows id, name, role, created and last used, and never a secret or its hash', async () => {
      const created = JSON.parse(await ok(['key', 'create', '--org', 'acme', '--role', 'writer', '--name', 'lister', '--data-dir', D, '--json'])) as Record<
        string,
        string
      >;
      const secret = created.key as string;
      const text = await ok(['key', 'list', '--org', 'acme', '--data-dir', D]);
      const [header, ...rows] = text.trimEnd().split('\n');
      for (const column of ['ID', 'NAME', 'ROLE', 'CREATED', 'LAST USED']) expect(header).to.include(column);
      const row = rows.find((r) => r.includes(created.keyId as string));
      expect(row, text).not.to.equal(undefined);
      expect(row).to.include('lister');
      expect(row).to.include('writer');
      expect(row).to.match(/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d/);
      expect(row).to.include('never');
      const json = await ok(['key', 'list', '--org', 'acme', '--data-dir', D, '--json']);
      const listed = JSON.parse(json) as Array<Record<string, unknown>>;
      const mine = listed.find((k) => k.id === created.keyId);
      expect(mine).to.include({ name: 'lister', role: 'writer', orgId: 'acme', lastUsedAt: null, revokedAt: null });
      expect(mine?.createdAt).to.be.a('string');
      for (const k of listed) expect(k).not.to.have.property('hash');
      for (const out of [text, json]) {
        expect(out).not.to.include(secret);
        expect(out).not.to.include(secret.slice(-43));
        expect(out).not.to.include(sha256(secret));
        expect(out).not.to.include(onlyKey(acmeKey.stdout).slice(-43));
        expect(out).not.to.include(sha256(onlyKey(acmeKey.stdout)));
      }
    });

    it("lists only the organization's own keys", async () => {
      const listed = JSON.parse(await ok(['key', 'list', '--org', 'globex', '--data-dir', D, '--json'])) as ListedKey[];
      expect(listed.length).to.be.greaterThan(0);
      for (const k of listed) expect(k.orgId).to.equal('globex');
    });

    it('refuses a missing organization', async () => {
      await fails(['key', 'list', '--org', 'missing', '--data-dir', D], /missing/);
    });
  });

  describe('key export / key import', () => {
    it('moves the keys to another data directory: the same secrets work there; twice changes nothing; --out is mode 600', async () => {
      const E = join(tmp.dir, 'export-target');
      await ok(['org', 'create', 'moved', '--data-dir', D]);
      const writer = onlyKey(await ok(['key', 'create', '--org', 'moved', '--role', 'writer', '--data-dir', D]));
      const file = join(tmp.dir, 'moved-keys.json');
      const exported = await cli(['key', 'export', 'moved', '--out', file, '--data-dir', D]);
      expect(exported.code, exported.stderr).to.equal(0);
      expect(exported.stdout).to.equal('');
      expect(exported.stderr).to.equal(`Exported 2 key(s) of moved to ${file}\n`);
      expect((await nodeFs.stat(file)).mode & 0o777).to.equal(0o600);
      const text = await nodeFs.readFile(file, 'utf8');
      expect(text).not.to.include(writer.slice(-43));
      expect(text).to.include(sha256(writer));
      // Without --out: the same JSON on stdout.
      const withoutTime = (json: string): unknown => ({ ...(JSON.parse(json) as Record<string, unknown>), exportedAt: null });
      expect(withoutTime(await ok(['key', 'export', 'moved', '--data-dir', D]))).to.deep.equal(withoutTime(text));

      await fails(['key', 'import', 'moved', '--file', file, '--data-dir', E], /No organization|moved/);
      await ok(['org', 'create', 'moved', '--data-dir', E]);
      expect(await ok(['key', 'import', 'moved', '--file', file, '--data-dir', E])).to.equal('Imported 2 key(s) into moved; 0 already here.\n');
      const again = JSON.parse(await ok(['key', 'import', 'moved', '--file', file, '--data-dir', E, '--json'])) as { added: string[]; unchanged: string[] };
      expect(again.added).to.deep.equal([]);
      expect(again.unchanged).to.have.length(2);
      const listed = JSON.parse(await ok(['key', 'list', '--org', 'moved', '--data-dir', E, '--json'])) as ListedKey[];
      expect(listed.map((k) => k.role).sort()).to.deep.equal(['admin', 'admin', 'writer']);
      const server = await startTestServer({ dataDir: E });
      try {
        expect(await listStatus(server, writer)).to.equal(200);
      } finally {
        await server.close();
      }
    });

    it('refuses, changing nothing: another organization\'s file, a file that is no export, a missing file, a missing organization', async () => {
      const file = join(tmp.dir, 'acme-keys.json');
      await ok(['key', 'export', 'acme', '--out', file, '--data-dir', D]);
      await ok(['org', 'create', 'elsewhere', '--data-dir', D]);
      const before = await keyFilesText(nodeFs.readFile, D);
      await fails(['key', 'import', 'elsewhere', '--file', file, '--data-dir', D], /keys of organization "acme", not "elsewhere"/);
      const junk = join(tmp.dir, 'junk.json');
      await nodeFs.writeFile(junk, '{"keys": []}');
      await fails(['key', 'import', 'acme', '--file', junk, '--data-dir', D], /Not a key export/);
      await fails(['key', 'import', 'acme', '--file', join(tmp.dir, 'nope.json'), '--data-dir', D], /nope\.json/);
      await fails(['key', 'import', 'acme', '--data-dir', D], /--file/);
      await fails(['key', 'export', 'nobody', '--data-dir', D], /nobody/);
      expect(await keyFilesText(nodeFs.readFile, D)).to.equal(before);
    });
  });

  describe('with a server running on the same data dir', () => {
    let server: TestServer;

    before(async () => {
      server = await startTestServer({ dataDir: D });
      expect(server.adminKey).to.equal(''); // the data dir has organizations: no "default" org is made
    });

    after(async () => {
      await server.close();
    });

    it('accepts the key printed by org create', async () => {
      expect(await listStatus(server, onlyKey(acmeKey.stdout))).to.equal(200);
    });

    it('accepts a key created by the CLI while it runs, within one second', async () => {
      expect(await listStatus(server, onlyKey(acmeKey.stdout))).to.equal(200); // the server has read the key file
      const key = onlyKey(await ok(['key', 'create', '--org', 'acme', '--role', 'reader', '--data-dir', D]));
      const took = await within(1000, async () => (await listStatus(server, key)) === 200);
      expect(took, 'the new key was not accepted within 1 s').to.be.at.least(0);
      expect(took).to.be.below(1000);
    });

    it('refuses a key once the CLI revokes it, and keeps the others', async () => {
      const created = JSON.parse(await ok(['key', 'create', '--org', 'acme', '--role', 'writer', '--data-dir', D, '--json'])) as Record<string, string>;
      const key = created.key as string;
      expect(await within(1000, async () => (await listStatus(server, key)) === 200)).to.be.at.least(0);
      const revoked = await ok(['key', 'revoke', created.keyId as string, '--data-dir', D]);
      expect(revoked).to.include(created.keyId as string);
      const took = await within(1000, async () => (await listStatus(server, key)) === 401);
      expect(took, 'the revoked key was still accepted after 1 s').to.be.at.least(0);
      const refused = await api(`${server.url}/api/v1/knowledge`, { key });
      expect(refused.status).to.equal(401);
      expect(refused.body).to.deep.equal({ success: false, error: 'Invalid API key' });
      expect(await listStatus(server, onlyKey(acmeKey.stdout))).to.equal(200);
      const listed = JSON.parse(await ok(['key', 'list', '--org', 'acme', '--data-dir', D, '--json'])) as ListedKey[];
      expect(listed.find((k) => k.id === created.keyId)?.revokedAt).to.be.a('string');
      expect(await ok(['key', 'list', '--org', 'acme', '--data-dir', D])).to.match(new RegExp(`${created.keyId as string}.*revoked`));
    });

    it('key revoke --json reports the revocation; an unknown key id fails', async () => {
      const created = JSON.parse(await ok(['key', 'create', '--org', 'acme', '--role', 'reader', '--data-dir', D, '--json'])) as Record<string, string>;
      const out = JSON.parse(await ok(['key', 'revoke', created.keyId as string, '--data-dir', D, '--json'])) as Record<string, string>;
      expect(out.keyId).to.equal(created.keyId);
      expect(Number.isNaN(Date.parse(out.revokedAt as string))).to.equal(false);
      await fails(['key', 'revoke', 'key_0000000000000000', '--data-dir', D], /key_0000000000000000/);
    });

    it('verify works while the server runs and after it has written', async () => {
      const put = await api(`${server.url}/api/v1/knowledge/items/docs/guide.md`, {
        method: 'PUT',
        key: onlyKey(acmeKey.stdout),
        body: { content: '# Guide\n' },
      });
      expect(put.status).to.equal(200);
      const run = await cli(['verify', '--org', 'acme', '--data-dir', D]);
      expect(run.code, run.stderr).to.equal(0);
      expect(run.stdout).to.match(/^acme: OK \(1 items, 0 in trash, head [0-9a-f]{12}\)$/m);
      expect(run.stderr).to.include('A server holds the data directory: its search index is not checked.');
    });

    it('search refuses while the server holds the index, and points at its API', async () => {
      await fails(['search', 'guide', '--org', 'acme', '--data-dir', D], /a server holds the data directory and its search index; search through it: GET \/api\/v1\/knowledge\/search/);
    });
  });

  describe('search (no server running)', () => {
    before(async () => {
      const server = await startTestServer({ dataDir: D });
      try {
        const key = onlyKey(acmeKey.stdout);
        for (const [path, content, requiredReadPermission] of [
          ['recipes/soup.md', 'Leek and potato soup', 'inherit'],
          ['recipes/salad.md', 'Potato salad with dill', 'inherit'],
          ['board/budget.md', 'Potato budget for the canteen', 'knowledge:admin'],
        ]) {
          const res = await api(`${server.url}/api/v1/knowledge/items/${path}`, { method: 'PUT', key, body: { content, requiredReadPermission } });
          expect(res.status, JSON.stringify(res.body)).to.be.oneOf([200, 201]);
        }
      } finally {
        await server.close();
      }
    });

    it('prints path, score and snippet per line, best first, as admin by default', async () => {
      const lines = (await ok(['search', 'potato', '--org', 'acme', '--data-dir', D])).trimEnd().split('\n');
      expect(lines.map((l) => l.split('\t')[0]).sort()).to.deep.equal(['board/budget.md', 'recipes/salad.md', 'recipes/soup.md']);
      for (const line of lines) expect(line).to.match(/^\S+\t\d+\.\d{3}\t.*«[Pp]otato».*$/);
    });

    it('--role reader sees what a reader may read; --prefix keeps to a folder; --json', async () => {
      const asReader = JSON.parse(await ok(['search', 'potato', '--org', 'acme', '--role', 'reader', '--data-dir', D, '--json'])) as Array<{ path: string; snippet: string }>;
      expect(asReader.map((r) => r.path).sort()).to.deep.equal(['recipes/salad.md', 'recipes/soup.md']);
      const inBoard = JSON.parse(await ok(['search', 'potato', '--org', 'acme', '--prefix', 'board/', '--data-dir', D, '--json'])) as Array<{ path: string }>;
      expect(inBoard.map((r) => r.path)).to.deep.equal(['board/budget.md']);
      expect(await ok(['search', 'turnip', '--org', 'acme', '--data-dir', D])).to.equal('No items match.\n');
    });

    it('refuses bad input: a bad query with the API message, a bad role or limit as a usage error, an unknown organization', async () => {
      await fails(['search', '"potato', '--org', 'acme', '--data-dir', D], /unclosed quote/);
      // Usage errors (exit 2): commander names the allowed values.
      expect((await fails(['search', 'potato', '--org', 'acme', '--role', 'owner', '--data-dir', D], /Allowed choices are reader, writer, admin/)).code).to.equal(2);
      expect((await fails(['search', 'potato', '--org', 'acme', '--limit', '0', '--data-dir', D], /must be an integer from 1 to 100/)).code).to.equal(2);
      await fails(['search', 'potato', '--org', 'nobody', '--data-dir', D], /nobody/);
    });

    it('verify checks the search index when no server runs', async () => {
      const out = await ok(['verify', '--org', 'acme', '--data-dir', D]);
      expect(out).to.match(/^acme: OK \(\d+ items, 0 in trash, head [0-9a-f]{12}, search index in step\)$/m);
    });
  });

  describe('key usage', () => {
    it('shows a last-used time once a server has used the key and stopped', async () => {
      const created = JSON.parse(await ok(['key', 'create', '--org', 'globex', '--role', 'reader', '--data-dir', D, '--json'])) as Record<string, string>;
      const server = await startTestServer({ dataDir: D });
      try {
        expect(await listStatus(server, created.key as string)).to.equal(200);
      } finally {
        await server.close();
      }
      const listed = JSON.parse(await ok(['key', 'list', '--org', 'globex', '--data-dir', D, '--json'])) as ListedKey[];
      const used = listed.find((k) => k.id === created.keyId);
      expect(used?.lastUsedAt).to.be.a('string');
      expect(Date.now() - Date.parse(used?.lastUsedAt as string)).to.be.below(60_000);
    });
  });

  describe('verify', () => {
    it('exits 0 and prints OK for every organization of a healthy store', async () => {
      const out = await ok(['verify', '--data-dir', D]);
      expect(out).to.match(/^acme: OK /m);
      expect(out).to.match(/^globex: OK /m);
      expect(out).not.to.match(/problem/);
    });

    it('--json gives one report per organization, without problems', async () => {
      const reports = JSON.parse(await ok(['verify', '--data-dir', D, '--json'])) as Array<{ orgId: string; problems: string[]; head: string }>;
      expect(reports.map((r) => r.orgId)).to.include.members(['acme', 'globex']);
      for (const r of reports) {
        expect(r.problems).to.deep.equal([]);
        expect(r.head).to.match(/^[0-9a-f]{40}$/);
      }
    });

    it('refuses a missing organization', async () => {
      await fails(['verify', '--org', 'missing', '--data-dir', D], /missing/);
    });
  });

  describe('verify on a damaged repository', () => {
    let dir: string;
    let gitdir: string;

    /** A fresh data dir with org "acme" and two items written through the domain. */
    beforeEach(async () => {
      dir = join(tmp.dir, `damaged-${Date.now()}-${Math.random().toString(16).slice(2)}`);
      onlyKey(await ok(['org', 'create', 'acme', '--data-dir', dir]));
      const orgs = new OrgStore({ git: hostGit, fs, dataDir: dir, logger: silentLogger });
      const repo = await orgs.get('acme');
      if (!repo) throw new Error('org not found');
      const actor = { keyId: 'key_0000000000000001', keyName: 'test', orgId: 'acme', role: 'admin' as const };
      await putItem({ repo, actor, path: 'docs/a.md', content: 'alpha\n', maxContentBytes: 1 << 20 });
      await putItem({ repo, actor, path: 'docs/b.md', content: 'beta\n', maxContentBytes: 1 << 20 });
      await orgs.closeAll();
      gitdir = orgs.gitdirOf('acme');
      expect(await ok(['verify', '--data-dir', dir])).to.match(/^acme: OK \(2 items/m);
    });

    it('exits non-zero when a pack holding objects the head tree needs is gone', async () => {
      const blob = (await git(['rev-parse', 'main:docs/a.md'], { gitdir })).trim();
      // Each write landed as its own pack: remove the one that holds the blob.
      const packDir = join(gitdir, 'objects/pack');
      let removed = 0;
      for (const idx of (await nodeFs.readdir(packDir)).filter((f) => f.endsWith('.idx'))) {
        const listed = await git(['verify-pack', '-v', join(packDir, idx)], { gitdir });
        if (!listed.includes(blob)) continue;
        await nodeFs.rm(join(packDir, idx));
        await nodeFs.rm(join(packDir, idx.replace(/\.idx$/, '.pack')));
        removed++;
      }
      expect(removed).to.equal(1);
      const run = await cli(['verify', '--data-dir', dir]);
      expect(run.code).to.not.equal(0);
      expect(`${run.stdout}${run.stderr}`).to.match(/problem|fsck|missing/i);
      expect(run.stdout).not.to.match(/^acme: OK/m);
    });

    it('exits non-zero when a commit made with C git leaves a file without a record and a record without its file', async () => {
      const index = join(dir, 'scratch-index');
      const strayFile = join(dir, 'stray.txt');
      await nodeFs.writeFile(strayFile, 'not an item\n');
      // update-index --force-remove wants a work tree; an empty one will do (nothing is read from it).
      const workTree = join(dir, 'scratch-worktree');
      await nodeFs.mkdir(workTree);
      const env = { GIT_INDEX_FILE: index, GIT_WORK_TREE: workTree };
      const old = (await gitWithEnv(['rev-parse', 'main'], gitdir, env)).trim();
      await gitWithEnv(['read-tree', 'main'], gitdir, env);
      const blob = (await gitWithEnv(['hash-object', '-w', strayFile], gitdir, env)).trim();
      await gitWithEnv(['update-index', '--add', '--cacheinfo', `100644,${blob},stray.md`], gitdir, env);
      await gitWithEnv(['update-index', '--force-remove', 'docs/b.md'], gitdir, env);
      const tree = (await gitWithEnv(['write-tree'], gitdir, env)).trim();
      const commit = (await gitWithEnv(['commit-tree', tree, '-p', old, '-m', 'Edit behind the store'], gitdir, env)).trim();
      await gitWithEnv(['update-ref', 'refs/heads/main', commit, old], gitdir, env);
      await git(['fsck', '--strict', '--no-progress'], { gitdir }); // git itself sees nothing wrong

      const run = await cli(['verify', '--org', 'acme', '--data-dir', dir]);
      expect(run.code).to.not.equal(0);
      expect(run.stdout).to.include('stray.md: file has no item record');
      expect(run.stdout).to.include('docs/b.md: record has no content at docs/b.md');
      const json = await cli(['verify', '--org', 'acme', '--data-dir', dir, '--json']);
      expect(json.code).to.not.equal(0);
      const [report] = JSON.parse(json.stdout) as Array<{ problems: string[] }>;
      expect(report?.problems).to.have.length(2);
    });

    it('exits non-zero when a record names another path', async () => {
      const index = join(dir, 'scratch-index');
      const record = JSON.parse(await git(['cat-file', '-p', 'main:.knowledge/items/docs/a.md'], { gitdir })) as Record<string, unknown>;
      await commitBehindTheStore(gitdir, index, 'Bad record', {
        '.knowledge/items/docs/a.md': `${JSON.stringify({ ...record, path: 'docs/elsewhere.md' }, null, 2)}\n`,
      });

      const run = await cli(['verify', '--data-dir', dir]);
      expect(run.code).to.not.equal(0);
      expect(run.stdout).to.include('record names path "docs/elsewhere.md"');
    });

    it('exits non-zero when an item sits at a path a Windows clone cannot hold (added with C git)', async () => {
      const record = JSON.parse(await git(['cat-file', '-p', 'main:.knowledge/items/docs/a.md'], { gitdir })) as Record<string, unknown>;
      await commitBehindTheStore(gitdir, join(dir, 'scratch-index'), 'Device name', {
        '.knowledge/items/aux/con.md': `${JSON.stringify({ ...record, id: randomUUID(), path: 'aux/con.md' }, null, 2)}\n`,
        'aux/con.md': 'alpha\n',
      });

      const run = await cli(['verify', '--data-dir', dir]);
      expect(run.code).to.not.equal(0);
      expect(run.stdout).to.include('aux/con.md: Invalid path: no segment may be a Windows device name');
    });
  });

  describe('errors', () => {
    it('an unknown command or option: non-zero, stderr only', async () => {
      await fails(['frobnicate'], /unknown command/);
      await fails(['key', 'list', '--org', 'acme', '--data-dir', D, '--bogus'], /unknown option/);
    });

    it('serve hands --cache-mb, --search-cache-mb and --max-open-orgs to the configuration: one out of range is refused, with its setting named', async () => {
      const fresh = join(tmp.dir, 'never-made');
      await fails(['serve', '--port', '0', '--data-dir', fresh, '--cache-mb', '7'], /KNOWLEDGE_CACHE_MB must be an integer from 8 to 1048576 \(got "7"\)/);
      await fails(['serve', '--port', '0', '--data-dir', fresh, '--search-cache-mb', '1025'], /KNOWLEDGE_SEARCH_CACHE_MB must be an integer from 1 to 1024 \(got "1025"\)/);
      await fails(['serve', '--port', '0', '--data-dir', fresh, '--max-open-orgs', '-1'], /KNOWLEDGE_MAX_OPEN_ORGS must be an integer from 0 to 10000000 \(got "-1"\)/);
      // Refused before anything is made: no data directory, so no admin key printed and lost.
      expect(await nodeFs.access(fresh).then(() => true, () => false)).to.equal(false);
    });

    it('--version prints the package version and exits 0', async () => {
      const { version } = JSON.parse(await nodeFs.readFile(join(ROOT, 'package.json'), 'utf8')) as { version: string };
      expect(await ok(['--version'])).to.equal(`${version}\n`);
      expect(await ok(['-V'])).to.equal(`${version}\n`);
    });

    it('exit code 2 for usage errors (commander\'s), 1 for failures', async () => {
      const usage: string[][] = [
        ['frobnicate'],
        ['key', 'list', '--org', 'acme', '--data-dir', D, '--bogus'],
        ['org', 'create', '--data-dir', D], // missing argument
        ['key', 'list', '--data-dir', D], // missing required option
        ['key', 'list', '--data-dir', D, '--org'], // option without its value
        ['org'], // a group without its command
      ];
      for (const args of usage) expect((await fails(args)).code, args.join(' ')).to.equal(2);
      expect((await fails(['key', 'list', '--org', 'nope', '--data-dir', D], /nope/)).code).to.equal(1);
      expect((await fails(['org', 'create', 'acme', '--data-dir', D], /already exists/)).code).to.equal(1);
    });

    it('with --json, errors are one JSON object on stderr, for usage errors and failures alike', async () => {
      const cases: Array<{ args: string[]; exit: number; code: string; error: RegExp }> = [
        { args: ['key', 'list', '--org', 'acme', '--data-dir', D, '--json', '--bogus'], exit: 2, code: 'USAGE_ERROR', error: /^unknown option '--bogus'$/ },
        { args: ['org', 'create', '--json', '--data-dir', D], exit: 2, code: 'USAGE_ERROR', error: /missing required argument 'orgId'/ },
        { args: ['search', 'x', '--org', 'acme', '--role', 'bogus', '--data-dir', D, '--json'], exit: 2, code: 'USAGE_ERROR', error: /--role <role>' argument 'bogus' is invalid/ },
        { args: ['search', 'x', '--org', 'acme', '--limit', '0', '--data-dir', D, '--json'], exit: 2, code: 'USAGE_ERROR', error: /must be an integer from 1 to 100/ },
        { args: ['key', 'list', '--org', 'nope', '--data-dir', D, '--json'], exit: 1, code: 'ORG_NOT_FOUND', error: /nope/ },
        { args: ['org', 'create', 'acme', '--data-dir', D, '--json'], exit: 1, code: 'ORG_EXISTS', error: /already exists/ },
      ];
      for (const c of cases) {
        const run = await fails(c.args);
        expect(run.code, c.args.join(' ')).to.equal(c.exit);
        const lines = run.stderr.trimEnd().split('\n');
        expect(lines, run.stderr).to.have.length(1);
        const body = JSON.parse(lines[0] ?? '') as { error: string; code: string };
        expect(body.code, c.args.join(' ')).to.equal(c.code);
        expect(body.error).to.match(c.error);
      }
    });

    it('a corrupt key file: non-zero, a message on stderr, nothing on stdout', async () => {
      const dir = join(tmp.dir, 'corrupt-keys');
      onlyKey(await ok(['org', 'create', 'acme', '--data-dir', dir]));
      await nodeFs.writeFile(join(dir, 'keys.json'), '{ not json');
      await fails(['key', 'list', '--org', 'acme', '--data-dir', dir], /keys\.json/);
      await fails(['key', 'create', '--org', 'acme', '--role', 'reader', '--data-dir', dir], /keys\.json/);
    });
  });
});

/** A commit on main made with C git plumbing, as an admin might behind the store's back: `files` (path -> text) added or replaced. */
async function commitBehindTheStore(gitdir: string, indexFile: string, message: string, files: Record<string, string>): Promise<void> {
  const env = { GIT_INDEX_FILE: indexFile };
  const old = (await gitWithEnv(['rev-parse', 'main'], gitdir, env)).trim();
  await gitWithEnv(['read-tree', 'main'], gitdir, env);
  for (const [path, text] of Object.entries(files)) {
    await nodeFs.writeFile(`${indexFile}.blob`, text);
    const blob = (await gitWithEnv(['hash-object', '-w', `${indexFile}.blob`], gitdir, env)).trim();
    await gitWithEnv(['update-index', '--add', '--cacheinfo', `100644,${blob},${path}`], gitdir, env);
  }
  const tree = (await gitWithEnv(['write-tree'], gitdir, env)).trim();
  const commit = (await gitWithEnv(['commit-tree', tree, '-p', old, '-m', message], gitdir, env)).trim();
  await gitWithEnv(['update-ref', 'refs/heads/main', commit, old], gitdir, env);
}

/** C git with extra environment (an index file for plumbing on a bare repository). */
function gitWithEnv(args: string[], gitdir: string, env: Record<string, string>): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile('git', ['--git-dir', gitdir, ...args], { env: { ...process.env, ...env } }, (err, stdout, stderr) => {
      if (err) reject(new Error(`git ${args.join(' ')} failed: ${stderr || err.message}`));
      else resolve(stdout);
    });
  });
}
