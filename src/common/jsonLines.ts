import { ITEMS_PER_TURN, nextTurn } from './turn.js';

/**
 * Files of one JSON value per line (the history log, the index snapshot), read and written in slices of
 * ITEMS_PER_TURN lines with a turn of the event loop between: at 50,000 lines, one `JSON.parse` of the whole
 * file held the loop ~90-120 ms, and every other organization's requests with it (`test/bench/orgOpen.ts`).
 */

const NEWLINE = 0x0a;

/**
 * A slice ends after ITEMS_PER_TURN lines or past this many bytes, whichever comes first: the index
 * snapshot's lines (~500 bytes, each a record to check) cost twice the history log's (~230) to parse.
 */
const SLICE_BYTES = 1024 * 1024;

/** The file's first line as text (without its newline), and where the line after it starts. */
export function firstLine(bytes: Buffer): { text: string; next: number } {
  const end = bytes.indexOf(NEWLINE);
  return end === -1 ? { text: bytes.toString('utf8'), next: bytes.length } : { text: bytes.toString('utf8', 0, end), next: end + 1 };
}

/**
 * Hands the value of each line of `bytes` from `from` on to `each`, in order, until `each` answers false or a
 * line is not exactly one JSON value; true when every line was read. Empty lines at the end (a file's last
 * newline) are not lines.
 *
 * The file is taken as bytes, not text: each slice of lines is found by its newlines (a byte no other UTF-8
 * character holds) and decoded alone, so no step works through the whole file (splitting 25 MB of text into
 * lines, one piece, held the loop ~25 ms). A slice is parsed as one JSON array of its lines, not line by line:
 * one parse of 5,000 lines costs about half of 5,000 parses, and its strings are the parser's own either way
 * (the heap after a full GC is the same, measured at 51,000 history lines). Only a slice that fails is looked
 * at line by line, to find where it breaks.
 */
export async function eachJsonLine(bytes: Buffer, from: number, each: (value: unknown) => boolean): Promise<boolean> {
  let end = bytes.length;
  while (end > from && bytes[end - 1] === NEWLINE) end--;
  for (let at = from; at < end; ) {
    if (at > from) await nextTurn();
    const stop = sliceEnd(bytes, at, end);
    const lines = bytes.toString('utf8', at, stop).split('\n');
    const values = parseArray(lines) ?? beforeDamage(lines);
    for (const value of values) if (!each(value)) return false;
    if (values.length < lines.length) return false;
    at = stop + 1;
  }
  return true;
}

/** Where the slice from `at` ends (the newline of its last line, see SLICE_BYTES), or `end`. */
function sliceEnd(bytes: Buffer, at: number, end: number): number {
  let stop = at - 1;
  for (let n = 0; n < ITEMS_PER_TURN && stop - at < SLICE_BYTES; n++) {
    stop = bytes.indexOf(NEWLINE, stop + 1);
    if (stop === -1 || stop >= end) return end;
  }
  return stop;
}

/** The values of the lines before the first that is not one JSON value, parsed the same way. */
function beforeDamage(lines: readonly string[]): unknown[] {
  const good = lines.findIndex((line) => !isJson(line));
  return (good > 0 && parseArray(lines.slice(0, good))) || [];
}

/** The lines as the elements of one array; null unless each line was exactly one value. */
function parseArray(lines: readonly string[]): unknown[] | null {
  try {
    const values = JSON.parse(`[${lines.join(',')}]`) as unknown[];
    // A line holding two values (`1,2`) would shift every later one.
    return values.length === lines.length ? values : null;
  } catch {
    return null;
  }
}

function isJson(line: string): boolean {
  try {
    JSON.parse(line);
    return true;
  } catch {
    return false;
  }
}

/**
 * The text of a file of `first` (when given) then one line per item, each ending in a newline; the items are
 * made lines ITEMS_PER_TURN at a time with a turn of the event loop between (serializing 50,000 index entries
 * in one piece held it ~100 ms). `items` is read as it is when called: pass a copy if it may change meanwhile.
 */
export async function linesText<T>(items: readonly T[], line: (item: T) => string, first?: string): Promise<string> {
  const out: string[] = first === undefined ? [] : [first];
  for (let i = 0; i < items.length; i++) {
    if (i > 0 && i % ITEMS_PER_TURN === 0) await nextTurn();
    out.push(line(items[i] as T));
  }
  return out.length === 0 ? '' : `${out.join('\n')}\n`;
}
