import { join } from 'node:path';
import { ROOT } from '../support/child.js';

/**
 * What one `npm run bench` measures and for how long, from the environment:
 * BENCH_DURATION (seconds per load run, default 10, 3 when quick), BENCH_QUICK=1
 * (small sizes, a smoke run of a few minutes), BENCH_VERIFY=1 (run
 * `knowledge-store verify` on every fixture used, not only on new small ones).
 */
export interface BenchSettings {
  quick: boolean;
  /** Seconds of each load run (autocannon, and the commit loops of the anchors). */
  durationS: number;
  /** Seconds of unmeasured load before each GET run, for every contender alike. */
  warmupS: number;
  /**
   * Item counts of the small, medium and large fixtures (100, 10,000 and 50,000 for the README's Performance
   * figures), and of the search phase's fixture of ~2 KB items (50,000; 6,000 when quick: still enough to log progress).
   */
  sizes: { small: number; medium: number; large: number; search: number };
  /** Bytes of an item of the search phase's fixture (about: 0.75× to 1.25×). */
  searchItemBytes: number;
  /** Versions of the hot item (in the large fixture), for the history figure. */
  hotVersions: number;
  /** Timed requests per latency figure (lists, history). */
  samples: number;
  verifyAll: boolean;
  /** `.tmp/bench`: results, and the fixture cache under `fixtures/`. */
  outDir: string;
}

export function loadSettings(env: NodeJS.ProcessEnv = process.env): BenchSettings {
  const quick = env.BENCH_QUICK === '1' || env.BENCH_QUICK === 'true';
  const durationS = positive(env.BENCH_DURATION, quick ? 3 : 10, 'BENCH_DURATION');
  return {
    quick,
    durationS,
    warmupS: Math.min(2, Math.max(1, durationS / 5)),
    sizes: quick ? { small: 100, medium: 1_000, large: 5_000, search: 6_000 } : { small: 100, medium: 10_000, large: 50_000, search: 50_000 },
    searchItemBytes: 2_048,
    hotVersions: 1_000,
    samples: quick ? 10 : 30,
    verifyAll: env.BENCH_VERIFY === '1',
    outDir: join(ROOT, '.tmp', 'bench'),
  };
}

function positive(raw: string | undefined, fallback: number, name: string): number {
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isFinite(n) || n <= 0) throw new Error(`${name} must be a positive number of seconds (got "${raw}")`);
  return n;
}

/** Progress goes to stderr, so stdout holds only the report. */
export function progress(line: string): void {
  process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${line}\n`);
}

/** `--name value` options of a bench script run on its own (putCost.ts, getCost.ts). */
export function scriptOptions(argv: readonly string[] = process.argv.slice(2)): {
  number(name: string, dflt: number): number;
  text(name: string): string | undefined;
  /** `--env NAME=VALUE` as one variable (undefined when the option is absent; a value without `=` throws). */
  variable(name: string): { name: string; value: string } | undefined;
} {
  const text = (name: string): string | undefined => {
    const at = argv.indexOf(name);
    return at === -1 ? undefined : argv[at + 1];
  };
  const variable = (name: string): { name: string; value: string } | undefined => {
    const given = text(name);
    if (given === undefined) return undefined;
    const eq = given.indexOf('=');
    if (eq < 1) throw new Error(`${name} wants NAME=VALUE, not ${given}`);
    return { name: given.slice(0, eq), value: given.slice(eq + 1) };
  };
  return { text, variable, number: (name, dflt) => Number(text(name) ?? dflt) };
}
