import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { SERVER_ENV } from '../bench/processes.js';
import { ROOT } from '../support/child.js';
import { codeBlocks, markedSection, README } from '../support/readme.js';

const run = promisify(execFile);

/**
 * Every way this project starts its server gives glibc two malloc arenas unless the operator chose otherwise:
 * with glibc's default (eight per core) the arenas V8's helper threads malloc in keep ~65 MiB they freed, which
 * is most of what the search index seemed to add to the RSS (README: Configuration). A process cannot set it for
 * itself (glibc reads it before main), so the launchers do: `npm start`, the Docker image, the README's systemd
 * unit, and the bench, which measures what they run.
 */
describe('launchers: the server starts with MALLOC_ARENA_MAX=2', function () {
  this.timeout(20_000);
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> };

  it("npm start: 2 unless the operator's environment sets it, then the operator's value (the script run by sh)", async () => {
    const m = /^(MALLOC_ARENA_MAX=\S+) (node dist\/src\/cli\/main\.js serve)$/.exec(pkg.scripts.start ?? '');
    expect(m, pkg.scripts.start).to.not.equal(null);
    // The script's own assignment in front of a node that prints what it was given (npm runs scripts with sh -c).
    const probe = `${(m as RegExpExecArray)[1]} "${process.execPath}" -e "process.stdout.write(String(process.env.MALLOC_ARENA_MAX))"`;
    const { MALLOC_ARENA_MAX: _ignored, ...rest } = process.env;
    expect((await run('sh', ['-c', probe], { env: rest })).stdout).to.equal('2');
    expect((await run('sh', ['-c', probe], { env: { ...rest, MALLOC_ARENA_MAX: '4' } })).stdout).to.equal('4');
  });

  it("the Docker image's ENV", () => {
    const env = readFileSync(join(ROOT, 'Dockerfile'), 'utf8').split('\n').filter((l) => /^ENV\s/.test(l));
    expect(env.join('\n')).to.match(/\sMALLOC_ARENA_MAX=2(\s|$)/);
  });

  it("the README's systemd unit (an EnvironmentFile may still override it)", () => {
    const unit = codeBlocks(markedSection(README, 'systemd-unit'))[0]?.code ?? '';
    const environment = [...unit.matchAll(/^Environment=(.*)$/gm)].map((x) => x[1] as string).join(' ');
    expect(environment.split(/\s+/)).to.include('MALLOC_ARENA_MAX=2');
    // systemd reads EnvironmentFile= after Environment=: the operator's file wins.
    expect(unit).to.match(/^EnvironmentFile=/m);
  });

  it("the bench's servers", () => {
    expect(SERVER_ENV.MALLOC_ARENA_MAX).to.equal('2');
  });
});
