import { pino, type DestinationStream } from 'pino';
import { LogBuffer } from './logBuffer.js';
import { redactSecrets } from './redact.js';

/**
 * A small leveled logger writing one JSON object per line to stderr (stdout is
 * for command results, such as a printed key). Passed in, never global.
 *
 * The interface is the seam; pino is behind it: its JSON lines are
 * what log shippers expect, and it is fast where it counts (one line per request).
 * Credential fields are redacted and every string field is scrubbed of anything
 * shaped like an API key, in one pass over the fields (`scrub`; pino's own path
 * redaction cost about 8% of a fast GET's CPU for the access line, whose fields hold none).
 */
export const LOG_LEVELS = ['error', 'warn', 'info', 'debug'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];
export type LogFields = Record<string, unknown>;

export interface Logger {
  error(msg: string, fields?: LogFields): void;
  warn(msg: string, fields?: LogFields): void;
  info(msg: string, fields?: LogFields): void;
  debug(msg: string, fields?: LogFields): void;
  /**
   * The access line of one request: the same bytes as `info('request', line)`, written without pino's general
   * serializer (0.7 against 2.1 µs a line, measured in a loop). Optional: a logger without it is told through `info`.
   */
  request?(line: AccessLine): void;
}

/** The fields of an access line (contract §12), in the order they are logged. */
export interface AccessLine {
  requestId: string;
  method: string;
  route: string;
  status: number;
  ms: number;
  keyId: string | null;
}

export function isLogLevel(value: string): value is LogLevel {
  return (LOG_LEVELS as readonly string[]).includes(value);
}

/**
 * Fields that hold a credential whatever their value looks like, logged as `[redacted]`: these names at the
 * top level and in any object one level down (`error.token`), and a request's credential headers.
 */
const CREDENTIAL_FIELDS = new Set(['key', 'secret', 'password', 'token', 'authorization']);
const CREDENTIAL_HEADERS = new Set(['authorization', 'x-api-key', 'cookie']);
const REDACTED = '[redacted]';

/** A Logger whose waiting lines can be written out now (a no-op unless it buffers). */
export interface FlushableLogger extends Logger {
  flush(): void;
}

/**
 * Lines go to `write` when given (the CLI's progress display, tests), else to stderr: through `buffer` (a
 * LogBuffer, or true for one on stderr: the server, whose access lines are too many for a write each), else
 * synchronously, one write a line (a command's few lines, nothing lost when it exits right after one).
 * A buffered logger writes its error and warning lines, and everything before them, at once, and what waits
 * when the process exits (`process.exit`, the end of the event loop, a crash).
 */
export function createLogger(options: { level?: LogLevel; write?: (line: string) => void; buffer?: LogBuffer | boolean } = {}): FlushableLogger {
  const { level = 'info', write } = options;
  const buffer = options.buffer === true ? onExitFlushed(new LogBuffer()) : options.buffer || undefined;
  const destination: DestinationStream = write ? { write } : buffer ? { write: (line) => buffer.write(line) } : pino.destination({ dest: 2, sync: true });
  const log = pino(
    {
      level,
      base: undefined, // no pid or hostname on every line: a process manager adds them when it wants them
      timestamp: () => `,"time":"${isoNow()}"`, // pino's isoTime, made once per millisecond
      formatters: {
        level: (label) => ({ level: label }),
        log: (fields) => scrub(fields),
      },
    },
    destination,
  );
  const at =
    (lvl: LogLevel) =>
    (msg: string, fields: LogFields = {}): void => {
      log[lvl](fields, msg);
    };
  // A fault's line must not wait for the next hundred requests, nor be lost to a kill that follows it.
  const atOnce =
    (lvl: LogLevel) =>
    (msg: string, fields: LogFields = {}): void => {
      log[lvl](fields, msg);
      buffer?.flush();
    };
  const logsRequests = log.isLevelEnabled('info');
  // pino's line for these fields, field for field: level and time first, the fields in order, scrubbed as `scrub`
  // does (no credential names among them; key-shaped text hidden), msg last; strings as JSON.stringify writes them.
  const request = (line: AccessLine): void => {
    if (!logsRequests) return;
    const keyId = line.keyId === null ? 'null' : text(line.keyId);
    destination.write(
      `{"level":"info","time":"${isoNow()}","requestId":${text(line.requestId)},"method":${text(line.method)},"route":${text(line.route)},"status":${line.status},"ms":${line.ms},"keyId":${keyId},"msg":"request"}\n`,
    );
  };
  return { error: atOnce('error'), warn: atOnce('warn'), info: at('info'), debug: at('debug'), request, flush: () => buffer?.flush() };
}

let isoMs = -1;
let isoText = '';

/**
 * The time now as pino's isoTime writes it (`toISOString`), made once per millisecond: a busy server logs dozens
 * of lines in one, and toISOString cost about half a microsecond a line.
 */
function isoNow(): string {
  const now = Date.now();
  if (now !== isoMs) {
    isoMs = now;
    isoText = new Date(now).toISOString();
  }
  return isoText;
}

/** A string field of a line, as pino writes it after `scrub`. */
function text(value: string): string {
  return JSON.stringify(redactSecrets(value));
}

/** `buffer`, written out when the process exits, however it exits short of a kill (`exit` runs on a crash too). */
function onExitFlushed(buffer: LogBuffer): LogBuffer {
  process.on('exit', () => buffer.flush());
  return buffer;
}

/** Credential fields redacted (CREDENTIAL_FIELDS), and every top-level string with key-shaped text hidden. */
function scrub(fields: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(fields)) {
    if (CREDENTIAL_FIELDS.has(name)) out[name] = REDACTED;
    else if (typeof value === 'string') out[name] = redactSecrets(value);
    else if (value !== null && typeof value === 'object' && !Array.isArray(value)) out[name] = withoutCredentials(value as Record<string, unknown>, name === 'headers');
    else out[name] = value;
  }
  return out;
}

/** `value` with its credential fields (and credential headers when it is a request's headers) redacted: a copy when any is there. */
function withoutCredentials(value: Record<string, unknown>, headers: boolean): Record<string, unknown> {
  let copy: Record<string, unknown> | undefined;
  for (const name of Object.keys(value)) {
    if (CREDENTIAL_FIELDS.has(name) || (headers && CREDENTIAL_HEADERS.has(name))) {
      copy ??= { ...value };
      copy[name] = REDACTED;
    }
  }
  return copy ?? value;
}

export const silentLogger: Logger = { error() {}, warn() {}, info() {}, debug() {} };
