import { InvalidArgumentError, Option } from 'commander';

/** What every command may print: its result on stdout, as text or (`--json`) as JSON. */
export interface Printing {
  json?: boolean;
}

/** The result of a command on stdout: `text` for people, `json` (pretty-printed) under --json. */
export const print = (opts: Printing, text: string, json: unknown): void => {
  process.stdout.write(`${opts.json ? JSON.stringify(json, null, 2) : text}\n`);
};

export const jsonOption = (): Option => new Option('--json', 'print machine-readable JSON');

/** An integer in [min, max] for an option; anything else is commander's usage error (exit 2). */
export const intIn =
  (min: number, max: number) =>
  (value: string): number => {
    if (!/^\d+$/.test(value) || Number(value) < min || Number(value) > max) throw new InvalidArgumentError(`must be an integer from ${min} to ${max}`);
    return Number(value);
  };

/** Search results as lines (path, score, snippet on one line), the same from the server's API and from the store. */
export function searchLines(results: ReadonlyArray<{ path: string; score: number; snippet: string }>): string {
  return results.map((r) => `${r.path}\t${r.score.toFixed(3)}\t${r.snippet.replace(/\s+/g, ' ')}`).join('\n') || 'No items match.';
}
