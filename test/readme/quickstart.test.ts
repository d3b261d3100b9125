import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { expect } from 'chai';
import { ensureBuilt, killAllChildren, ROOT, spawnServe, type ServeChild } from '../support/child.js';
import { tmpDir } from '../support/tmp.js';
import { codeBlocks, markedSection, README } from '../support/readme.js';

/**
 * Issue 16: the README's quick start is a script that works. Its sh blocks (between the quickstart
 * markers) run in order, in one bash with `set -euo pipefail`, against a real server on a fresh data
 * directory, with KNOWLEDGE_URL and KNOWLEDGE_KEY set as the README tells the reader to set them.
 * A step that exits non-zero fails, and so does output no step should print: an error answer
 * (`"success":false`), an HTTP status other than 2xx, anything on stderr, or a curl with no answer.
 */

const MARK = '@@quickstart-block@@';

describe('README: the top of the page and the quick start', function () {
  this.timeout(90_000);

  it('starts with npm install, then npm start, then npm test', () => {
    const first = codeBlocks(README)[0];
    const commands = first?.code.split('\n').map((line) => line.replace(/#.*/, '').trim()).filter(Boolean);
    expect(commands).to.deep.equal(['npm install', 'npm start', 'npm test']);
  });

  describe('the quick start, run in order against a real server', () => {
    let tmp: { dir: string; cleanup: () => Promise<void> };
    let server: ServeChild;
    const blocks = codeBlocks(markedSection(README, 'quickstart')).filter((b) => b.lang === 'sh');
    const outputs: string[] = [];

    before(async () => {
      await ensureBuilt();
      tmp = await tmpDir('ks-quickstart');
      server = await spawnServe(join(tmp.dir, 'data'));
    });
    after(async () => {
      await killAllChildren();
      await tmp.cleanup();
    });

    it('the reader sets exactly KNOWLEDGE_URL and KNOWLEDGE_KEY before it (what this test sets)', () => {
      expect(blocks.length).to.be.greaterThan(0);
      const before = README.slice(0, README.indexOf('<!-- quickstart:begin'));
      const setup = codeBlocks(before).filter((b) => b.lang === 'sh').pop()?.code.trim() ?? '';
      expect(setup).to.match(/^export KNOWLEDGE_URL=http:\/\/127\.0\.0\.1:3000 KNOWLEDGE_KEY=ks_\S+ +# /);
    });

    it('every block runs with bash, in order, and every call succeeds', async () => {
      const script = ['set -euo pipefail', ...blocks.map((b, i) => `printf '\\n${MARK}${i}\\n'\n${b.code}`)].join('\n');
      const { code, stdout, stderr } = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
        const proc = spawn('bash', ['-c', script], {
          cwd: ROOT,
          env: { ...process.env, KNOWLEDGE_URL: server.url, KNOWLEDGE_KEY: server.adminKey as string },
          stdio: ['ignore', 'pipe', 'pipe'],
        });
        let out = '';
        let err = '';
        proc.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
        proc.stderr.setEncoding('utf8').on('data', (d: string) => (err += d));
        proc.once('exit', (c) => resolve({ code: c, stdout: out, stderr: err }));
      });
      outputs.push(...stdout.split(new RegExp(`\\n${MARK}\\d+\\n`)).slice(1));
      expect(code, `bash exited ${code}\nstdout:\n${stdout}\nstderr:\n${stderr}`).to.equal(0);
      // npm's own warnings about this machine's configuration (npx) are not the quick start's.
      expect(stderr.replace(/^npm warn .*\n/gm, ''), 'stderr').to.equal('');
      expect(outputs).to.have.length(blocks.length);

      blocks.forEach((block, i) => {
        const out = outputs[i] as string;
        const context = `block ${i + 1}:\n${block.code}\noutput:\n${out}`;
        expect(out, context).to.not.include('"success":false');
        for (const [, status] of out.matchAll(/^HTTP\/[\d.]+ (\d{3})/gm)) expect(Number(status), context).to.be.within(200, 299);
        // One answer per curl that prints (a curl inside $(...) hands its answer to the shell instead).
        const printing = block.code.split('\n').filter((line) => /^curl /.test(line)).length;
        expect(out.match(/\{"success":true/g)?.length ?? 0, context).to.equal(printing);
      });
    });

    it('the answers say what the README says they do', () => {
      const all = outputs.join('');
      // The change feed since the sync started: the guide, created.
      expect(all).to.match(/"changes":\[\{"id":"[0-9a-f-]{36}","path":"docs\/guide\.md","change":"created"/);
      // Two versions in its history; the diff adds the line.
      expect(all).to.include('"message":"Say where to start"');
      expect(all).to.include('+Start here.');
      // Deleted, in the trash, restored: the CLI lists it again.
      // (curl prints no newline after an answer, so the CLI's line follows the last answer on its line.)
      expect(outputs.at(-1), outputs.at(-1)).to.match(/\}docs\/guide\.md\t\S+\n$/);
    });
  });
});
