import { readFile } from 'node:fs/promises';
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

/**
 * The text of `file` (or of stdin, for none or `-`): the content of `item put`, the operations of `item commit`.
 * Bytes that are not UTF-8 are a usage error naming the source, never text with U+FFFD in place of what they held
 * (a PDF given to `item put` would be stored as such); `hint` says what to do instead. A byte order mark is kept:
 * the content is stored exactly as given.
 */
export async function readText(file: string | undefined, what: string, hint = ''): Promise<string> {
  const fromStdin = file === undefined || file === '-';
  const bytes = fromStdin ? await readStdinBytes(what) : await readFile(file);
  try {
    return new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(bytes);
  } catch {
    throw new UsageError(`${fromStdin ? 'stdin' : file} is not UTF-8 text${hint}`);
  }
}

/** All of stdin, as bytes (`item upload` without --file); a terminal is refused rather than waited on for `what`. */
export async function readStdinBytes(what: string): Promise<Buffer> {
  if (process.stdin.isTTY) throw new UsageError(`give ${what} with --file <file> or on stdin`);
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Buffer));
  return Buffer.concat(chunks);
}
