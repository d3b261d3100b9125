import { expect } from 'chai';
import { snippetOf, snippetOfStored } from '../../../src/storage/search/ftsSnippet.js';
import { edgesHeld } from '../../../src/storage/search/snippetTokens.js';
import { tokensOf } from '../../../src/storage/search/unicode61.js';
import { random } from '../../support/random.js';

/**
 * A stored body's snippet from its bytes (the ASCII pass of snippetTokens.ts) against the same body's snippet from
 * its text (the tokenizer's pass, which rankEngine.test.ts holds to FTS5's snippet()): random ASCII bodies of every
 * code point below 0x80 (letters of both cases, digits, the sentence marks '.' and ':', the four kinds of
 * whitespace the sentence rule knows and others it does not, controls) and phrases drawn from their own tokens,
 * with repeats. Texts with code points above ASCII must go to the text, once.
 */
describe('storage/search: snippets of stored bodies, from their bytes', () => {
  const WEIGHTED = ['a', 'b', 'e', 'A', 'B', 'E', 'ab', 'Ab', 'aB', '1', '42', ' ', ' ', ' ', '. ', ': ', '.', ':', '\n', '\r\n', '\t', ',', '-', '\f', '\v', '. \n'];
  const anyAscii = (rnd: () => number): string => String.fromCharCode(Math.floor(rnd() * 0x80));

  function asciiText(rnd: () => number, parts: number): string {
    let s = '';
    for (let i = 0; i < parts; i++) s += rnd() < 0.9 ? (WEIGHTED[Math.floor(rnd() * WEIGHTED.length)] as string) : anyAscii(rnd);
    return s;
  }

  function phrasesOf(rnd: () => number, text: string): string[] {
    const tokens = tokensOf(text);
    const n = 1 + Math.floor(rnd() * 3);
    return Array.from({ length: n }, () => (tokens.length > 0 && rnd() < 0.85 ? (tokens[Math.floor(rnd() * tokens.length)] as string) : 'zz'));
  }

  /** The snippet of `text` stored as UTF-8 bytes, and how many times it was read as text. */
  function stored(text: string, phrases: string[]): { got: string; reads: number } {
    let reads = 0;
    const got = snippetOfStored(Buffer.from(text, 'utf8'), () => {
      reads++;
      return text;
    }, phrases);
    return { got, reads };
  }

  it('gives what the text gives, for 3,000 random ASCII bodies, without reading the text', () => {
    const rnd = random(20261124);
    for (let c = 0; c < 3000; c++) {
      const text = asciiText(rnd, Math.floor(rnd() * 400));
      const phrases = phrasesOf(rnd, text);
      const { got, reads } = stored(text, phrases);
      expect(got, JSON.stringify({ text, phrases })).to.equal(snippetOf(text, phrases));
      expect(reads, 'an ASCII body is never read as text').to.equal(0);
    }
  });

  it('reads the text of a body that is not ASCII, once, and gives its snippet', () => {
    const rnd = random(7);
    for (let c = 0; c < 300; c++) {
      const pos = Math.floor(rnd() * 200);
      const base = asciiText(rnd, 200);
      const text = `${base.slice(0, pos)}${rnd() < 0.5 ? 'Café' : 'ÉTÉ \u0301x'}${base.slice(pos)}`;
      const phrases = phrasesOf(rnd, text);
      const { got, reads } = stored(text, phrases);
      expect(got, JSON.stringify({ text, phrases })).to.equal(snippetOf(text, phrases));
      expect(reads).to.equal(1);
    }
  });

  it('gives the same snippets after a body of a million characters as before it (the room it took is given back)', () => {
    const small = 'Plum tree. A plum.';
    const big = `${'word '.repeat(200_000)}plum`;
    const before = stored(small, ['plum']).got;
    expect(stored(big, ['plum']).got).to.equal(snippetOf(big, ['plum']));
    expect(edgesHeld()).to.be.above(1_000_000);
    expect(stored(small, ['plum']).got).to.equal(before).and.to.equal(snippetOf(small, ['plum']));
    expect(edgesHeld()).to.be.at.most(1 << 16);
  });

  it('marks upper case instances and starts windows at sentences as the text does (a fixed case)', () => {
    const text = `${'filler words here. '.repeat(6)}Plum: Tree plum.\n\nPLUM again`;
    const phrases = ['plum', 'tree'];
    expect(snippetOfStored(Buffer.from(text), () => text, phrases)).to.equal(snippetOf(text, phrases));
    expect(snippetOf(text, phrases)).to.include('«Plum»: «Tree» «plum»');
  });
});
