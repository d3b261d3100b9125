import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import fc from 'fast-check';
import git from 'isomorphic-git';
import { blobObject, commitObject, treeObject } from '../../../src/storage/git/objectFormat.js';
import type { TreeEntry } from '../../../src/storage/git/objectFormat.js';
import { memoryFs } from '../../support/memfs.js';

/**
 * The store serializes git objects itself (for speed; see README, Performance). isomorphic-git's
 * writers are the oracle: on random input both must give the same ids, so
 * every commit the store wrote before keeps its id and the pinned fixture
 * still matches.
 */

const GITDIR = '/oracle.git';
const hex40 = fc.uint8Array({ minLength: 20, maxLength: 20 }).map((b) => Buffer.from(b).toString('hex'));
const name = fc.stringMatching(/^[a-zA-Z0-9._-]{1,12}$/).filter((n) => n !== '.' && n !== '..');
const entry = fc.record({ path: name, oid: hex40, folder: fc.boolean() }).map(
  ({ path, oid, folder }): TreeEntry => (folder ? { mode: '040000', path, oid, type: 'tree' } : { mode: '100644', path, oid, type: 'blob' }),
);
const entries = fc.uniqueArray(entry, { selector: (e) => e.path, maxLength: 30 });
const text = fc.string({ unit: 'binary', maxLength: 200 });

describe('storage/objectFormat: the same bytes as isomorphic-git', () => {
  const fs = { promises: memoryFs().fs };

  it('blobs', async () => {
    await fc.assert(
      fc.asyncProperty(fc.uint8Array({ maxLength: 3000 }), async (bytes) => {
        expect(blobObject(bytes).oid).to.equal(await git.writeBlob({ fs, gitdir: GITDIR, blob: bytes }));
      }),
      { numRuns: 200 },
    );
  });

  it('trees, in git order, folders as "40000"', async () => {
    await fc.assert(
      fc.asyncProperty(entries, async (list) => {
        expect(treeObject(list).oid).to.equal(await git.writeTree({ fs, gitdir: GITDIR, tree: list }));
      }),
      { numRuns: 300 },
    );
    // The case that sorting by plain name gets wrong: "a" the folder sorts as "a/", after "a.md".
    const folderA: TreeEntry = { mode: '040000', path: 'a', oid: 'f'.repeat(40), type: 'tree' };
    const fileA: TreeEntry = { mode: '100644', path: 'a.md', oid: 'e'.repeat(40), type: 'blob' };
    const body = treeObject([folderA, fileA]).body.toString('latin1');
    expect(body.indexOf('a.md')).to.be.lessThan(body.indexOf('40000 a\0'));
  });

  it('commits, with messages normalized the same way', async () => {
    await fc.assert(
      fc.asyncProperty(
        hex40,
        fc.array(hex40, { maxLength: 2 }),
        fc.record({ name: fc.stringMatching(/^[^<>\n]{1,20}$/), email: fc.stringMatching(/^[^<>\n]{1,20}$/), timestamp: fc.integer({ min: 0, max: 2 ** 32 }) }),
        text,
        async (tree, parents, author, message) => {
          const ours = commitObject({ tree, parents, author, message }).oid;
          const signature = { ...author, timezoneOffset: 0 };
          const theirs = await git.writeCommit({ fs, gitdir: GITDIR, commit: { tree, parent: parents, author: signature, committer: signature, message } });
          expect(ours).to.equal(theirs);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('trees with names beyond ASCII are in C git\'s byte order (git mktree is the judge)', () => {
    // U+E000 sorts after a surrogate pair in UTF-16 but before it in UTF-8: string order would be wrong.
    const names = ['\u{1F600}.md', '\uE000.md', 'é.md', 'e.md', 'z', '\u{1F600}', 'a'];
    const list: TreeEntry[] = names.map((path, i) =>
      i % 3 === 2 ? { mode: '040000', path, oid: '4b825dc642cb6eb9a060e54bf8d69288fbee4904', type: 'tree' } : { mode: '100644', path, oid: 'e69de29bb2d1d6434b8b29ae775ad8c2e48c5391', type: 'blob' },
    );
    const input = list.map((e) => `${e.mode} ${e.type} ${e.oid}\t${e.path}\n`).join('');
    const dir = mkdtempSync(join(tmpdir(), 'mktree-'));
    let gitOid: string;
    try {
      execFileSync('git', ['init', '-q', '--bare', dir]);
      gitOid = execFileSync('git', ['--git-dir', dir, 'mktree', '--missing'], { input }).toString().trim();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    expect(treeObject(list).oid).to.equal(gitOid);
    expect(treeObject([...list].reverse()).oid).to.equal(gitOid);
  });
});
