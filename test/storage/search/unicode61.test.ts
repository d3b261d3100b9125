import { expect } from 'chai';
import sqlite from 'node-sqlite3-wasm';
import { indexedText, tokenize } from '../../../src/storage/search/unicode61.js';
import * as checkedIn from '../../../src/storage/search/unicode61Tables.js';
import { probeUnicode61 } from '../../support/unicode61Probe.js';
import { random } from '../../support/random.js';

/** Characters a random text is drawn from: every class the tokenizer has, and what UTF-8 makes odd. */
const ALPHABET = [
  'a', 'Z', 'é', 'É', 'ß', 'İ', 'ǅ', 'ﬁ', 'Ø', 'ø', '5', '٣', '²', '½', ' ', '\t', '\n', '.', ':', '-', '_', '"', "'",
  '\u0301', '\u0308', '\u0305', '\u200d', '\u00ad', '日', '本', '語', 'の', 'ア', '한', 'Ω', 'ω', 'Ж', 'ж', 'א', 'ع',
  '\u{10400}', '\u{10428}', '\u{1F600}', '\u{1D400}', '\u{20000}', '\ud800', '\udc00', '\ufffd', '\ufffe', '\uffff', '\u0000', '\u3000', '\u00a0',
];

function randomText(rnd: () => number, length: number): string {
  let s = '';
  for (let i = 0; i < length; i++) {
    const r = rnd();
    // Mostly the alphabet; sometimes any code point at all.
    s += r < 0.85 ? (ALPHABET[Math.floor(rnd() * ALPHABET.length)] as string) : String.fromCodePoint(Math.floor(rnd() * 0x30000));
  }
  return s;
}

describe('storage/search: the tokenizer equals FTS5 unicode61 remove_diacritics 2', function () {
  this.timeout(300_000);

  it('the checked-in tables are what SQLite says of every code point', () => {
    const probed = probeUnicode61();
    expect(checkedIn.RUNS).to.deep.equal(probed.runs);
    expect(checkedIn.FOLDS).to.deep.equal(probed.folds);
  });

  it('splits and folds random texts as FTS5 does (terms, positions, counts)', () => {
    const db = new sqlite.Database(':memory:');
    try {
      db.exec(`CREATE VIRTUAL TABLE t USING fts5(s, tokenize = 'unicode61 remove_diacritics 2');
        CREATE VIRTUAL TABLE v USING fts5vocab(t, 'instance');`);
      const rnd = random(61);
      const texts: string[] = [];
      db.exec('BEGIN');
      for (let i = 1; i <= 3000; i++) {
        const text = randomText(rnd, 1 + Math.floor(rnd() * 40));
        texts.push(text);
        db.run('INSERT INTO t (rowid, s) VALUES (?, ?)', [i, text]);
      }
      db.exec('COMMIT');
      const fts = new Map<number, string[]>();
      for (const row of db.all('SELECT term, doc, "offset" AS o FROM v ORDER BY doc, "offset"')) {
        const list = fts.get(Number(row.doc)) ?? [];
        list.push(`${Number(row.o)}:${String(row.term)}`);
        fts.set(Number(row.doc), list);
      }
      texts.forEach((text, i) => {
        const ours: string[] = [];
        let at = 0;
        tokenize(indexedText(text), (term) => ours.push(`${at++}:${term}`));
        // fts5vocab lists terms in term order within a position; a position holds one term here.
        expect(ours, JSON.stringify(text)).to.deep.equal(fts.get(i + 1) ?? []);
      });
    } finally {
      db.close();
    }
  });
});
