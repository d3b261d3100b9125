/**
 * Parses the unified diff the API returns (`GET /diff/{path}`) into hunks of
 * numbered lines, and pairs them for a side-by-side view. Pure: no DOM.
 */
export type LineKind = 'context' | 'add' | 'del' | 'note';

export interface DiffLine {
  kind: LineKind;
  text: string;
  oldNo?: number;
  newNo?: number;
}

export interface Hunk {
  header: string;
  lines: DiffLine[];
}

const HUNK = /^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@/;

export function parseUnifiedDiff(text: string): Hunk[] {
  const hunks: Hunk[] = [];
  let hunk: Hunk | undefined;
  let oldNo = 0;
  let newNo = 0;
  const lines = text.split('\n');
  if (lines[lines.length - 1] === '') lines.pop();
  for (const line of lines) {
    const header = HUNK.exec(line);
    if (header) {
      hunk = { header: line, lines: [] };
      hunks.push(hunk);
      oldNo = Number(header[1]);
      newNo = Number(header[2]);
      continue;
    }
    if (!hunk) continue; // the file header (===, ---, +++) before the first hunk
    const sign = line[0];
    const body = line.slice(1);
    if (sign === '+') hunk.lines.push({ kind: 'add', text: body, newNo: newNo++ });
    else if (sign === '-') hunk.lines.push({ kind: 'del', text: body, oldNo: oldNo++ });
    else if (sign === '\\') hunk.lines.push({ kind: 'note', text: line.slice(2) });
    else hunk.lines.push({ kind: 'context', text: body, oldNo: oldNo++, newNo: newNo++ });
  }
  return hunks;
}

export interface SideBySideRow {
  left?: DiffLine;
  right?: DiffLine;
}

/** Context on both sides; a run of deletions beside the run of additions that follows it. */
export function sideBySide(hunk: Hunk): SideBySideRow[] {
  const rows: SideBySideRow[] = [];
  const lines = hunk.lines.filter((l) => l.kind !== 'note');
  for (let i = 0; i < lines.length; ) {
    const line = lines[i] as DiffLine;
    if (line.kind === 'context') {
      rows.push({ left: line, right: line });
      i++;
      continue;
    }
    const dels: DiffLine[] = [];
    const adds: DiffLine[] = [];
    while (i < lines.length && lines[i]?.kind === 'del') dels.push(lines[i++] as DiffLine);
    while (i < lines.length && lines[i]?.kind === 'add') adds.push(lines[i++] as DiffLine);
    for (let j = 0; j < Math.max(dels.length, adds.length); j++) rows.push({ left: dels[j], right: adds[j] });
  }
  return rows;
}

/** Lines added and removed, for a one-line summary. */
export function diffStats(hunks: Hunk[]): { added: number; removed: number } {
  let added = 0;
  let removed = 0;
  for (const line of hunks.flatMap((h) => h.lines)) {
    if (line.kind === 'add') added++;
    if (line.kind === 'del') removed++;
  }
  return { added, removed };
}
