import { readFile } from 'node:fs/promises';
import { Command, Option, type OutputConfiguration } from 'commander';
import { loadConfig, type ConfigOverrides } from '../app/config.js';
import type { Store } from '../app/store.js';
import { isKnowledgeError } from '../common/errors.js';
import { packageVersion } from '../common/packageInfo.js';
import { createLogger } from '../common/log.js';
import { withoutYoungGrowth } from '../common/youngGeneration.js';
import { OrgNotFound } from '../domain/errors.js';
import { STORE_RULES } from '../domain/integrity.js';
import { importOrganization } from '../domain/orgImport.js';
import { readKeyExport } from '../domain/keyTransfer.js';
import { createOrganization, validateOrgId } from '../domain/orgs.js';
import { ROLES, type Role } from '../domain/permissions.js';
import { DEFAULT_SEARCH_LIMIT, MAX_SEARCH_LIMIT, searchItems } from '../domain/search.js';
import { addFolderCommands } from './folderCommands.js';
import { addItemCommands } from './itemCommands.js';
import { addKeyCommands } from './keyCommands.js';
import { dataDirOption, storeModule, stores, type Common } from './localStore.js';
import { intIn, jsonOption, print, searchLines } from './output.js';
import { createProgress, silentProgress, type Progress } from './progress.js';
import { addWebhookCommands } from './webhookCommands.js';

/**
 * `knowledge-store`: the server and the admin commands (see README, Configuration). Results
 * go to stdout (`--json` for machines), errors to stderr, exit 0 on success.
 * The commands share the data directory with a running server safely: keys
 * change under the key file's lock, organizations appear by atomic rename.
 */
/**
 * The data directory held by this command alone, with the search index open (building it if need
 * be, its progress shown by `progress`); null while a server holds it (the index has one writer: the server).
 */
async function ownedStores(opts: Common, progress: Progress): Promise<Store | null> {
  const config = loadConfig(process.env, { dataDir: opts.dataDir, logLevel: 'warn' });
  const logger = createLogger({ level: 'info', write: (line) => showLogLine(line, progress) });
  try {
    const { openExclusiveStore } = await storeModule();
    return await openExclusiveStore({ dataDir: config.dataDir, logger });
  } catch (err) {
    if (isKnowledgeError(err) && err.code === 'DATA_DIR_IN_USE') return null;
    throw err;
  }
}

/**
 * Of the store's log, warnings and the index's build progress (a first search of a large organization
 * takes a while): the build as a bar on a terminal, every line as it is elsewhere.
 */
