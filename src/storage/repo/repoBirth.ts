import { hideCredentials } from '../../common/redact.js';
import type { FsPromises } from '../fs/fs.js';
import type { GitCli } from '../git/gitCli.js';
import { ObjectStager } from '../git/objectStager.js';
import { compareAndSwapRef, MAIN_REF } from '../git/refs.js';
import { TreeEditor } from '../git/treeEditor.js';
import { stageCommit } from './commitBuilder.js';
import { LAYOUT, STORE_CONFIG } from './itemRecord.js';

/**
 * How an organization's repository comes to be, in a directory of its own that OrgStore then moves into place:
 * made new, or cloned from elsewhere for `org import`.
 */

/** A new bare repository at `gitdir` whose `main` has one commit, holding the store's format marker. */
export async function writeFirstCommit(args: { fs: FsPromises; gitdir: string; orgId: string; now: Date }): Promise<void> {
  const { fs, gitdir } = args;
  // Loaded here, by the one call that uses it (a new organization), not by every start: its bundle is ~0.1 s of
  // module loading (README, "What `serve` costs to start").
  const { default: git } = await import('isomorphic-git');
  await git.init({ fs: { promises: fs }, dir: gitdir, gitdir, bare: true, defaultBranch: 'main' });
  const stager = new ObjectStager();
  const blob = stager.writeBlob(Buffer.from(`${JSON.stringify(STORE_CONFIG, null, 2)}\n`, 'utf8'));
  const { commitId } = await stageCommit({
    trees: new TreeEditor(async () => []),
    stager,
    root: null,
    head: null,
    changes: [{ path: LAYOUT.configPath, oid: blob }],
    author: { name: 'knowledge-store', email: 'knowledge-store' },
    when: args.now,
    message: `Create organization ${args.orgId}\n`,
  });
  await stager.flush(fs, gitdir);
  await compareAndSwapRef({ fs, gitdir, expected: null, next: commitId });
}

/**
 * Clones `source` (a git URL or path) bare into `gitdir`, keeping only `main`, and says what makes it unfit (none:
 * an empty list). Objects are checked on receipt (transfer.fsckObjects: no `.git` or `..` tree entries), and the
 * remote is removed: its URL may hold a key.
 */
export async function cloneMainOnly(args: { git: GitCli; source: string; gitdir: string }): Promise<string[]> {
  const { source, gitdir } = args;
  const local = !/^[a-z][a-z0-9+.-]*:\/\//i.test(source);
  const clone = await args.git.run([
    '-c', 'transfer.fsckObjects=true',
    '-c', 'protocol.file.allow=always',
    'clone', '--bare', '--quiet', ...(local ? ['--no-local'] : []), '--', source, gitdir,
  ]);
  if (clone.code !== 0) return [`git clone failed: ${hideCredentials(clone.output.trim(), source)}`];
  const run = (...argv: string[]): Promise<{ code: number; output: string }> => args.git.run(['--git-dir', gitdir, ...argv]);
  await run('remote', 'remove', 'origin');
  const main = await run('rev-parse', '--verify', '--quiet', `${MAIN_REF}^{commit}`);
  if (main.code !== 0) return ['the source has no branch main'];
  await run('symbolic-ref', 'HEAD', MAIN_REF);
  const refs = (await run('for-each-ref', '--format=%(refname)')).output.split('\n').filter((r) => r && r !== MAIN_REF);
  for (const ref of refs) await run('update-ref', '-d', ref);
  return [];
}
