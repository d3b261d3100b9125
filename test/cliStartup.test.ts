import { execFile } from 'node:child_process';
import { promises as nodeFs } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { expect } from 'chai';
import { cli, closedPort, requireBuilt, type Run } from './support/cliRun.js';
import { tmpDir } from './support/tmp.js';

/**
 * What a command loads before it runs (README, The command line: "What a command costs to start"). The store's
 * modules (git, SQLite, the HTTP app and their packages) took ~1.7 s of the 2 s every `knowledge-store` call
 * spent starting; only the commands that use them load them now. Checked by the modules a command loads (a load
 * hook, test/support/moduleTrace.mjs), not by its time, which a loaded machine would make noise of.
 */
const HEAVY = ['koa', '@koa/router', 'isomorphic-git', 'node-sqlite3-wasm', 'ajv', 'unpdf', 'mammoth', '@modelcontextprotocol/sdk', 'prom-client', 'file-type'];
const SERVER_MODULES = ['dist/src/app/server.js', 'dist/src/app/store.js', 'dist/src/http/app.js'];

async function modulesLoadedBy(args: string[], env: Record<string, string> = {}): Promise<Run & { urls: string[] }> {
  const { dir, cleanup } = await tmpDir('cli-startup-');
  try {
    const out = join(dir, 'modules.txt');
    const run = await cli(args, { env: { ...env, MODULE_TRACE_OUT: out }, nodeArgs: ['--import', './test/support/moduleTrace.mjs'] });
    return { ...run, urls: (await nodeFs.readFile(out, 'utf8')).split('\n').filter(Boolean) };
  } finally {
    await cleanup();
  }
}

const packagesOf = (urls: string[]): Set<string> =>
  new Set(urls.flatMap((u) => /\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(u)?.[1] ?? []));

describe('cli start-up: a command loads only what it uses', function () {
  this.timeout(60_000);
  before(requireBuilt);

  it('the item, folder and webhook commands (HTTP clients) load no server, store or extraction module', async () => {
    // Nothing listens at the URL: each command runs as far as its first request, which fails.
    const url = `http://127.0.0.1:${await closedPort()}`;
    const http = [['item', 'ls'], ['item', 'upload', 'a.md', '--file', 'README.md'], ['item', 'watch', '--count', '1'], ['folder', 'ls'], ['webhook', 'ls']];
    for (const args of [...http.map((a) => [...a, '--url', url]), ['--help']]) {
      const run = await modulesLoadedBy(args, { KNOWLEDGE_KEY: 'ks_x' });
      expect(run.urls.length, `${args.join(' ')}: the trace saw its modules (${run.stderr})`).to.be.greaterThan(20);
      expect(run.urls.some((u) => u.endsWith('/dist/src/cli/program.js')), 'the program itself was traced').to.equal(true);
      const packages = packagesOf(run.urls);
      expect(HEAVY.filter((p) => packages.has(p)), `${args.join(' ')} loaded`).to.deep.equal([]);
      expect(SERVER_MODULES.filter((m) => run.urls.some((u) => u.endsWith(`/${m}`))), `${args.join(' ')} loaded`).to.deep.equal([]);
    }
  });

  it('an admin command loads the store when it runs (the trace would see a static import of it as well)', async () => {
    const { dir, cleanup } = await tmpDir('cli-startup-data-');
    try {
      const run = await modulesLoadedBy(['org', 'list', '--data-dir', dir]);
      expect(run.code, run.stderr).to.equal(0);
      expect(run.urls.some((u) => u.endsWith('/dist/src/app/store.js'))).to.equal(true);
      // The store's SQLite binding is in its static graph (isomorphic-git no longer is: only a new organization loads it).
      expect(packagesOf(run.urls).has('node-sqlite3-wasm')).to.equal(true);
    } finally {
      await cleanup();
    }
  });

  it('the server itself leaves the MCP SDK and isomorphic-git to their first use (or to the warm-up after it listens)', async () => {
    const { dir, cleanup } = await tmpDir('cli-startup-server-');
    try {
      // Only the modules: what `serve` loads before it can listen. Then the warm-up (http/warmUp.ts), run after it.
      const loadedBy = async (script: string): Promise<string[]> => {
        const out = join(dir, `modules-${Math.random().toString(36).slice(2)}.txt`);
        await new Promise<void>((resolve, reject) =>
          execFile(process.execPath, ['--import', './test/support/moduleTrace.mjs', '--input-type=module', '-e', script], { env: { ...process.env, MODULE_TRACE_OUT: out } }, (err, _stdout, stderr) =>
            err ? reject(new Error(`${err.message}\n${stderr}`)) : resolve(),
          ),
        );
        return (await nodeFs.readFile(out, 'utf8')).split('\n').filter(Boolean);
      };
      const dist = (file: string): string => pathToFileURL(join(process.cwd(), 'dist/src', file)).href;
      const atStart = packagesOf(await loadedBy(`await import(${JSON.stringify(dist('app/server.js'))});`));
      expect(atStart.has('koa'), 'the trace sees the server\'s packages').to.equal(true);
      expect(['@modelcontextprotocol/sdk', 'zod', 'isomorphic-git'].filter((p) => atStart.has(p)), 'loaded before listening').to.deep.equal([]);
      const warmed = packagesOf(await loadedBy(`const { warmUp } = await import(${JSON.stringify(dist('http/warmUp.js'))}); await warmUp();`));
      expect(warmed.has('@modelcontextprotocol/sdk'), 'the warm-up loads the SDK').to.equal(true);
    } finally {
      await cleanup();
    }
  });
});
