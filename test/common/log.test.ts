import { expect } from 'chai';
import { createLogger, type AccessLine } from '../../src/common/log.js';

/** Lines written by a logger at `level`, with a recording destination. */
function logger(level: 'info' | 'warn' | 'debug' = 'info'): { log: ReturnType<typeof createLogger>; lines: string[] } {
  const lines: string[] = [];
  return { log: createLogger({ level, write: (l) => lines.push(l) }), lines };
}

const noTime = (l: string): string => l.replace(/^\{"level":"info","time":"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z",/, '{"level":"info","time":"T",');

const CASES: AccessLine[] = [
  { requestId: '4bf9e0c2-1f0e-4c43-9d0c-5d3a3b1f2e10', method: 'GET', route: '/api/v1/knowledge/items{/*path}', status: 200, ms: 0.412, keyId: 'key_0123456789abcdef' },
  { requestId: 'proxy:host.example-1_2', method: 'HEAD', route: '(none)', status: 304, ms: 12, keyId: null },
  // A request id may look like a key (its alphabet allows it): hidden as every string field is.
  { requestId: `ks_default_${'A'.repeat(43)}`, method: 'PUT', route: '/x', status: 401, ms: 0.001, keyId: null },
  // Not what the callers pass, but what JSON must escape: the same escapes as pino's.
  { requestId: 'quote " back \\ tab \t nl \n u2028 \u2028 é', method: 'M"', route: '\u0001', status: 599, ms: 1234567.891, keyId: 'key_"x"' },
];

describe('createLogger: the access line (request)', () => {
  it('writes the bytes pino writes for info("request", fields), bar the time', () => {
    for (const line of CASES) {
      const fast = logger();
      const general = logger();
      fast.log.request?.(line);
      general.log.info('request', { ...line });
      expect(fast.lines).to.have.length(1);
      expect(fast.lines.map(noTime)).to.deep.equal(general.lines.map(noTime));
      expect(fast.lines[0]).to.not.include('AAAAAAAAAAAAAAAA');
    }
  });

  it('its time is an ISO 8601 UTC time of now', () => {
    const { log, lines } = logger();
    const before = Date.now();
    log.request?.(CASES[0] as AccessLine);
    const time = Date.parse((JSON.parse(lines[0] as string) as { time: string }).time);
    expect(time).to.be.within(before, Date.now());
  });

  it('follows the level: logged at info and debug, not at warn', () => {
    for (const [level, count] of [['debug', 1], ['info', 1], ['warn', 0]] as const) {
      const { log, lines } = logger(level);
      log.request?.(CASES[0] as AccessLine);
      expect(lines, level).to.have.length(count);
    }
  });
});
