import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from './child.js';

/** README.md as the tests read it: its code blocks, as fenced, in order. */
export const README = readFileSync(join(ROOT, 'README.md'), 'utf8');

export interface CodeBlock {
  lang: string;
  code: string;
}

/** The fenced code blocks of `text`, in order (``` fences only, as README.md uses). */
export function codeBlocks(text: string): CodeBlock[] {
  return [...text.matchAll(/^```(\S*)\n([\s\S]*?)^```$/gm)].map((m) => ({ lang: m[1] as string, code: m[2] as string }));
}

/** The text between `<!-- NAME:begin ...-->` and `<!-- NAME:end -->`; throws when the markers are not there once each. */
export function markedSection(text: string, name: string): string {
  const begin = text.split(`<!-- ${name}:begin`);
  const end = text.split(`<!-- ${name}:end -->`);
  if (begin.length !== 2 || end.length !== 2) throw new Error(`README.md must hold the ${name} markers once each`);
  const after = (begin[1] as string).slice((begin[1] as string).indexOf('-->') + 3);
  return after.slice(0, after.indexOf(`<!-- ${name}:end -->`));
}
