import { setFlagsFromString } from 'node:v8';

/** V8's own growth factor of the young generation, restored once no load holds it. */
const V8_DEFAULT_GROWTH = 2;
const FLAG = '--semi-space-growth-factor';

let holders = 0;

/** An operator who set the factor (NODE_OPTIONS, node's own arguments) keeps theirs. */
function setByOperator(): boolean {
  return [...process.execArgv, ...(process.env.NODE_OPTIONS ?? '').split(/\s+/)].some((arg) => arg.startsWith(FLAG) || arg.startsWith('--semi_space_growth_factor'));
}

/**
 * Holds V8's young generation at the size it has until the returned function is called (once; holds
 * nest). For what allocates and keeps much: a process's start (its modules), an organization's load.
 * V8 reads the factor each time it would grow, so setting it while running takes effect at once.
 */
export function holdYoungGeneration(): () => void {
  if (setByOperator()) return () => undefined;
  if (holders++ === 0) setFlagsFromString(`${FLAG}=1`);
  let released = false;
  return () => {
    if (released) return;
    released = true;
    if (--holders === 0) setFlagsFromString(`${FLAG}=${V8_DEFAULT_GROWTH}`);
  };
}

/**
 * Runs `fn` (a load that keeps most of what it allocates: the index snapshot, the history log's file)
 * with V8's young generation held at the size it has. Whatever keeps what it allocates makes V8
 * double the young generation at each scavenge, up to its 16 MiB semi-spaces (32 MiB in all), and
 * V8 never gives that back: an idle server kept 32 MiB of empty young generation, resident, for its
 * life (issue 17, measured at 50,000 items). Held at its size, the survivors are promoted to the old
 * generation sooner, which is where they are headed anyway; once nothing holds it, V8's own factor
 * is back, so a busy server still grows its young generation as its requests need. Not for work that
 * makes much short-lived garbage as it goes (an index built from the tree's records): promoted before
 * it dies, it cost a cold start ~20% more CPU (measured).
 */
export async function withoutYoungGrowth<T>(fn: () => Promise<T>): Promise<T> {
  const release = holdYoungGeneration();
  try {
    return await fn();
  } finally {
    release();
  }
}

let startupRelease: (() => void) | null = null;

/**
 * Holds the young generation while a process starts: its modules' code and objects are nearly all kept,
 * which alone grew it to 16 MiB before a server listened. The executable calls it before importing the
 * program, and lets go (releaseStartupHold) once the program's modules are loaded, before its command runs.
 */
export function holdForStartup(): void {
  startupRelease ??= holdYoungGeneration();
}

export function releaseStartupHold(): void {
  startupRelease?.();
  startupRelease = null;
}
