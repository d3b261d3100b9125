import { expect } from 'chai';
import fc from 'fast-check';
import { InvalidPath } from '../../src/domain/errors.js';
import { ancestorFolders, checkPathRules, isPlainPath, MAX_DIRECTORY_DEPTH, MAX_PATH_LENGTH, validateFolderPrefix, validatePath } from '../../src/domain/paths.js';

/** The path rules (see README, Paths): each rule, with the message that names it. */

function refusal(fn: () => unknown): InvalidPath {
  try {
    fn();
  } catch (err) {
    expect(err).to.be.instanceOf(InvalidPath);
    return err as InvalidPath;
  }
  expect.fail('expected an InvalidPath error');
}

const TRAILING_DOT = 'Invalid path: no segment may end with "."';
const DEVICE = 'Invalid path: no segment may be a Windows device name (con, prn, aux, nul, com0-com9, lpt0-lpt9)';
const DASH = 'Invalid path: no segment may start with "-"';
const CHARSET = 'Invalid path: only lowercase letters, digits, "-", "_", "/" and "." are allowed';

describe('domain/paths', () => {
  describe('validatePath refuses, naming the rule', () => {
    const cases: Array<[string, string, string]> = [
      ['an empty path', '', 'Invalid path: must not be empty'],
      ['256 characters', `${'a'.repeat(253)}.md`, 'Invalid path: must be at most 255 characters'],
      ['a very long path', `${'a/'.repeat(200)}b.md`, 'Invalid path: must be at most 255 characters'],
      ['an uppercase letter', 'Docs/guide.md', CHARSET],
      ['an uppercase extension', 'guide.MD', CHARSET],
      ['a space', 'my guide.md', CHARSET],
      ['a backslash', 'docs\\guide.md', CHARSET],
      ['a percent sign (an undecoded %2F)', 'docs%2Fguide.md', CHARSET],
      ['a non-ASCII letter', 'caf\u00e9.md', CHARSET],
      ['a trailing newline', 'guide.md\n', CHARSET],
      ['a NUL byte', 'guide\u0000.md', CHARSET],
      ['a colon', 'c:guide.md', CHARSET],
      ['a leading "/"', '/docs/guide.md', 'Invalid path: must not start or end with "/"'],
      ['a trailing "/"', 'docs/guide.md/', 'Invalid path: must not start or end with "/"'],
      ['only "/"', '/', 'Invalid path: must not start or end with "/"'],
      ['an empty segment', 'docs//guide.md', 'Invalid path: must not contain an empty segment ("//")'],
      ['a "." segment', 'docs/./guide.md', 'Invalid path: must not contain "." or ".." segments'],
      ['a ".." segment', 'docs/../guide.md', 'Invalid path: must not contain "." or ".." segments'],
      ['the path ".."', '..', 'Invalid path: must not contain "." or ".." segments'],
      ['a ".trash/" path', '.trash/guide.md', 'Invalid path: no segment may start with "."'],
      ['a ".knowledge/" path', '.knowledge/items/guide.md', 'Invalid path: no segment may start with "."'],
      ['a ".git" segment', 'docs/.git/config.md', 'Invalid path: no segment may start with "."'],
      ['a hidden file', 'docs/.guide.md', 'Invalid path: no segment may start with "."'],
      ['a segment that is only dots and letters', '..a/b.md', 'Invalid path: no segment may start with "."'],
      ['no extension', 'docs/guide', 'Invalid path: must end with a file extension'],
      ['a bare trailing dot', 'docs/guide.', 'Invalid path: must end with a file extension'],
      ['an extension with "-"', 'docs/guide.m-d', 'Invalid path: must end with a file extension'],
      ['an extension with "_"', 'docs/guide.m_d', 'Invalid path: must end with a file extension'],
      ['an extension only on a folder', 'docs.md/guide', 'Invalid path: must end with a file extension'],
      ['6 directory levels', 'a/b/c/d/e/f/g.md', 'Invalid path: at most 5 directory levels'],
      // Backups cloned onto Windows or macOS, and the shell tools an admin points at a clone.
      ['a folder ending in "." (Windows strips it)', 'a./x.md', TRAILING_DOT],
      ['a deeper folder ending in "."', 'docs/v1./x.md', TRAILING_DOT],
      ['a folder ending in ".."', 'a../x.md', TRAILING_DOT],
      ['a file named after a device', 'con.md', DEVICE],
      ['a device name with two extensions', 'nul.tar.gz', DEVICE],
      ['a device name as a folder', 'aux/x.md', DEVICE],
      ['a device name as a folder with a dot', 'prn.d/x.md', DEVICE],
      ['com1', 'docs/com1.txt', DEVICE],
      ['com9', 'com9.md', DEVICE],
      ['com0', 'com0.md', DEVICE],
      ['lpt1', 'lpt1/x.md', DEVICE],
      ['lpt9', 'a/b/lpt9.json', DEVICE],
      ['a segment starting with "-"', '-rf.md', DASH],
      ['a folder starting with "-"', 'docs/--force/x.md', DASH],
      ['a segment of dashes', '-/-.md', DASH],
    ];
    for (const [label, path, message] of cases) {
      it(`${label}: ${JSON.stringify(path.length > 40 ? `${path.slice(0, 37)}...` : path)}`, () => {
        const err = refusal(() => validatePath(path));
        expect(err.message).to.equal(message);
        expect(err.code).to.equal('INVALID_PATH');
        expect(err.data.path).to.equal(path);
        expect(`Invalid path: ${err.data.rule}`).to.equal(message);
      });
    }
  });

  describe('validatePath accepts', () => {
    const valid: Array<[string, string]> = [
      ['a simple file', 'guide.md'],
      ['exactly 255 characters', `${'a'.repeat(252)}.md`],
      ['exactly 255 characters with folders', `${'abcd/'.repeat(5)}${'x'.repeat(227)}.md`],
      ['exactly 5 directory levels', 'a/b/c/d/e/f.md'],
      ['a dot inside a folder name', 'a.b/c.md'],
      ['several dots in the file name', 'archive.tar.gz'],
      ['digits, "-" and "_"', 'v2_notes/2024-01-01.txt'],
      ['a one-character extension', 'x.c'],
      ['a digit-only extension', 'log.1'],
      ['"-" inside a segment', 'a-/b-c.md'],
      ['a device name inside a longer segment', 'console/auxiliary.md'],
      ['com and lpt without a digit, or with two', 'com/lpt10.md'],
      ['a dot before the extension only', 'a.b.c/d.md'],
    ];
    for (const [label, path] of valid) {
      it(`${label}`, () => {
        expect(validatePath(path)).to.equal(path);
      });
    }

    it('the boundaries match the constants', () => {
      expect(MAX_PATH_LENGTH).to.equal(255);
      expect(MAX_DIRECTORY_DEPTH).to.equal(5);
      expect(`${'abcd/'.repeat(5)}${'x'.repeat(227)}.md`).to.have.length(255);
    });
  });

  describe('validateFolderPrefix', () => {
    it('accepts a folder followed by "/", up to 5 levels, with dots inside names', () => {
      for (const prefix of ['docs/', 'a/b/c/d/e/', 'a.b/', 'v2_x-y/z/']) expect(validateFolderPrefix(prefix)).to.equal(prefix);
    });

    const cases: Array<[string, string, string]> = [
      ['no trailing "/"', 'docs', 'Invalid path: a prefix must end with "/"'],
      ['a file path', 'docs/guide.md', 'Invalid path: a prefix must end with "/"'],
      ['only "/"', '/', 'Invalid path: a prefix must name a folder'],
      ['a folder of 255 characters', `${'a'.repeat(255)}/`, 'Invalid path: a prefix must name a folder'],
      ['uppercase', 'Docs/', CHARSET],
      ['a space', 'my docs/', CHARSET],
      ['a leading "/"', '/docs/', 'Invalid path: no segment may be empty or start with "."'],
      ['an empty segment', 'docs//', 'Invalid path: no segment may be empty or start with "."'],
      ['the trash', '.trash/', 'Invalid path: no segment may be empty or start with "."'],
      ['a ".." segment', 'docs/../', 'Invalid path: no segment may be empty or start with "."'],
      ['6 levels', 'a/b/c/d/e/f/', 'Invalid path: at most 5 directory levels'],
      ['a folder ending in "."', 'docs./', TRAILING_DOT],
      ['a device name', 'docs/con/', DEVICE],
      ['a device name with a dot', 'lpt3.x/', DEVICE],
      ['a folder starting with "-"', '-docs/', DASH],
    ];
    for (const [label, prefix, message] of cases) {
      it(`refuses ${label}`, () => {
        const err = refusal(() => validateFolderPrefix(prefix));
        expect(err.message).to.equal(message);
        expect(err.data.path).to.equal(prefix);
      });
    }
  });

  describe('ancestorFolders', () => {
    it('lists every ancestor, nearest last', () => {
      expect(ancestorFolders('a/b/c.md')).to.deep.equal(['a', 'a/b']);
      expect(ancestorFolders('a/b/c/d/e/f.md')).to.deep.equal(['a', 'a/b', 'a/b/c', 'a/b/c/d', 'a/b/c/d/e']);
    });

    it('is empty for a top-level file', () => {
      expect(ancestorFolders('c.md')).to.deep.equal([]);
    });
  });

  describe('the one-pattern check of plain paths (validatePath\'s shortcut)', () => {
    /** Segments made of the pieces the rules care about: devices, dots, dashes, case, lengths. */
    const piece = fc.constantFrom('a', 'z', '0', '9', '_', '-', '.', '..', 'A', ' ', '%', 'con', 'nul', 'aux', 'prn', 'com1', 'com10', 'lpt9', 'md', 'x'.repeat(60));
    const segment = fc.array(piece, { minLength: 0, maxLength: 4 }).map((p) => p.join(''));
    const path = fc.array(segment, { minLength: 1, maxLength: 8 }).map((s) => s.join('/'));
    const outcome = (fn: () => string): string => {
      try {
        return `ok ${fn()}`;
      } catch (err) {
        return (err as Error).message;
      }
    };

    it('accepts only paths the rules accept, so validatePath answers exactly as the rules do', () => {
      fc.assert(
        fc.property(path, (p) => {
          if (isPlainPath(p)) expect(outcome(() => checkPathRules(p)), p).to.equal(`ok ${p}`);
          expect(outcome(() => validatePath(p)), p).to.equal(outcome(() => checkPathRules(p)));
        }),
        { numRuns: 20_000 },
      );
    });

    it('takes the usual paths in one test', () => {
      for (const p of ['a.md', 'docs/guide.md', 'bench/f000/item-0000.md', 'a/b/c/d/e/f.md', 'notes/2026-11-24.meeting.txt', 'x_y/console.md', 'com10/a.md', 'a-/b_.md']) {
        expect(isPlainPath(p), p).to.equal(true);
      }
      for (const p of ['con.md', 'a/nul/b.md', 'a/b/c/d/e/f/g.md', 'a./b.md', '-a.md', '.trash/a.md', 'a/b', 'A.md', `${'x'.repeat(253)}.md`]) {
        expect(isPlainPath(p), p).to.equal(false);
      }
    });
  });
});
