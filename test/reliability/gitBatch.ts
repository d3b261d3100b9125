import { spawn } from 'node:child_process';

/**
 * `git cat-file --batch` over many object names at once (`main:<path>` and the like): one C git process
 * instead of one `git show` per path, so a check of thousands of paths stays fast. An absent name maps to
 * null; a present one to its content.
 */
export function catFileBatch(gitdir: string, names: string[]): Promise<Map<string, Buffer | null>> {
  return new Promise((resolve, reject) => {
    const proc = spawn('git', ['--git-dir', gitdir, 'cat-file', '--batch'], { stdio: ['pipe', 'pipe', 'pipe'] });
    const chunks: Buffer[] = [];
    let stderr = '';
    proc.stdout.on('data', (d: Buffer) => chunks.push(d));
    proc.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    proc.on('error', reject);
    proc.on('close', (code) => {
      if (code !== 0) return reject(new Error(`git cat-file --batch exited ${code}: ${stderr}`));
      const out = Buffer.concat(chunks);
      const result = new Map<string, Buffer | null>();
      let at = 0;
      for (const name of names) {
        const eol = out.indexOf(0x0a, at);
        if (eol < 0) return reject(new Error(`git cat-file --batch: output ends before ${name}`));
        const header = out.subarray(at, eol).toString('utf8');
        at = eol + 1;
        if (header.endsWith(' missing') || header.endsWith(' ambiguous')) {
          result.set(name, null);
          continue;
        }
        const size = Number(header.split(' ')[2]);
        if (!Number.isInteger(size)) return reject(new Error(`git cat-file --batch: unexpected header ${JSON.stringify(header)}`));
        result.set(name, out.subarray(at, at + size));
        at += size + 1; // the content, then a newline
      }
      resolve(result);
    });
    proc.stdin.end(names.map((n) => `${n}\n`).join(''));
  });
}
