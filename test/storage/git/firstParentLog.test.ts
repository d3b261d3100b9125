import { promises as nodeFs } from 'node:fs';
import { expect } from 'chai';
import { silentLogger } from '../../../src/common/log.js';
import type { FsPromises } from '../../../src/storage/fs/fs.js';
import { firstParentLog, type LoggedCommit } from '../../../src/storage/git/firstParentLog.js';
import { HistoryLog } from '../../../src/storage/repo/historyLog.js';
import { ObjectReader } from '../../../src/storage/repo/objectReader.js';
import { git } from '../../support/git.js';
import { gitWithInput } from '../../support/packRepo.js';
import { tmpDir } from '../../support/tmp.js';

const fs = nodeFs as unknown as FsPromises;

/** Commits with odd messages (CR, leading blank lines, no trailing newline, trailers, non-ASCII) and a merge. */
async function oddRepository(gitdir: string): Promise<string> {
  await git(['init', '--bare', '-q', '-b', 'main', gitdir]);
  const messages = ['plain\n', '\n\nleading blank lines\n\n\n', 'carriage\r\nreturns\r\n', 'no newline at the end', 'Ünïcødé ✓\n\nbody\n\nItem-Id: 1\nItem-Path: a/b.md\nItem-Action: put\n'];
  const parts: string[] = [];
  messages.forEach((m, i) => {
    const bytes = Buffer.from(m);
    parts.push(`commit refs/heads/main\nmark :${i + 1}\nauthor Zoë Ünicode <z@example.com> ${1_700_000_000 + i} +0200\ncommitter C <c@example.com> ${1_700_000_000 + i} +0000\ndata ${bytes.byteLength}\n${m}\nM 100644 inline f${i}.txt\ndata 2\n${i}\n\n`);
  });
  // A side branch merged into main: a first-parent walk does not enter it.
  parts.push('commit refs/heads/side\nmark :100\ncommitter C <c@example.com> 1700000100 +0000\ndata 5\nside\n\nfrom :2\nM 100644 inline side.txt\ndata 2\ns\n\n');
  parts.push('commit refs/heads/main\nmark :101\ncommitter C <c@example.com> 1700000200 +0000\ndata 6\nmerge\n\nfrom :5\nmerge :100\n\n');
  await gitWithInput(['fast-import', '--quiet'], parts.join(''), gitdir);
  return (await git(['rev-parse', 'main'], { gitdir })).trim();
}

describe('storage/git: the first-parent log from C git', function () {
  this.timeout(60_000);
  let tmp: { dir: string; cleanup: () => Promise<void> };
  let gitdir: string;
  let head: string;
  before(async () => {
    tmp = await tmpDir('ks-fplog');
    gitdir = `${tmp.dir}/repo.git`;
    head = await oddRepository(gitdir);
  });
  after(() => tmp.cleanup());

  it('gives each commit exactly as the pack reader reads it, newest first, along first parents', async () => {
    const logged: LoggedCommit[] = [];
    for await (const c of firstParentLog({ gitdir, head, env: process.env })) logged.push(c);
    const reader = new ObjectReader(fs, gitdir);
    const walked: LoggedCommit[] = [];
    for (let at: string | null = head; at !== null; ) {
      const { tree: _tree, ...facts } = await reader.commit(at);
      walked.push({ commitId: at, ...facts });
      at = facts.parent;
    }
    reader.close();
    expect(logged).to.have.length(6);
    expect(logged).to.deep.equal(walked);
    expect(logged.map((c) => c.message)).to.include('carriage\nreturns\n').and.include('leading blank lines\n');
  });

  it('stops git when the loop is left early, and rejects for a commit git does not have', async () => {
    for await (const c of firstParentLog({ gitdir, head, env: process.env })) {
      expect(c.commitId).to.equal(head);
      break;
    }
    const err = await (async () => {
      for await (const _ of firstParentLog({ gitdir, head: '0123456789abcdef0123456789abcdef01234567', env: process.env })) return 'yielded';
      return 'ended';
    })().catch((e: unknown) => e);
    expect(String(err)).to.match(/git log failed/);
  });

  it('builds the same history log as reading the commits one by one, and falls back to that when git fails', async () => {
    const reader = new ObjectReader(fs, gitdir);
    const load = async (walk?: (from: string) => AsyncIterable<LoggedCommit>) => {
      await nodeFs.rm(`${gitdir}/knowledge-history.jsonl`, { force: true });
      const log = await HistoryLog.load({ fs, gitdir, head, readCommit: (oid) => reader.commit(oid), ...(walk ? { walk } : {}), logger: silentLogger });
      return { entries: log.all(), file: await nodeFs.readFile(`${gitdir}/knowledge-history.jsonl`, 'utf8') };
    };
    const oneByOne = await load();
    expect(await load((from) => firstParentLog({ gitdir, head: from, env: process.env }))).to.deep.equal(oneByOne);
    // git dies after two commits: those stand, the rest is read from the objects.
    const failing = async function* (from: string): AsyncGenerator<LoggedCommit> {
      let n = 0;
      for await (const c of firstParentLog({ gitdir, head: from, env: process.env })) {
        if (n++ === 2) throw new Error('git was killed');
        yield c;
      }
    };
    expect(await load(failing)).to.deep.equal(oneByOne);
    reader.close();
  });
});
