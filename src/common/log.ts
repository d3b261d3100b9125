import { pino, stdTimeFunctions, type DestinationStream } from 'pino';
import { redactSecrets } from './redact.js';

/**
 * A small leveled logger writing one JSON object per line to stderr (stdout is
 * for command results, such as a printed key). Passed in, never global.
 *
 * The interface is the seam; pino is behind it: its JSON lines are
 * what log shippers expect, it is fast where it counts (one line per request),
 * and its path redaction keeps credentials out of structured fields. On top of
 * that every string field is scrubbed of anything shaped like an API key.
 */
export const LOG_LEVELS = ['error', 'warn', 'info', 'debug'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];
export type LogFields = Record<string, unknown>;

export interface Logger {
  error(msg: string, fields?: LogFields): void;
  warn(msg: string, fields?: LogFields): void;
  info(msg: string, fields?: LogFields): void;
  debug(msg: string, fields?: LogFields): void;
}

export function isLogLevel(value: string): value is LogLevel {
  return (LOG_LEVELS as readonly string[]).includes(value);
}

/** Fields that hold a credential whatever their value looks like: logged as `[redacted]`. */
const REDACTED_PATHS = [
  'key',
  'secret',
  'password',
  'token',
  'authorization',
  'headers.authorization',
  'headers["x-api-key"]',
  'headers.cookie',
  '*.key',
  '*.secret',
  '*.password',
  '*.token',
  '*.authorization',
];

export function createLogger(options: { level?: LogLevel; write?: (line: string) => void } = {}): Logger {
  const { level = 'info', write } = options;
  // Synchronous writes to fd 2: nothing is lost when the process exits right after a line (a failed start).
  const destination: DestinationStream = write ? { write } : pino.destination({ dest: 2, sync: true });
  const log = pino(
    {
      level,
      base: undefined, // no pid or hostname on every line: a process manager adds them when it wants them
      timestamp: stdTimeFunctions.isoTime,
      formatters: {
        level: (label) => ({ level: label }),
        log: (fields) => scrub(fields),
      },
      redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
    },
    destination,
  );
  const at =
    (lvl: LogLevel) =>
    (msg: string, fields: LogFields = {}): void => {
      log[lvl](fields, msg);
    };
  return { error: at('error'), warn: at('warn'), info: at('info'), debug: at('debug') };
}

/** Every top-level string (an error message or stack, a git command line) with key-shaped text hidden. */
function scrub(fields: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(fields)) out[name] = typeof value === 'string' ? redactSecrets(value) : value;
  return out;
}

export const silentLogger: Logger = { error() {}, warn() {}, info() {}, debug() {} };
