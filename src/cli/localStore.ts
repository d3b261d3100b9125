import { Option } from 'commander';
import { loadConfig } from '../app/config.js';
import { openAdminStore, type Store } from '../app/store.js';
import { createLogger } from '../common/log.js';

/** What every admin command takes: where the data is, and whether to print JSON. */
export interface Common {
  dataDir?: string;
  json?: boolean;
}

/** The data directory's stores, shared safely with a running server (keys under the file's lock). */
export function stores(opts: Common): Store & { serverPid(): Promise<number | null> } {
  const config = loadConfig(process.env, { dataDir: opts.dataDir, logLevel: 'warn' });
  return openAdminStore({ dataDir: config.dataDir, logger: createLogger({ level: 'warn' }) });
}

export const dataDirOption = (): Option => new Option('--data-dir <dir>', 'data directory (default: $KNOWLEDGE_DATA_DIR or ./data)');
