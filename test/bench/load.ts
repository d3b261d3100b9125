import autocannon from 'autocannon';
import { cpuSecondsOf, gitCpuSecondsOf, gitRunnerOf, machineBusySeconds, neighbourMeter } from './machine.js';

/**
 * Load runs with autocannon, in the bench process (on the load CPU): real HTTP
 * over loopback, keep-alive, `connections` clients each with one request in
 * flight (no pipelining). Rates count 2xx answers only; anything else is
 * reported and fails the figure that uses the run.
 */
export interface LoadResult {
  connections: number;
  durationS: number;
  sent: number;
  ok: number;
  non2xx: number;
  errors: number;
  timeouts: number;
  statusCodes: Record<string, number>;
  /** 2xx answers per second over the run. */
  okPerSecond: number;
  latencyMs: { mean: number; p50: number; p90: number; p99: number; max: number };
  /** Mean bytes received per answer (headers and body). */
  bytesPerAnswer: number;
  /** CPU the server process used during the run, % of one CPU (100 = one CPU saturated); NaN when unknown. */
  serverCpuPercent: number;
  /** CPU of the server's child processes that finished during the run (git repack and the like), % of one CPU. */
  serverChildrenCpuPercent: number;
  /** CPU the load generator (this process) used during the run, % of one CPU. */
  loadCpuPercent: number;
  /**
   * CPU the rest of the machine was busy with during the run, % of one CPU: the kernel's work for the
   * loopback traffic and the fsyncs (softirq, journal and block threads), and any other process.
   */
  otherCpuPercent: number;
  /** CPU used by processes outside the bench's tree (someone else's build or test), % of one CPU: should be ~0. */
  neighbourCpuPercent: number;
}

export interface LoadRequest {
  method: 'GET' | 'PUT';
  path: string;
  body?: string;
}

export async function runLoad(args: {
  url: string;
  connections: number;
  durationS: number;
  key: string;
  /** The server's pid, to report how busy it was. */
  serverPid?: number;
  /** Called for every request: varies its path and body (a PUT must change content, or it is no commit). */
  next: () => LoadRequest;
}): Promise<LoadResult> {
  const headers: Record<string, string> = { authorization: `Bearer ${args.key}`, 'content-type': 'application/json' };
  const serverCpuBefore = args.serverPid ? await cpuSecondsOf(args.serverPid) : undefined;
  // git runs in the server's git runner process (a child of the server, never reaped while it runs): counted with the children.
  const runner = args.serverPid ? await gitRunnerOf(args.serverPid) : null;
  const gitBefore = args.serverPid ? await gitCpuSecondsOf(args.serverPid, runner) : NaN;
  const loadCpuBefore = process.cpuUsage();
  const busyBefore = await machineBusySeconds();
  const neighbours = await neighbourMeter();
  const result = await autocannon({
    url: args.url,
    connections: args.connections,
    pipelining: 1,
    duration: args.durationS,
    timeout: 30,
    headers,
    requests: [
      {
        setupRequest: (req) => {
          const r = args.next();
          return { ...req, method: r.method, path: r.path, body: r.body, headers: r.body === undefined ? { authorization: headers.authorization } : headers };
        },
      },
    ],
  });
  const loadCpu = process.cpuUsage(loadCpuBefore);
  const busy = (await machineBusySeconds()) - busyBefore;
  const neighbourCpuPercent = await neighbours();
  const serverCpuAfter = args.serverPid ? await cpuSecondsOf(args.serverPid) : undefined;
  const serverCpu = serverCpuAfter && serverCpuBefore ? serverCpuAfter.self - serverCpuBefore.self : NaN;
  const childrenCpu = args.serverPid ? (await gitCpuSecondsOf(args.serverPid, runner)) - gitBefore : NaN;
  const statusCodes: Record<string, number> = {};
  for (const [code, stat] of Object.entries(result.statusCodeStats ?? {})) statusCodes[code] = stat.count ?? 0;
  const answers = result['1xx'] + result['2xx'] + result['3xx'] + result['4xx'] + result['5xx'];
  return {
    connections: args.connections,
    durationS: result.duration,
    sent: result.requests.sent,
    ok: result['2xx'],
    non2xx: result.non2xx,
    errors: result.errors,
    timeouts: result.timeouts,
    statusCodes,
    okPerSecond: result['2xx'] / result.duration,
    latencyMs: { mean: result.latency.mean, p50: result.latency.p50, p90: result.latency.p90, p99: result.latency.p99, max: result.latency.max },
    bytesPerAnswer: answers > 0 ? result.throughput.total / answers : 0,
    serverCpuPercent: (100 * serverCpu) / result.duration,
    serverChildrenCpuPercent: (100 * childrenCpu) / result.duration,
    loadCpuPercent: (100 * (loadCpu.user + loadCpu.system)) / 1e6 / result.duration,
    // Clock-tick rounding can make the difference slightly negative: nothing else ran.
    neighbourCpuPercent,
    otherCpuPercent: Math.max(0, (100 * (busy - (args.serverPid ? serverCpu + childrenCpu : 0) - (loadCpu.user + loadCpu.system) / 1e6)) / result.duration),
  };
}

/** The server's CPU microseconds per 2xx answer over a run: moves far less than req/s when the machine is busy. */
export const cpuPerRequestUs = (r: LoadResult): number => ((r.serverCpuPercent / 100) * r.durationS * 1e6) / r.ok;

/** A short line for progress output. */
export function describeLoad(r: LoadResult): string {
  const bad = r.non2xx + r.errors > 0 ? `, ${r.non2xx} non-2xx ${JSON.stringify(r.statusCodes)}, ${r.errors} errors (${r.timeouts} timeouts)` : '';
  return `${r.okPerSecond.toFixed(0)} 2xx/s over ${r.durationS.toFixed(1)} s (${r.ok} 2xx of ${r.sent} sent${bad}); latency mean ${r.latencyMs.mean.toFixed(2)} ms, p99 ${r.latencyMs.p99} ms; ${r.bytesPerAnswer.toFixed(0)} B/answer; CPU: server ${r.serverCpuPercent.toFixed(0)}% (+ ${r.serverChildrenCpuPercent.toFixed(0)}% its git children), load generator ${r.loadCpuPercent.toFixed(0)}%, rest of the machine ${r.otherCpuPercent.toFixed(0)}% (other processes ${r.neighbourCpuPercent.toFixed(0)}%)`;
}
