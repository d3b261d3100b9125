import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { expect } from 'chai';
import { api } from './support/server.js';
import { CLI, ROOT, cliServer } from './support/cliRun.js';

/**
 * What the CLI does when a terminal stands where a pipe was meant (README, The command line): `item put`, `item
 * commit` and `item upload` without --file refuse to wait for typed input, and `item download` refuses to write a
 * file's bytes to the terminal; each exits 2, says what to give instead, and changes nothing. The terminal is a
 * real pseudo-terminal, made by util-linux's `script`, which runs the command with it as stdin, stdout and stderr.
 */
const SCRIPT = '/usr/bin/script';

/** The CLI under a pseudo-terminal: what it wrote to it (stdout and stderr together) and its exit code. */
function onTerminal(args: string[], env: Record<string, string>): Promise<{ code: number; output: string }> {
  const quoted = [process.execPath, CLI, ...args].map((a) => `'${a.replace(/'/g, `'\\''`)}'`).join(' ');
  return new Promise((resolve, reject) => {
    // -q: no start and end lines; -e: the command's exit code; -c: the command; /dev/null: no typescript file.
    const child = execFile(SCRIPT, ['-qec', quoted, '/dev/null'], { cwd: ROOT, env: { ...process.env, ...env, LOG_LEVEL: '' }, timeout: 20_000 }, (err, stdout) => {
      if (err && typeof err.code !== 'number') reject(err);
      else resolve({ code: err ? Number(err.code) : 0, output: stdout.replace(/\r\n/g, '\n') });
    });
    child.stdin?.end();
  });
}

describe('cli on a terminal: no waiting for typed input, no bytes to the screen', function () {
  this.timeout(60_000);
  const cs = cliServer();
  let env: Record<string, string>;

  before(function () {
    if (!existsSync(SCRIPT)) {
      // .ci/run installs util-linux (bsdutils carries script); elsewhere it may be missing.
      if (process.env.CI) throw new Error(`${SCRIPT} is missing: .ci/run should have installed it`);
      this.skip();
    }
    env = { KNOWLEDGE_URL: cs.server.url, KNOWLEDGE_KEY: cs.server.adminKey };
  });

  it('item put, item commit and item upload without --file: exit 2, what to give instead, nothing written', async () => {
    const cases: Array<[string[], RegExp]> = [
      [['item', 'put', 'tty/a.md'], /give the content with --file <file> or on stdin/],
      [['item', 'commit'], /with --file <file> or on stdin/],
      [['item', 'upload', 'tty/b.pdf', '--type', 'application/pdf'], /give the file with --file <file> or on stdin/],
    ];
    for (const [args, message] of cases) {
      const run = await onTerminal(args, env);
      expect(run.code, `${args.join(' ')}: ${run.output}`).to.equal(2);
      expect(run.output, args.join(' ')).to.match(message);
    }
    for (const path of ['tty/a.md', 'tty/b.pdf']) {
      expect((await api(`${cs.server.url}/api/v1/knowledge/items/${path}`, { key: cs.server.adminKey })).status, path).to.equal(404);
    }
  });

  it('item download to the terminal: exit 2 and how to save it instead; piped, the bytes come', async () => {
    await cs.ok(['item', 'upload', 'tty/c.txt', '--type', 'text/plain'], { input: Buffer.from('bytes of c\n') });
    const run = await onTerminal(['item', 'download', 'tty/c.txt'], env);
    expect(run.code, run.output).to.equal(2);
    expect(run.output).to.match(/the file's bytes would go to the terminal: give --output <file> or redirect stdout/);
    expect(run.output).to.not.include('bytes of c');
    const piped = await cs.ok(['item', 'download', 'tty/c.txt']);
    expect(piped).to.equal('bytes of c\n');
  });
});
