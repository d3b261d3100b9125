import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { ROOT } from '../support/child.js';
import { PRODUCTION_INSTALL } from '../support/release.js';
import { startTestServer } from '../support/server.js';

const run = promisify(execFile);

/**
 * The Dockerfile, read as data. No Docker engine runs where these tests run (CI included), so the image is
 * never built here: this checks the facts the README promises (multi-stage, non-root, HEALTHCHECK on /healthz,
 * a data volume, env for the data dir and port, EXPOSE), that the runtime stage installs and starts the release
 * artifact with the commands test/release/artifact.test.ts really runs, and runs the HEALTHCHECK's command itself.
 */

interface Instruction {
  op: string;
  args: string;
}

/** Instructions per stage (continuation lines joined, comments and the syntax directive dropped). */
function stages(text: string): Instruction[][] {
  const lines = text.replace(/\\\n/g, ' ').split('\n').map((l) => l.trim()).filter((l) => l && !l.startsWith('#'));
  const out: Instruction[][] = [];
  for (const line of lines) {
    const [, op, args] = /^(\S+)\s+([\s\S]*)$/.exec(line) as RegExpExecArray;
    const instruction = { op: (op as string).toUpperCase(), args: (args as string).replace(/\s+/g, ' ').trim() };
    if (instruction.op === 'FROM') out.push([]);
    out.at(-1)?.push(instruction);
  }
  return out;
}

/** KEY=value pairs of ENV instructions (the `ENV a=1 b=2` form). */
function env(stage: Instruction[]): Record<string, string> {
  const vars: Record<string, string> = {};
  for (const { args } of stage.filter((i) => i.op === 'ENV')) for (const [, k, v] of args.matchAll(/(\w+)=(\S+)/g)) vars[k as string] = v as string;
  return vars;
}

const all = (stage: Instruction[], op: string): string[] => stage.filter((i) => i.op === op).map((i) => i.args);

describe('Dockerfile (checked as text: no Docker engine here)', () => {
  const text = readFileSync(join(ROOT, 'Dockerfile'), 'utf8');
  const [build, runtime, ...more] = stages(text) as [Instruction[], Instruction[], ...Instruction[][]];
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string>; engines: { node: string } };
  const vars = env(runtime);

  it('two stages: a named build stage with every dependency, then the runtime stage', () => {
    expect(more).to.have.length(0);
    expect(build[0]?.args).to.match(/^node:\d+-slim AS build$/);
    expect(runtime[0]?.args).to.match(/^node:\d+-slim$/);
    const runs = all(build, 'RUN').join('\n');
    expect(runs).to.match(/npm ci --no-audit/).and.not.to.include('--omit=dev');
    expect(runs).to.include('npm run release');
  });

  it('the runtime image is Node the package supports, and holds only the artifact from the build stage', () => {
    const major = Number(/^node:(\d+)/.exec(runtime[0]?.args ?? '')?.[1]);
    expect(major).to.be.at.least(Number(/>=(\d+)/.exec(pkg.engines.node)?.[1]));
    expect(build[0]?.args.split(' ')[0]).to.equal(runtime[0]?.args);
    const copies = all(runtime, 'COPY');
    expect(copies).to.deep.equal(['--from=build /release/knowledge-store.tgz /tmp/knowledge-store.tgz']);
  });

  it(`the runtime stage installs with "${PRODUCTION_INSTALL}" (what the artifact test runs) and has C git`, () => {
    const runs = all(runtime, 'RUN').join('\n');
    expect(runs).to.include(PRODUCTION_INSTALL);
    expect(runs).to.match(/tar -xzf \/tmp\/knowledge-store\.tgz --strip-components=1 -C \/app/);
    expect(runs).to.match(/apt-get install -y --no-install-recommends git /);
  });

  it('starts as `npm start` does (package.json\'s start script), as a non-root user', () => {
    const cmd = JSON.parse(all(runtime, 'CMD').pop() as string) as string[];
    // The script's MALLOC_ARENA_MAX is the image's ENV (launchEnvironment.test.ts).
    expect(cmd.join(' ')).to.equal(pkg.scripts.start?.replace(/^MALLOC_ARENA_MAX=\S+ /, ''));
    const users = all(runtime, 'USER');
    expect(users).to.have.length(1);
    expect(users[0]).to.not.match(/^(root|0)(:|$)/);
    // USER comes before the instructions that run the server.
    const ops = runtime.map((i) => i.op);
    expect(ops.indexOf('USER')).to.be.below(ops.indexOf('CMD'));
    expect(ops.indexOf('USER')).to.be.below(ops.indexOf('HEALTHCHECK'));
  });

  it('env for the data directory and port, the data directory a VOLUME owned by that user, the port EXPOSEd', () => {
    expect(vars.HOST).to.equal('0.0.0.0');
    expect(vars.KNOWLEDGE_DATA_DIR).to.equal('/data');
    expect(JSON.parse(all(runtime, 'VOLUME')[0] as string)).to.deep.equal([vars.KNOWLEDGE_DATA_DIR]);
    expect(all(runtime, 'RUN').join('\n')).to.include(`chown node:node ${vars.KNOWLEDGE_DATA_DIR}`);
    expect(all(runtime, 'EXPOSE')).to.deep.equal([vars.PORT]);
  });

  it('HEALTHCHECK asks /healthz with node (no curl in the slim image): 0 while the server answers, 1 when it does not', async () => {
    const check = all(runtime, 'HEALTHCHECK')[0] as string;
    const [, options, json] = /^(.*?)CMD (\[.*\])$/.exec(check) as RegExpExecArray;
    expect(options).to.match(/--interval=\d+s --timeout=\d+s --start-period=\d+s --retries=\d+/);
    const [node, ...args] = JSON.parse(json as string) as string[];
    expect(node).to.equal('node');
    expect(args.join(' ')).to.include('/healthz');
    const server = await startTestServer();
    const port = new URL(server.url).port;
    try {
      await run(process.execPath, args, { env: { ...process.env, PORT: port } });
    } finally {
      await server.close();
    }
    const down = await run(process.execPath, args, { env: { ...process.env, PORT: port } }).then(() => 0, (err: { code: number }) => err.code);
    expect(down).to.equal(1);
  });

  it('.dockerignore keeps the checkout\'s node_modules, dist, data and .git out of the build context', () => {
    const ignored = readFileSync(join(ROOT, '.dockerignore'), 'utf8').split('\n').map((l) => l.trim());
    for (const entry of ['node_modules', 'dist', 'data', '.git', '*.tgz']) expect(ignored, entry).to.include(entry);
  });
});
