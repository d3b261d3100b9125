import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { MachineInfo } from './machine.js';

/** One row of the table: our figure, the anchor it is held against (if any), the target and the verdict. */
export interface Figure {
  figure: string;
  ours: string;
  anchor: string;
  /** ours / anchor (or the ratio the target names), when there is one. */
  ratio: number | null;
  target: string;
  /** null: informational, no target. */
  pass: boolean | null;
  /** Why a figure failed beyond its number (errors, missing commits), or how it was judged. */
  note?: string;
}

export interface BenchReport {
  startedAt: string;
  finishedAt: string;
  settings: Record<string, unknown>;
  machine: MachineInfo;
  fixtures: Array<Record<string, unknown>>;
  figures: Figure[];
  /** Every measurement, raw (load runs, samples, startup), by name. */
  raw: Record<string, unknown>;
  /** Things that went wrong or looked wrong while running (server warnings, failed phases). */
  problems: string[];
}

export const fmt = (n: number, digits = 0): string => (Number.isFinite(n) ? n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits }) : 'n/a');
export const ms = (n: number): string => `${fmt(n, n < 10 ? 2 : 1)} ms`;
export const rounds = (values: number[], digits = 0): string => `rounds: ${values.map((v) => fmt(v, digits)).join(', ')}`;

/** The best of a figure's rounds: the one least disturbed by anything else on the machine. */
export function best<T>(runs: T[], score: (r: T) => number): T | undefined {
  return runs.reduce<T | undefined>((b, r) => (b === undefined || score(r) > score(b) ? r : b), undefined);
}

const fmtRatio = (r: number | null): string => (r === null || !Number.isFinite(r) ? '–' : `${r.toFixed(2)}×`);
const verdict = (p: boolean | null): string => (p === null ? '–' : p ? 'pass' : '**FAIL**');
const cell = (s: string): string => s.replace(/\|/g, '\\|').replace(/\n/g, ' ');

export function renderMarkdown(report: BenchReport): string {
  const m = report.machine;
  const lines: string[] = [];
  lines.push(`## knowledge-store benchmark (${report.startedAt})`, '');
  lines.push(`- machine: ${m.cpuModel}, ${m.cpus} CPUs, ${m.memoryGiB} GiB; ${m.kernel}; node ${m.node}; git ${m.git}`);
  lines.push(`- data dir: ${m.dataDirFs}`);
  lines.push(`- CPUs: ${m.pinning}`);
  lines.push(`- load average (1 min): ${m.loadAverage}`);
  for (const [k, v] of Object.entries(report.settings)) if (k !== 'outDir') lines.push(`- ${k}: ${typeof v === 'object' ? JSON.stringify(v) : String(v)}`);
  for (const f of report.fixtures) lines.push(`- fixture: ${Object.entries(f).map(([k, v]) => `${k} ${String(v)}`).join(', ')}`);
  lines.push('');
  lines.push('| figure | ours | anchor (same run) | ratio | target | result |');
  lines.push('|---|---|---|---|---|---|');
  for (const f of report.figures) {
    lines.push(`| ${cell(f.figure)} | ${cell(f.ours)} | ${cell(f.anchor)} | ${fmtRatio(f.ratio)} | ${cell(f.target)} | ${verdict(f.pass)} |`);
  }
  const notes = report.figures.filter((f) => f.note);
  if (notes.length > 0) {
    lines.push('', 'Notes:');
    for (const f of notes) lines.push(`- ${f.figure}: ${f.note}`);
  }
  const judged = report.figures.filter((f) => f.pass !== null);
  const failed = judged.filter((f) => f.pass === false);
  lines.push('', `Targets: ${judged.length - failed.length} of ${judged.length} met${failed.length ? `; missed: ${failed.map((f) => f.figure).join('; ')}` : ''}.`);
  if (report.problems.length > 0) {
    lines.push('', 'Problems seen while running:');
    for (const p of report.problems) lines.push(`- ${p}`);
  }
  return `${lines.join('\n')}\n`;
}

/** `.tmp/bench/results-<timestamp>.json` and `.tmp/bench/latest.json`. */
export async function writeReport(outDir: string, report: BenchReport): Promise<string> {
  await mkdir(outDir, { recursive: true });
  const stamp = report.startedAt.replace(/[:.]/g, '-');
  const file = join(outDir, `results-${stamp}.json`);
  const text = `${JSON.stringify(report, null, 2)}\n`;
  await writeFile(file, text);
  await writeFile(join(outDir, 'latest.json'), text);
  return file;
}
