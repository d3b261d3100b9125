import { Command, Option } from 'commander';
import { DEFAULTS } from '../app/config.js';
import { createApiClient, type ApiClient } from './apiClient.js';
import { UsageError } from './errors.js';
import { jsonOption, type Printing } from './output.js';

/** Where an `item` command sends its requests, and how it prints: the options every one of them takes. */
export interface Target extends Printing {
  url: string;
  key?: string;
}

const DEFAULT_URL = `http://${DEFAULTS.host}:${DEFAULTS.port}`;

/** The options every item command takes; commander reads the environment variables itself. */
export function withTarget(cmd: Command): Command {
  return cmd
    .addOption(new Option('--url <url>', 'the server').env('KNOWLEDGE_URL').default(DEFAULT_URL))
    .addOption(new Option('--key <key>', 'an API key (prefer the variable: a flag shows in the process list)').env('KNOWLEDGE_KEY'))
    .addOption(jsonOption());
}

export function client(opts: Target): ApiClient {
  if (!opts.key) throw new UsageError('no API key: set KNOWLEDGE_KEY (or pass --key)');
  return createApiClient({ url: opts.url, key: opts.key });
}

/** All of stdin, as text (the content of `item put` without --file, the operations of `item commit`). */
export async function readStdin(): Promise<string> {
  return (await readStdinBytes()).toString('utf8');
}

/** All of stdin, as bytes (`item upload` without --file). */
export async function readStdinBytes(): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Buffer));
  return Buffer.concat(chunks);
}