function showLogLine(line: string, progress: Progress): void {
  if (!/"level":"(warn|error)"|"msg":"search index/.test(line)) return;
  const text = line.trimEnd();
  const entry = JSON.parse(text) as { msg?: unknown; org?: unknown; done?: unknown; items?: unknown; of?: unknown };
  if (entry.msg === 'search index: building' && typeof entry.of === 'number') {
    const total = typeof entry.items === 'number' ? entry.items : entry.of;
    const done = typeof entry.done === 'number' ? entry.done : 0;
    progress.update({ label: `Indexing ${String(entry.org)}`, done, total, line: text });
    if (done >= total) progress.done();
  } else {
    progress.log(text);
  }
}

/**
 * The command, ready to parse. It never exits the process: a usage error (and --help, --version) is
 * thrown as a CommanderError, which main.ts turns into exit code 2 (0 for help and version).
 * `output` replaces commander's writers (main.ts silences them under --json, to print JSON instead).
 * Set on the root before the subcommands are added, so that they inherit it.
 */
export function buildProgram(options: { output?: OutputConfiguration } = {}): Command {
  const program = new Command('knowledge-store')
    .description('A git-backed knowledge store: one bare git repository per organization.')
    .version(packageVersion(), '-V, --version', 'print the version')
    .showHelpAfterError()
    .exitOverride();
  if (options.output) program.configureOutput(options.output);

  program
    .command('serve')
    .description('serve the API (what `npm start` does)')
    .option('--port <n>', 'port (default: $PORT or 3000)')
    .option('--host <h>', 'address to listen on (default: $HOST or 127.0.0.1)')
    .addOption(dataDirOption())
    .option('--max-content-bytes <n>', 'largest item content in bytes (default: $KNOWLEDGE_MAX_CONTENT_BYTES or 1048576)')
    .option('--max-file-bytes <n>', 'largest file item upload in bytes (default: $KNOWLEDGE_MAX_FILE_BYTES or 26214400)')
    .option('--extract-timeout-ms <n>', 'stop a file\'s text extraction after this long (default: $KNOWLEDGE_EXTRACT_TIMEOUT_MS or 30000)')
    .option('--extract-memory-mb <n>', 'heap one text extraction may use, in MiB (default: $KNOWLEDGE_EXTRACT_MEMORY_MB or 256)')
    .option('--log-level <level>', 'error, warn, info or debug (default: $LOG_LEVEL or info)')
    .option('--auto-repack-objects <n>', 'repack an organization after this many objects written (or 200 packs), 0 = never (default: $KNOWLEDGE_AUTO_REPACK_OBJECTS or 10000)')
    .option('--max-open-orgs <n>', 'close the least recently used idle organizations beyond this many open, 0 = keep all open (default: $KNOWLEDGE_MAX_OPEN_ORGS or 1000)')
    .option('--cache-mb <n>', 'MiB the caches of answers, contents and pack reads may hold, all organizations together (default: $KNOWLEDGE_CACHE_MB or 104)')
    .option('--rate-limit-per-key <n>', 'API requests per minute per key, 0 = no limit (default: $KNOWLEDGE_RATE_LIMIT_PER_KEY or 6000)')
    .option('--rate-limit-per-key-burst <n>', 'requests a key may send at once (default: $KNOWLEDGE_RATE_LIMIT_PER_KEY_BURST, else 6000, or the per-minute rate when that is changed)')
    .option('--rate-limit-auth-failures <n>', 'failed authentications per minute per client address, 0 = no limit (default: $KNOWLEDGE_RATE_LIMIT_AUTH_FAILURES or 20)')
    .option('--search <on|off>', 'keep a full-text index and answer GET /search (default: $KNOWLEDGE_SEARCH or on)')
    .option('--search-cache-mb <n>', 'MiB SQLite\'s page caches of the search indexes may hold, all organizations together, 1 to 1024 (default: $KNOWLEDGE_SEARCH_CACHE_MB or 256)')
    .option('--allowed-origins <list>', 'browser origins besides the server\'s own allowed to call POST /mcp, comma-separated (default: $KNOWLEDGE_ALLOWED_ORIGINS or none)')
    .option('--rate-limit-auth-failures-burst <n>', 'failures an address may have in a row (default: $KNOWLEDGE_RATE_LIMIT_AUTH_FAILURES_BURST, else 40, or the per-minute rate when that is changed)')
    .option('--metrics <off|local|on|token:secret>', 'who may read GET /metrics: nobody, this machine, anyone, or Bearer <secret> (default: $KNOWLEDGE_METRICS or local; a token is better kept in the environment than on the command line)')
    .option('--trust-proxy <off|on|n>', 'take the client address from X-Forwarded-For, set by this many reverse proxies (on = 1) (default: $KNOWLEDGE_TRUST_PROXY or off)')
    .action(async (opts: ConfigOverrides) => {
      const config = loadConfig(process.env, opts);
      // Buffered: one write per hundred access lines, not per line (README, Logs: what a kill -9 can lose).
      const logger = createLogger({ level: config.logLevel, buffer: true });
      // The server's modules are loaded by the one command that serves, not by every command at its start.
      const { startServer } = await withoutYoungGrowth(() => import('../app/server.js'));
      const server = await startServer({ config, logger });
      logger.flush(); // the start's lines (a recovery hint, say) come out before the line that says it listens
      process.stdout.write(`Knowledge store listening on ${server.url} (data: ${config.dataDir})\n`);
      const stop = (signal: string): void => {
        logger.info('shutting down', { signal });
        server.close().then(
          () => {
            logger.flush(); // 'exit' would too: said here, where the stop is
            process.exit(0);
          },
          (err: unknown) => {
            logger.error('shutdown failed', { error: String(err) });
            process.exit(1);
          },
        );
      };
      process.once('SIGINT', () => stop('SIGINT'));
      process.once('SIGTERM', () => stop('SIGTERM'));
    });

  const org = program.command('org').description('organizations');
  org
    .command('create <orgId>')
    .description('create an organization and print its first admin key')
    .addOption(dataDirOption())
    .addOption(jsonOption())
    .action(async (orgId: string, opts: Common) => {
      const { orgs, keys } = await stores(opts);
      const created = await createOrganization({ orgs, keys, orgId });
      print(opts, created.secret, { orgId: created.orgId, keyId: created.keyId, key: created.secret });
    });

  org
    .command('list')
    .description('list the organizations, with how many items each holds (live, and in the trash)')
    .addOption(dataDirOption())
    .addOption(jsonOption())
    .action(async (opts: Common) => {
      const { orgs } = await stores(opts);
      const list = [];
      for (const orgId of await orgs.list()) list.push({ orgId, ...(await orgs.countItems(orgId)) });
      const rows = list.map((o) => [o.orgId, o.items, o.trashed].join('\t'));
      print(opts, list.length ? ['ID\tITEMS\tIN TRASH', ...rows].join('\n') : 'No organizations.', list);
    });

  org
    .command('import <orgId>')
    .description('create an organization from a clone of another one (backup restore, failover); prints its new admin key, or takes its keys from --keys')
    .requiredOption('--from <source>', 'git URL or path of the repository (e.g. a backup clone or a mirror)')
    .option('--keys <file>', 'the organization\'s keys from `key export`: they keep working here, and no new admin key is made')
    .addOption(dataDirOption())
    .addOption(jsonOption())
    .action(async (orgId: string, opts: Common & { from: string; keys?: string }) => {
      const { orgs, keys } = await stores(opts);
      // The key file is read and checked before anything is cloned: a wrong file refuses the whole import.
      const keyRecords = opts.keys === undefined ? undefined : readKeyExport(await readFile(opts.keys, 'utf8'), validateOrgId(orgId));
      const progress = createProgress();
      const imported = await importOrganization({ orgs, keys, orgId, source: opts.from, keyRecords, progress: (line) => progress.step(line) }).finally(() =>
        progress.done(),
      );
      progress.log(`Imported ${imported.orgId}: ${imported.items} items, ${imported.trashed} in trash.`);
      const { orgId: id, items, trashed } = imported;
      if ('keys' in imported) {
        const { added, unchanged } = imported.keys;
        print(opts, `Keys: ${added.length} imported, ${unchanged.length} already here; no new admin key.`, { orgId: id, items, trashed, keys: imported.keys });
      } else {
        print(opts, imported.secret, { orgId: id, keyId: imported.keyId, key: imported.secret, items, trashed });
      }
    });

  addKeyCommands(program);

  program
    .command('verify')
    .description('check every repository: git fsck --strict, that records and tree agree, and (when no server runs) the search index')
    .option('--org <orgId>', 'only this organization')
    .addOption(dataDirOption())
    .addOption(jsonOption())
    .action(async (opts: Common & { org?: string }) => {
      // The search index is checked only by its one writer: this command, when no server holds the directory.
      const progress = createProgress();
      const owned = await ownedStores(opts, progress);
      const { orgs } = owned ?? (await stores(opts));
      if (!owned && !opts.json) progress.log('A server holds the data directory: its search index is not checked.');
      const checking = opts.json ? silentProgress : progress;
      try {
        const ids = opts.org ? [validateOrgId(opts.org)] : await orgs.list();
        const reports = [];
        for (const [i, orgId] of ids.entries()) {
          if (!(await orgs.exists(orgId))) throw new OrgNotFound({ orgId });
          checking.update({ label: `Checking ${orgId}`, done: i, total: ids.length, line: `Checking ${orgId}...` });
          reports.push(await orgs.verify(orgId, STORE_RULES));
        }
        progress.done();
        const lines = reports.map((r) =>
          r.problems.length === 0
            ? `${r.orgId}: OK (${r.items} items, ${r.trashed} in trash, head ${r.head?.slice(0, 12) ?? 'none'}${r.search ? ', search index in step' : ''})`
            : [`${r.orgId}: ${r.problems.length} problem(s)`, ...r.problems.map((p) => `  - ${p}`)].join('\n'),
        );
        print(opts, lines.join('\n') || 'No organizations.', reports);
        if (reports.some((r) => r.problems.length > 0)) process.exitCode = 1;
      } finally {
        progress.done();
        await owned?.close();
      }
    });

  program
    .command('search <q>')
    .description('search an organization as a role would (only while no server runs: the server answers GET /api/v1/knowledge/search)')
    .requiredOption('--org <orgId>', 'organization')
    .addOption(new Option('--role <role>', 'search as this role sees').choices(Object.keys(ROLES)).default('admin'))
    .option('--prefix <folder/>', 'only items under this folder')
    .addOption(new Option('--limit <n>', `results, 1 to ${MAX_SEARCH_LIMIT}`).argParser(intIn(1, MAX_SEARCH_LIMIT)).default(DEFAULT_SEARCH_LIMIT))
    .addOption(dataDirOption())
    .addOption(jsonOption())
    .action(async (q: string, opts: Common & { org: string; role: Role; prefix?: string; limit: number }) => {
      const orgId = validateOrgId(opts.org);
      const progress = createProgress();
      const store = await ownedStores(opts, progress);
      progress.done();
      if (!store) {
        throw new Error('a server holds the data directory and its search index; search through it: GET /api/v1/knowledge/search?q=...');
      }
      try {
        const repo = await store.orgs.get(orgId);
        if (!repo) throw new OrgNotFound({ orgId });
        const actor = { keyId: 'cli', keyName: 'cli', orgId, role: opts.role };
        const { results } = await searchItems({ repo, actor, q, prefix: opts.prefix, limit: opts.limit });
        const hits = results.map((r) => ({ path: r.record.path, score: r.score, snippet: r.snippet }));
        print(opts, searchLines(hits), hits);
      } finally {
        await store.close();
      }
    });

  program
    .command('gc')
    .description('repack organizations\' repositories with C git (fold small packs together)')
    .option('--org <orgId>', 'only this organization')
    .option('--full', 'rewrite all packs into one (only when no server uses the data dir)')
    .addOption(dataDirOption())
    .addOption(jsonOption())
    .action(async (opts: Common & { org?: string; full?: boolean }) => {
      const store = await stores(opts);
      const { orgs } = store;
      const ids = opts.org ? [validateOrgId(opts.org)] : await orgs.list();
      // Beside a running server only the geometric repack runs: it deletes only the packs it rolled up, so
      // the server's writes are never disturbed. Rewriting every pack (-a) waits for a stopped server.
      const running = await store.serverPid();
      if (opts.full && running !== null) {
        throw new Error(`--full needs the server${running ? ` (pid ${running})` : ''} stopped; without it, gc is safe while it runs`);
      }
      const reports = [];
      const progress = opts.json ? silentProgress : createProgress();
      try {
        for (const [i, orgId] of ids.entries()) {
          if (!(await orgs.exists(orgId))) throw new OrgNotFound({ orgId });
          if (!opts.json) {
            const counts = await orgs.countObjects(orgId);
            const line = `Repacking ${orgId} (${counts.packs} pack(s), ${counts.loose} loose objects)...`;
            progress.update({ label: `Repacking ${orgId}`, done: i, total: ids.length, line });
          }
          reports.push({ orgId, ...(await orgs.repack(orgId, { full: opts.full === true })) });
        }
      } finally {
        progress.done();
      }
      const mib = (n: number): string => `${(n / 1048576).toFixed(1)} MiB`;
      const lines = reports.map(
        (r) => `${r.orgId}: ${r.before.packs} pack(s), ${r.before.loose} loose -> ${r.after.packs} pack(s), ${r.after.loose} loose; ${mib(r.after.packBytes)}${r.full ? ' (full)' : ''}`,
      );
      print(opts, lines.join('\n') || 'No organizations.', reports);
    });

  addItemCommands(program);
  addFolderCommands(program);
  addWebhookCommands(program);

  return program;
}
