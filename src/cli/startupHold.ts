import { holdYoungGeneration } from '../common/youngGeneration.js';

/**
 * Imported first by the executable, before the modules it loads: a process's start keeps nearly
 * everything it allocates (its modules' code and objects), which grew V8's young generation to its
 * 32 MiB maximum before the server listened, for good (see holdYoungGeneration). `serve` lets it go
 * once it listens; the other commands are short-lived and never do.
 */
export const releaseStartupHold = holdYoungGeneration();
