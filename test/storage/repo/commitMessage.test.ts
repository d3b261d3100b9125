import { expect } from 'chai';
import { formatCommitMessage, parseAllTrailers, parseTrailers, type ItemAction, type ItemTrailers } from '../../../src/storage/repo/commitMessage.js';

/** Trailers: history is rebuilt from them, so a client message must not forge them. */

const TRAILERS: ItemTrailers = { itemId: '7d1c4a9e-0b7f-4a43-9a53-3b8c1f9e2d10', itemPath: 'docs/guide.md', action: 'update' };

describe('storage/commitMessage', () => {
  it('round-trips the trailers for every action', () => {
    for (const action of ['create', 'update', 'delete', 'restore', 'permissions', 'purge', 'move'] as ItemAction[]) {
      const message = formatCommitMessage(`Do ${action}`, { ...TRAILERS, action });
      expect(parseTrailers(message)).to.deep.equal({ ...TRAILERS, action });
    }
  });

  it('a move carries the path it left as Item-From-Path, and only a move does', () => {
    const move: ItemTrailers = { itemId: TRAILERS.itemId, itemPath: 'b/new.md', action: 'move', fromPath: 'a/old.md' };
    const message = formatCommitMessage('Move a/old.md to b/new.md', move);
    expect(message).to.equal(
      `Move a/old.md to b/new.md\n\nItem-Id: ${TRAILERS.itemId}\nItem-Path: b/new.md\nItem-Action: move\nItem-From-Path: a/old.md\n`,
    );
    expect(parseTrailers(message)).to.deep.equal(move);
    expect(parseTrailers(formatCommitMessage('x', TRAILERS))).to.not.have.property('fromPath');
  });

  it('ignores a forged Item-From-Path in a client message', () => {
    const client = 'Rename\n\nItem-From-Path: secret/payroll.md\n';
    expect(parseTrailers(formatCommitMessage(client, TRAILERS))).to.deep.equal(TRAILERS);
  });

  it('writes the summary, a blank line, then the trailer block, ending in a newline', () => {
    expect(formatCommitMessage('Update docs/guide.md', TRAILERS)).to.equal(
      'Update docs/guide.md\n\nItem-Id: 7d1c4a9e-0b7f-4a43-9a53-3b8c1f9e2d10\nItem-Path: docs/guide.md\nItem-Action: update\n',
    );
  });

  it('trims trailing whitespace from the summary so the trailers stay one paragraph', () => {
    const message = formatCommitMessage('Summary\n\n\n  \n', TRAILERS);
    expect(message).to.equal(`Summary\n\nItem-Id: ${TRAILERS.itemId}\nItem-Path: docs/guide.md\nItem-Action: update\n`);
    expect(parseTrailers(message)).to.deep.equal(TRAILERS);
  });

  it('ignores fake trailers in a client message paragraph', () => {
    const client = [
      'Rewrite the guide',
      '',
      'Item-Id: 00000000-0000-0000-0000-000000000000',
      'Item-Path: secret/payroll.md',
      'Item-Action: delete',
      '',
      'More text after the fake block.',
    ].join('\n');
    expect(parseTrailers(formatCommitMessage(client, TRAILERS))).to.deep.equal(TRAILERS);
  });

  it('ignores a fake trailer block that ends the client message', () => {
    const client = 'Rewrite\n\nItem-Id: forged\nItem-Path: other.md\nItem-Action: purge\n\n';
    expect(parseTrailers(formatCommitMessage(client, TRAILERS))).to.deep.equal(TRAILERS);
  });

  it('ignores fake trailer lines on the summary line itself and in a one-paragraph message', () => {
    const client = 'Item-Id: forged\nItem-Path: other.md\nItem-Action: purge';
    expect(parseTrailers(formatCommitMessage(client, TRAILERS))).to.deep.equal(TRAILERS);
  });

  it('keeps a path with regex-like characters exactly', () => {
    const trailers: ItemTrailers = { itemId: 'id', itemPath: 'a-b/c_d.e/f.tar.gz', action: 'create' };
    expect(parseTrailers(formatCommitMessage('x', trailers))).to.deep.equal(trailers);
  });

  it('returns null when the last paragraph lacks a trailer', () => {
    expect(parseTrailers('Create organization acme\n')).to.equal(null);
    expect(parseTrailers('')).to.equal(null);
    expect(parseTrailers('x\n\nItem-Id: a\nItem-Path: b.md\n')).to.equal(null);
    expect(parseTrailers('x\n\nItem-Id: a\nItem-Action: create\n')).to.equal(null);
    // Trailers in an earlier paragraph only: not trailers.
    expect(parseTrailers('x\n\nItem-Id: a\nItem-Path: b.md\nItem-Action: create\n\nA closing remark.\n')).to.equal(null);
  });

  describe('a commit of several items', () => {
    const several: ItemTrailers[] = [
      { itemId: 'a', itemPath: 'x/a.md', action: 'create' },
      { itemId: 'b', itemPath: 'y/b.md', action: 'move', fromPath: 'x/b.md' },
      { itemId: 'c', itemPath: 'c.md', action: 'delete' },
    ];

    it('writes one group per item in one paragraph, each starting with Item-Id, and reads them back in order', () => {
      const message = formatCommitMessage('Reorganise', several);
      expect(message).to.equal(
        'Reorganise\n\nItem-Id: a\nItem-Path: x/a.md\nItem-Action: create\nItem-Id: b\nItem-Path: y/b.md\nItem-Action: move\n' +
          'Item-From-Path: x/b.md\nItem-Id: c\nItem-Path: c.md\nItem-Action: delete\n',
      );
      expect(parseAllTrailers(message)).to.deep.equal(several);
      // The one-item reader still sees the first item.
      expect(parseTrailers(message)).to.deep.equal(several[0]);
    });

    it('reads a one-item message (every commit before) as a list of one, and a folder commit as none', () => {
      expect(parseAllTrailers(formatCommitMessage('x', TRAILERS))).to.deep.equal([TRAILERS]);
      expect(parseAllTrailers('Rule\n\nFolder-Path: board\nFolder-Action: rule\n')).to.deep.equal([]);
    });

    it('cannot be forged from the client message', () => {
      const client = 'Item-Id: forged\nItem-Path: other.md\nItem-Action: purge\n\nItem-Id: f2\nItem-Path: o.md\nItem-Action: purge';
      expect(parseAllTrailers(formatCommitMessage(client, several))).to.deep.equal(several);
    });
  });
});
