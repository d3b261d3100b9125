import { Option } from 'commander';

/** What every command may print: its result on stdout, as text or (`--json`) as JSON. */
export interface Printing {
  json?: boolean;
}

/** The result of a command on stdout: `text` for people, `json` (pretty-printed) under --json. */
export const print = (opts: Printing, text: string, json: unknown): void => {
  process.stdout.write(`${opts.json ? JSON.stringify(json, null, 2) : text}\n`);
};

export const jsonOption = (): Option => new Option('--json', 'print machine-readable JSON');
