import { spawn, type ChildProcess } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { expect } from 'chai';
import { ROOT, runCli, spawnServe, type ServeChild } from '../support/child.js';
import { sleep } from '../support/sleep.js';

/**
 * Two knowledge-store nodes behind HAProxy, run from the documented configuration
 * (scripts/haproxy.cfg, README Scaling > Routing) with only its addresses and paths replaced.
 */

export const NODES = ['node-a', 'node-b'] as const;
export type NodeName = (typeof NODES)[number];

/** The documented file's placeholders: each is replaced exactly once, so the file cannot drift from what is tested. */
const DOC_ADDRESSES: Record<NodeName, string> = { 'node-a': '10.0.0.11:3000', 'node-b': '10.0.0.12:3000' };

export interface Node {
  name: NodeName;
  dataDir: string;
  serve: ServeChild;
}

export interface Proxy {
  url: string;
  /** The organization → backend map (knowledge-orgs.map) and the legacy key map, as files HAProxy reads. */
  orgMap: string;
  legacyKeyMap: string;
  /** What HAProxy printed (its access log included). */
  output(): string;
  /** `systemctl reload haproxy` in small: SIGUSR2 to the master, which re-reads the file and the maps. */
  reload(): Promise<void>;
  stop(): Promise<void>;
}

/** A port nobody listens on now (HAProxy cannot be asked for port 0 and tell which it got). */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (!address || typeof address === 'string') throw new Error('no port');
  return address.port;
}

/** Creates an organization with the CLI (beside a running server or not); returns its admin key. */
export async function createOrg(dataDir: string, orgId: string): Promise<string> {
  const r = await runCli(['org', 'create', orgId, '--data-dir', dataDir, '--json']);
  expect(r.code, r.stderr).to.equal(0);
  return (JSON.parse(r.stdout) as { key: string }).key;
}

export async function startNode(name: NodeName, dataDir: string, args: string[] = []): Promise<Node> {
  // Behind one proxy: the client address is the one HAProxy adds to X-Forwarded-For (option forwardfor).
  const serve = await spawnServe(dataDir, 20_000, {}, ['--trust-proxy', '1', ...args]);
  return { name, dataDir, serve };
}

/** The documented configuration with this test's addresses and paths. */
export async function proxyConfig(args: { port: number; dir: string; nodes: readonly Node[] }): Promise<string> {
  let text = await readFile(join(ROOT, 'scripts/haproxy.cfg'), 'utf8');
  const replace = (from: string | RegExp, to: string, times: number): void => {
    const all = typeof from === 'string' ? null : new RegExp(from.source, `${from.flags}g`);
    const count = all ? (text.match(all) ?? []).length : text.split(from as string).length - 1;
    expect(count, `scripts/haproxy.cfg: ${String(from)}`).to.equal(times);
    text = all ? text.replace(all, to) : text.split(from as string).join(to);
  };
  replace('    bind :80\n', `    bind 127.0.0.1:${args.port}\n`, 1);
  for (const node of args.nodes) replace(DOC_ADDRESSES[node.name], new URL(node.serve.url).host, 2);
  replace('/etc/haproxy/knowledge-orgs.map', join(args.dir, 'knowledge-orgs.map'), 2);
  replace('/etc/haproxy/knowledge-legacy-keys.map', join(args.dir, 'knowledge-legacy-keys.map'), 1);
  replace('/run/haproxy/admin.sock', join(args.dir, 'admin.sock'), 1);
  // Run as this user, logging to stdout (-db): the rest is the file as documented.
  replace(/^ {4}(user|group) haproxy\n/m, '', 2);
  replace('log /dev/log local0', 'log stdout format raw local0', 1);
  return text;
}

export async function startProxy(args: { dir: string; nodes: readonly Node[]; orgMap: string; legacyKeyMap?: string }): Promise<Proxy> {
  const port = await freePort();
  const cfg = join(args.dir, 'haproxy.cfg');
  const orgMap = join(args.dir, 'knowledge-orgs.map');
  const legacyKeyMap = join(args.dir, 'knowledge-legacy-keys.map');
  await writeFile(cfg, await proxyConfig({ port, dir: args.dir, nodes: args.nodes }));
  await writeFile(orgMap, args.orgMap);
  await writeFile(legacyKeyMap, args.legacyKeyMap ?? '');
  let out = '';
  // -W: master-worker, as systemd runs it, so that SIGUSR2 reloads; -db: in the foreground, logs to stdout.
  const proc: ChildProcess = spawn('haproxy', ['-W', '-db', '-f', cfg], { stdio: ['ignore', 'pipe', 'pipe'] });
  proc.stdout?.setEncoding('utf8').on('data', (d: string) => (out += d));
  proc.stderr?.setEncoding('utf8').on('data', (d: string) => (out += d));
  const url = `http://127.0.0.1:${port}`;
  const loads = (): number => out.split('Loading success.').length - 1;
  const formerWorkersGone = (): number => out.split('Former worker').length - 1;
  const waitFor = async (done: () => boolean, what: string): Promise<void> => {
    for (let i = 0; i < 200 && !done(); i++) {
      if (proc.exitCode !== null) throw new Error(`haproxy exited (${proc.exitCode}):\n${out}`);
      await sleep(50);
    }
    if (!done()) throw new Error(`haproxy: ${what} did not happen within 10 s:\n${out}`);
  };
  await waitFor(() => loads() >= 1, 'the first load');
  return {
    url,
    orgMap,
    legacyKeyMap,
    output: () => out,
    reload: async () => {
      const before = loads();
      const gone = formerWorkersGone();
      proc.kill('SIGUSR2');
      await waitFor(() => loads() > before, 'the reload');
      // The old worker closes the connections clients keep alive to it as it stops: a request sent on one of them
      // meanwhile is cut ("other side closed": one failover run in seven here). A client of a real reload retries
      // it; the tests wait until the old worker is gone (the master says so), and its closes have reached them.
      await waitFor(() => formerWorkersGone() > gone, "the old worker's exit");
    },
    stop: async () => {
      if (proc.exitCode !== null || proc.signalCode !== null) return;
      const exited = new Promise((resolve) => proc.once('exit', resolve));
      proc.kill('SIGTERM');
      await exited;
    },
  };
}

/** Which node answered, by the header the documented configuration adds. */
export const nodeOf = (res: { headers: Headers }): string | null => res.headers.get('X-Knowledge-Node');
