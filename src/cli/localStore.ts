import { Option } from 'commander';
import { loadConfig } from '../app/config.js';
import type { Store } from '../app/store.js';
import { createLogger } from '../common/log.js';
import { withoutYoungGrowth } from '../common/youngGeneration.js';

/** What every admin command takes: where the data is, and whether to print JSON. */
export interface Common {
  dataDir?: string;
  json?: boolean;
}

/**
 * The data directory's stores, shared safely with a running server (keys under the file's lock). The store's
 * modules (git, the search index's SQLite, the HTTP app they share code with) are loaded here, when an admin
 * command runs, not when the program starts: an `item` command, which talks HTTP, never loads them (README,
 * The command line: what a command costs to start). Loaded with the young generation held, as the program's own
 * modules are (main.ts): nearly all of a module's objects are kept, and would grow it for good.
 */
export async function stores(opts: Common): Promise<Store & { serverPid(): Promise<number | null> }> {
  const config = loadConfig(process.env, { dataDir: opts.dataDir, logLevel: 'warn' });
  const { openAdminStore } = await storeModule();
  return openAdminStore({ dataDir: config.dataDir, logger: createLogger({ level: 'warn' }) });
}

/** app/store.js, loaded when a command first opens the data directory (stores(), and program.ts's ownedStores). */
export const storeModule = (): Promise<typeof import('../app/store.js')> => withoutYoungGrowth(() => import('../app/store.js'));

export const dataDirOption = (): Option => new Option('--data-dir <dir>', 'data directory (default: $KNOWLEDGE_DATA_DIR or ./data)');
