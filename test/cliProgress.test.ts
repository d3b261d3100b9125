import { expect } from 'chai';
import { createProgress, type ProgressStream } from '../src/cli/progress.js';

/** The CLI's progress display: a bar redrawn in place on a terminal, the plain lines anywhere else. */

const CLEAR = '\r\x1b[2K';

function stream(isTTY: boolean, columns = 80): ProgressStream & { out: string } {
  const s = { isTTY, columns, out: '', write: (chunk: string) => (s.out += chunk) };
  return s;
}

describe('cli progress', () => {
  it('not a terminal: the plain lines only, no control characters, nothing for a bar without a line', () => {
    const err = stream(false);
    const p = createProgress({ stream: err });
    p.step('Cloning ./backup.git...');
    p.update({ label: 'Checking acme', done: 0, total: 2, line: 'Checking acme...' });
    p.update({ label: 'Indexing acme', done: 1, total: 2 });
    p.log('Imported acme: 3 items, 0 in trash.');
    p.done();
    expect(err.out).to.equal('Cloning ./backup.git...\nChecking acme...\nImported acme: 3 items, 0 in trash.\n');
  });

  it('a terminal: one line redrawn in place, a bar with count and percentage, cleared when done', () => {
    const err = stream(true);
    const p = createProgress({ stream: err, animate: false });
    p.update({ label: 'Checking acme', done: 1, total: 4, line: 'Checking acme...' });
    expect(err.out.startsWith(CLEAR)).to.equal(true);
    expect(err.out.slice(CLEAR.length)).to.match(/^Checking acme \[█+░+\] 1\/4 25%$/);
    const last = err.out.split('\r\x1b[2K').at(-1) ?? '';
    expect(last.length).to.be.at.most(79);
    expect(err.out).not.to.include('\n');
    p.log('A server holds the data directory: its search index is not checked.');
    expect(err.out).to.include('\r\x1b[2KA server holds the data directory: its search index is not checked.\n\r\x1b[2KChecking acme [');
    p.done();
    expect(err.out.endsWith('\r\x1b[2K')).to.equal(true);
  });

  it('a terminal: a phase without a count is a spinner with the seconds spent; narrow terminals are not overrun', () => {
    let t = 0;
    const err = stream(true, 30);
    const p = createProgress({ stream: err, animate: false, now: () => t });
    t = 0;
    p.step('Checking the repository (git fsck --strict, records, paths)...');
    const line = err.out.split('\r\x1b[2K').at(-1) ?? '';
    expect(line.length).to.be.at.most(29);
    expect(line).to.match(/^. Checking the repository.*…$/);
    t = 5000;
    p.update({ label: 'x', done: 3, total: 3 });
    expect(err.out).to.match(/\] 3\/3 100%$/);
    p.done();
  });
});
