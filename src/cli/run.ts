import { CommanderError } from 'commander';
import { reportFailure } from './errors.js';
import { buildProgram } from './program.js';
import { releaseStartupHold } from '../common/youngGeneration.js';

// The program's modules are loaded: V8's young generation grows again as the command needs (a verify or an
// index built from the tree makes much short-lived garbage, which a held young generation would promote).
releaseStartupHold();

/**
 * The `knowledge-store` program, run on argv (main.ts imports it). Exit 0 on success, 2 for a usage error
 * (commander's: unknown command or option, missing argument, bad option value), 1 for a failure.
 * A failure is one line on stderr (the problems of a refused import below it), or with --json one JSON
 * object `{"error", "code"}` and nothing else; a fault of ours also prints its stack when LOG_LEVEL=debug.
 */
const args = process.argv.slice(2);
const end = args.indexOf('--');
// Known before parsing, so that commander's own errors (raised while parsing) come out as JSON too.
const json = (end === -1 ? args : args.slice(0, end)).includes('--json');
const silent = { writeErr: (): void => {}, outputError: (): void => {} };

try {
  await buildProgram({ output: json ? silent : undefined }).parseAsync(process.argv);
} catch (err) {
  // --help and --version end in a CommanderError with exit code 0, their text already on stdout.
  if (err instanceof CommanderError && err.exitCode === 0) process.exit(0);
  const failure = reportFailure(err);
  if (json) process.stderr.write(`${JSON.stringify(failure.json)}\n`);
  // commander has already printed its own message (and the help) unless --json silenced it.
  else if (!(err instanceof CommanderError)) {
    process.stderr.write(`knowledge-store: ${failure.message}\n`);
    for (const line of failure.details) process.stderr.write(`  - ${line}\n`);
    if (failure.unexpected && err instanceof Error && process.env.LOG_LEVEL === 'debug') process.stderr.write(`${err.stack ?? ''}\n`);
  }
  process.exit(failure.exitCode);
}
