import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { expect } from 'chai';
import { ROOT } from '../support/child.js';

/**
 * The hold on V8's young generation (src/common/youngGeneration.ts), in a fresh node process each
 * (this one's young generation has long grown): a load that keeps what it allocates, held, leaves
 * the young generation at its size; released, V8 grows it again; an operator's own factor is left alone.
 */

const MODULE = pathToFileURL(join(ROOT, 'src/common/youngGeneration.ts')).href;

/** Runs a load keeping ~60 MiB of small objects in a fresh process; the young generation's size after it, in MiB. */
function youngAfterLoad(how: 'held' | 'released' | 'free', nodeArgs: string[] = []): Promise<number> {
  const script = `
    const { holdYoungGeneration, withoutYoungGrowth } = await import(${JSON.stringify(MODULE)});
    const { getHeapSpaceStatistics } = await import('node:v8');
    const keep = [];
    const load = async () => { for (let i = 0; i < 600000; i++) keep.push({ i, s: 'item-' + i }); };
    const how = ${JSON.stringify(how)};
    if (how === 'held') await withoutYoungGrowth(load);
    else if (how === 'released') { holdYoungGeneration()(); await load(); }
    else await load();
    const young = getHeapSpaceStatistics().find((s) => s.space_name === 'new_space');
    process.stdout.write(String(young.space_size / 2 ** 20));
  `;
  return new Promise((resolve, reject) => {
    execFile(process.execPath, [...nodeArgs, '--import', 'tsx', '--input-type=module', '-e', script], { cwd: ROOT }, (err, stdout, stderr) => {
      if (err) reject(new Error(`${err.message}\n${stderr}`));
      else resolve(Number(stdout));
    });
  });
}

describe('common/youngGeneration: a load held from growing the young generation', function () {
  this.timeout(60_000);

  it('held, a load that keeps what it allocates leaves the young generation at its size; not held, V8 grows it', async () => {
    const held = await youngAfterLoad('held');
    const free = await youngAfterLoad('free');
    expect(held).to.be.at.most(4);
    expect(free).to.be.at.least(16);
  });

  it('released, V8 grows it as before', async () => {
    expect(await youngAfterLoad('released')).to.be.at.least(16);
  });

  it('leaves alone a factor the operator set', async () => {
    expect(await youngAfterLoad('held', ['--semi-space-growth-factor=2'])).to.be.at.least(16);
  });
});
