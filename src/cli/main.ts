#!/usr/bin/env node
import { ConfigError } from '../app/config.js';
import { isKnowledgeError } from '../common/errors.js';
import { ImportRefused } from '../domain/orgImport.js';
import { buildProgram } from './program.js';

/**
 * The `knowledge-store` executable: runs the program on argv. A failure is
 * one line on stderr (the problems of a refused import below it) and exit 1;
 * a fault of ours also prints its stack when LOG_LEVEL=debug.
 */
try {
  await buildProgram().parseAsync(process.argv);
} catch (err) {
  const expected = isKnowledgeError(err) || err instanceof ConfigError;
  process.stderr.write(`knowledge-store: ${err instanceof Error ? err.message : String(err)}\n`);
  if (err instanceof ImportRefused) for (const problem of err.data.problems) process.stderr.write(`  - ${problem}\n`);
  if (!expected && err instanceof Error && process.env.LOG_LEVEL === 'debug') process.stderr.write(`${err.stack ?? ''}\n`);
  process.exit(1);
}
