import { expect } from 'chai';
import { createTwoFilesPatch } from 'diff';
import { effectiveRequirement } from '../../src/dashboard/client/access.js';
import { ApiError } from '../../src/dashboard/client/apiError.js';
import { encodePath } from '../../src/dashboard/client/urlPath.js';
import { diffHunks, diffStats, sideBySide } from '../../src/dashboard/client/diff.js';
import { snippetParts } from '../../src/dashboard/client/snippet.js';
import { buildTree, filterPaths } from '../../src/dashboard/client/tree.js';
import { ancestorFolders } from '../../src/domain/paths.js';
import { clip } from '../../src/storage/search/searchIndex.js';

/** The dashboard's pure parts (no DOM), against what the server really sends. */
describe('Dashboard logic: diff parsing, the folder tree, inherited requirements, search snippets', () => {
  describe('diffHunks / sideBySide', () => {
    // The server's diff is createTwoFilesPatch from the same `diff` package (src/domain/history.ts).
    const patch = (a: string, b: string): string => createTwoFilesPatch('a/x.md', 'b/x.md', a, b, 'version 1', 'version 2');

    it('numbers old and new lines across hunks, skipping the file header', () => {
      const a = Array.from({ length: 20 }, (_, i) => `line ${i + 1}`).join('\n') + '\n';
      const b = a.replace('line 2\n', 'line two\n').replace('line 18\n', '');
      const hunks = diffHunks(patch(a, b));
      expect(hunks).to.have.length(2);
      const first = hunks[0]?.lines ?? [];
      expect(first.find((l) => l.kind === 'del')).to.deep.equal({ kind: 'del', text: 'line 2', oldNo: 2 });
      expect(first.find((l) => l.kind === 'add')).to.deep.equal({ kind: 'add', text: 'line two', newNo: 2 });
      const second = hunks[1]?.lines ?? [];
      expect(second.find((l) => l.kind === 'del')).to.deep.equal({ kind: 'del', text: 'line 18', oldNo: 18 });
      const after = second[second.indexOf(second.find((l) => l.kind === 'del') as never) + 1];
      expect(after).to.deep.equal({ kind: 'context', text: 'line 19', oldNo: 19, newNo: 18 });
      expect(diffStats(hunks)).to.deep.equal({ added: 1, removed: 2 });
    });

    it('keeps "no newline at end of file" as a note, and an identical pair has no hunks', () => {
      const hunks = diffHunks(patch('a\n', 'a\nb'));
      expect(hunks[0]?.lines.map((l) => l.kind)).to.deep.equal(['context', 'add', 'note']);
      expect(hunks[0]?.lines[2]?.text).to.equal('No newline at end of file');
      expect(diffHunks(patch('same\n', 'same\n'))).to.deep.equal([]);
    });

    it('pairs a run of deletions with the run of additions after it, context on both sides', () => {
      const [hunk] = diffHunks(patch('keep\nold 1\nold 2\nold 3\nend\n', 'keep\nnew 1\nend\n'));
      const rows = sideBySide(hunk as never).map((r) => [r.left?.text ?? null, r.right?.text ?? null]);
      expect(rows).to.deep.equal([
        ['keep', 'keep'],
        ['old 1', 'new 1'],
        ['old 2', null],
        ['old 3', null],
        ['end', 'end'],
      ]);
    });
  });

  describe('buildTree / filterPaths / ancestorFolders', () => {
    it('nests folders, counts items below each, sorts folders before items', () => {
      const tree = buildTree(['readme.md', 'docs/b.md', 'docs/a.md', 'docs/api/ref.md', 'alpha/x.md']);
      expect(tree.count).to.equal(5);
      expect(tree.folders.map((f) => [f.path, f.count])).to.deep.equal([
        ['alpha', 1],
        ['docs', 3],
      ]);
      const docs = tree.folders[1];
      expect(docs?.folders.map((f) => f.path)).to.deep.equal(['docs/api']);
      expect(docs?.items.map((i) => i.path)).to.deep.equal(['docs/a.md', 'docs/b.md']);
      expect(tree.items.map((i) => i.name)).to.deep.equal(['readme.md']);
    });

    it('filters by every word, case-insensitively', () => {
      const paths = ['docs/guide.md', 'docs/api/ref.md', 'notes/guide.txt'];
      expect(filterPaths(paths, 'GUIDE docs')).to.deep.equal(['docs/guide.md']);
      expect(filterPaths(paths, '  ')).to.deep.equal(paths);
    });

    it('lists the folders above a path, outermost first', () => {
      expect(ancestorFolders('a/b/c.md')).to.deep.equal(['a', 'a/b']);
      expect(ancestorFolders('top.md')).to.deep.equal([]);
    });
  });

  describe('effectiveRequirement (as the server resolves inherit)', () => {
    const rules = [
      { folder: 'a', requiredReadPermission: 'knowledge:write', requiredWritePermission: 'inherit', updatedAt: null },
      { folder: 'a/b', requiredReadPermission: 'inherit', requiredWritePermission: 'knowledge:admin', updatedAt: null },
    ];
    it('takes the item\'s own value, else the nearest folder rule for that kind, else the default', () => {
      expect(effectiveRequirement({ requirement: 'knowledge:admin', path: 'a/b/c.md', kind: 'read', rules })).to.deep.equal({
        permission: 'knowledge:admin',
        from: 'set on the item',
      });
      expect(effectiveRequirement({ requirement: 'inherit', path: 'a/b/c.md', kind: 'read', rules })).to.deep.equal({
        permission: 'knowledge:write',
        from: 'folder rule of a/',
        folder: 'a',
      });
      expect(effectiveRequirement({ requirement: 'inherit', path: 'a/b/c.md', kind: 'write', rules })).to.include({ permission: 'knowledge:admin', folder: 'a/b' });
      expect(effectiveRequirement({ requirement: null, path: 'z/c.md', kind: 'write', rules })).to.deep.equal({
        permission: 'knowledge:write',
        from: 'organization default',
      });
    });
  });

  describe('snippetParts', () => {
    const marked = (snippet: string): string[] => snippetParts(snippet).filter((p) => p.marked).map((p) => p.text);

    it('splits a snippet into text and the matches the server marked, without the markers', () => {
      expect(snippetParts('…simmer «tomatoes» with basil and «garlic» for…')).to.deep.equal([
        { text: '…simmer ', marked: false },
        { text: 'tomatoes', marked: true },
        { text: ' with basil and ', marked: false },
        { text: 'garlic', marked: true },
        { text: ' for…', marked: false },
      ]);
      expect(snippetParts('«tomato sauce»')).to.deep.equal([{ text: 'tomato sauce', marked: true }]);
      expect(snippetParts('no match in the content')).to.deep.equal([{ text: 'no match in the content', marked: false }]);
      expect(snippetParts('')).to.deep.equal([]);
    });

    it('keeps the content\'s own « and » as text: only markers around a match count', () => {
      // SQLite marks "tomato" in content that quotes it in guillemets already.
      expect(snippetParts('he said ««tomato»» twice')).to.deep.equal([
        { text: 'he said «', marked: false },
        { text: 'tomato', marked: true },
        { text: '» twice', marked: false },
      ]);
      expect(marked('a « b «basil» c » d')).to.deep.equal(['basil']);
      expect(snippetParts('«» and » and «')).to.deep.equal([{ text: '«» and » and «', marked: false }]);
    });

    it('takes markup as text: a part is never HTML', () => {
      expect(snippetParts('<img src=x onerror=alert(1)> «tomato»')).to.deep.equal([
        { text: '<img src=x onerror=alert(1)> ', marked: false },
        { text: 'tomato', marked: true },
      ]);
    });

    it('still pairs the marks of a snippet the server clipped in the middle of a match', () => {
      const long = `${'word '.repeat(58)}«tomatoes» and more`;
      const clipped = clip(long);
      expect(clipped.length).to.be.at.most(300);
      const parts = snippetParts(clipped);
      expect(parts.map((p) => p.text).join('')).to.not.match(/[«»]/);
      expect(parts.at(-2)?.marked).to.equal(true);
      expect(parts.at(-1)).to.deep.equal({ text: '…', marked: false });
    });
  });
});

describe('dashboard: item paths in URLs', () => {
  it('encodes each segment and keeps the slashes', () => {
    expect(encodePath('docs/a b/c#d.md')).to.equal('docs/a%20b/c%23d.md');
  });

  it('refuses a . or .. segment with the server\'s message, which fetch would resolve to another path', () => {
    for (const path of ['docs/../plan.md', './plan.md', 'a/./b.md', '..']) {
      expect(() => encodePath(path), path).to.throw(ApiError, 'Invalid path: no segment may be empty or start with "."');
    }
  });
});
