import { parsePatch } from 'diff';

/**
 * The unified diff the API returns (`GET /diff/{path}`), parsed by the same `diff`
 * package the server writes it with, as hunks of numbered lines, paired for a
 * side-by-side view. Pure: no DOM.
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

/** The hunks of every file in the patch, each line numbered on the side(s) it belongs to. */
export function diffHunks(patch: string): Hunk[] {
  return parsePatch(patch).flatMap((file) =>
    file.hunks.map(({ oldStart, oldLines, newStart, newLines, lines }) => {
      let oldNo = oldStart;
      let newNo = newStart;
      const numbered = lines.map((line): DiffLine => {
        const sign = line[0];
        const text = line.slice(1);
        if (sign === '+') return { kind: 'add', text, newNo: newNo++ };
        if (sign === '-') return { kind: 'del', text, oldNo: oldNo++ };
        if (sign === '\\') return { kind: 'note', text: line.slice(2) };
        return { kind: 'context', text, oldNo: oldNo++, newNo: newNo++ };
      });
      // parsePatch keeps the numbers, not the header line: written back as the server's createTwoFilesPatch writes it
      // (an empty side counts from the line before it).
      const header = `@@ -${oldLines === 0 ? oldStart - 1 : oldStart},${oldLines} +${newLines === 0 ? newStart - 1 : newStart},${newLines} @@`;
      return { header, lines: numbered };
    }),
  );
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
