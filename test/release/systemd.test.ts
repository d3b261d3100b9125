import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { codeBlocks, markedSection, README } from '../support/readme.js';
import { tmpDir } from '../support/tmp.js';

const run = promisify(execFile);
const ANALYZE = '/usr/bin/systemd-analyze';

/**
 * The README's systemd unit, as a reader would copy it: `systemd-analyze verify` must pass it without a
 * word (it reports unknown keys and bad values as warnings, exit 0, so any output fails), and it keeps
 * the hardening the README promises. .ci/run installs systemd where the image lacks it.
 */
describe('README: the systemd unit', function () {
  this.timeout(30_000);
  const blocks = codeBlocks(markedSection(README, 'systemd-unit'));
  const unit = blocks[0]?.code ?? '';
  const settings = (key: string): string[] => [...unit.matchAll(new RegExp(`^${key}=(.*)$`, 'gm'))].map((m) => m[1] as string);

  it('is one ini block', () => {
    expect(blocks.map((b) => b.lang)).to.deep.equal(['ini']);
  });

  it('is hardened: its own user, a state directory for the data, no new privileges, a read-only system, restarts on failure, an env file', () => {
    expect(settings('User')).to.deep.equal(['knowledge-store']);
    expect(settings('StateDirectory')).to.deep.equal(['knowledge-store']);
    expect(settings('Environment').join(' ')).to.include('KNOWLEDGE_DATA_DIR=/var/lib/knowledge-store');
    expect(settings('NoNewPrivileges')).to.deep.equal(['yes']);
    expect(settings('ProtectSystem')).to.deep.equal(['strict']);
    expect(settings('Restart')).to.deep.equal(['on-failure']);
    expect(settings('EnvironmentFile')).to.deep.equal(['-/etc/knowledge-store/env']);
    expect(settings('ExecStart')).to.deep.equal(['/usr/bin/node /opt/knowledge-store/dist/src/cli/main.js serve']);
    expect(settings('WorkingDirectory')).to.deep.equal(['/opt/knowledge-store']);
  });

  it('systemd-analyze verify passes it, with nothing to say', async function () {
    if (!existsSync(ANALYZE)) {
      // .ci/run installs systemd; elsewhere (macOS, a minimal image) the tool cannot be had.
      if (process.env.CI) throw new Error(`${ANALYZE} is missing: .ci/run should have installed systemd`);
      this.skip();
    }
    const tmp = await tmpDir('ks-systemd');
    try {
      // The unit names /usr/bin/node, as Debian installs it; verify checks that ExecStart's program exists,
      // so where node is elsewhere here, the one running this test stands in for it.
      const file = join(tmp.dir, 'knowledge-store.service');
      const text = existsSync('/usr/bin/node') ? unit : unit.replace('ExecStart=/usr/bin/node ', `ExecStart=${process.execPath} `);
      await writeFile(file, text);
      const { stdout, stderr } = await run(ANALYZE, ['verify', file]);
      expect(stdout + stderr).to.equal('');
    } finally {
      await tmp.cleanup();
    }
  });
});
