import { join } from 'node:path';
import { expect } from 'chai';
import { MAX_SEARCH_DEPTH } from '../../src/domain/search.js';
import { ensureBuilt, killAllChildren, runCli, spawnServe, type ServeChild } from '../support/child.js';
import { commitCount, fsckStrict, git } from '../support/git.js';
import { sleep } from '../support/sleep.js';
import { tmpDir } from '../support/tmp.js';
import { catFileBatch } from './gitBatch.js';

/**
 * Kill loop (see README, Reliability): a child server under a concurrent load of creates, updates, deletes and
 * restores is killed with SIGKILL at a random moment, restarted on the same data dir with no repair step,
 * and judged against a model of what was acknowledged, through the API and through C git.
 *
 * Each path belongs to one load loop, and a loop has one request in flight at a time, so a path has at
 * most one operation whose outcome the kill left unknown. After a restart a path must therefore be
 * exactly in its last acknowledged state, or in the state its in-flight operation would leave (that
 * operation may have landed without its answer getting out), and nothing in between: content, record
 * and trash entry move together or not at all.
 *
 * `KILL_CYCLES` sets the number of kills (10 here, 100 in `npm run chaos`).
 */

const CYCLES = Number(process.env.KILL_CYCLES ?? 10);
const LOOPS = 6;
const PREFIX = 'kill/';
const KILL_AFTER_MIN_MS = 200;
const KILL_AFTER_MAX_MS = 700;

type State = { kind: 'absent' } | { kind: 'live'; version: number } | { kind: 'trashed'; version: number };
type Op = 'create' | 'update' | 'delete' | 'restore';

interface PathModel {
  path: string;
  /** The item id, once a create answered (or a restart showed the item). */
  id: string | undefined;
  /** The state the last acknowledged operation left. */
  acked: State;
  /** The operation sent and not answered when the server died, with the state it would leave. */
  inFlight: { op: Op; to: State } | undefined;
  /** Highest content version ever sent to this path. */
  maxVersion: number;
}

/**
 * Items a separate loop moves back and forth between two paths each (under MOVE_PREFIX, apart from the
 * per-path model): after a kill, each must be whole at exactly one of its two paths, with its id.
 */
const MOVE_PREFIX = 'killmv/';
const MOVERS = 3;
interface MoverModel {
  id: string;
  slots: readonly [string, string];
  /** The slot the last acknowledged move (or the create) left it at. */
  at: 0 | 1;
  /** A move sent and not answered when the server died. */
  inFlight: boolean;
}
const moverContent = (n: number): string => `mover ${n} content\n`;

const contentOf = (path: string, version: number): string => `${path} version ${version}\n`;
const CONTENT = /^(\S+) version (\d+)\n$/;
const same = (a: State, b: State): boolean => a.kind === b.kind && (a.kind === 'absent' || a.version === (b as { version: number }).version);
const show = (s: State): string => (s.kind === 'absent' ? 'absent' : `${s.kind} v${s.version}`);
const pick = <T>(xs: readonly T[]): T => xs[Math.floor(Math.random() * xs.length)] as T;

/** What C git shows for one path on `main`: content, trash entry and record. */
interface GitView {
  content: string | null;
  trash: string | null;
  record: { id: string; path: string; deletedAt: string | null } | null;
}

describe('reliability: kill loop (SIGKILL under concurrent creates, updates, deletes, restores, moves, commits of several moves)', function () {
  this.timeout(CYCLES * 20_000 + 60_000);

  let tmp: { dir: string; cleanup: () => Promise<void> };

  before(async function () {
    this.timeout(120_000);
    await ensureBuilt();
    tmp = await tmpDir('ks-killloop');
  });

  after(async () => {
    await killAllChildren();
    await tmp?.cleanup();
  });

  it(`every acknowledged write survives ${CYCLES} SIGKILLs; nothing unacknowledged is half-visible; fsck and verify stay clean`, async () => {
    const started = Date.now();
    const dataDir = tmp.dir;
    const gitdir = join(dataDir, 'orgs', 'default.git');
    let child: ServeChild = await spawnServe(dataDir);
    const key = child.adminKey as string;
    expect(key, child.stdout()).to.match(/^ks_/);

    const model = new Map<string, PathModel>();
    const owned: PathModel[][] = Array.from({ length: LOOPS }, () => []);
    const created = Array.from({ length: LOOPS }, () => 0);
    /** Every acknowledged create or update, to find in the history at the end. */
    const ackedContents: string[] = [];
    const totals = { cycles: 0, sent: 0, acked: 0, ackedByOp: { create: 0, update: 0, delete: 0, restore: 0, move: 0, commit: 0 }, landedUnacked: 0, pathChecks: 0, postponed: 0 };

    // The movers are created before the first kill: their fate is what the moves do to them.
    const movers: MoverModel[] = [];
    /** A POST /commits moving every mover was sent and not answered when the server died. */
    let moversBatchInFlight = false;
    for (let n = 0; n < MOVERS; n++) {
      const slots = [`${MOVE_PREFIX}m${n}/here.md`, `${MOVE_PREFIX}m${n}/there/moved.md`] as const;
      const res = await fetch(`${child.url}/api/v1/knowledge/items/${slots[0]}`, {
        method: 'PUT',
        headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' },
        body: JSON.stringify({ content: moverContent(n) }),
      });
      const body = (await res.json()) as { data: { item: { id: string } } };
      expect(res.status, JSON.stringify(body)).to.equal(200);
      movers.push({ id: body.data.item.id, slots, at: 0, inFlight: false });
      totals.sent++;
      totals.acked++;
    }

    for (let cycle = 0; cycle < CYCLES; cycle++) {
      const url = child.url;
      const api = `${url}/api/v1/knowledge`;
      let killed = false;
      let ackedThisCycle = 0;
      const unexpected: string[] = [];
      const touched = new Set<string>();

      const send = async (m: PathModel, op: Op, to: State): Promise<'acked' | 'dead'> => {
        const headers = { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' };
        const request: { url: string; init: RequestInit } =
          op === 'create' || op === 'update'
            ? {
                url: `${api}/items/${m.path}`,
                init: { method: 'PUT', headers, body: JSON.stringify({ content: contentOf(m.path, (to as { version: number }).version) }) },
              }
            : op === 'delete'
              ? { url: `${api}/items/${m.path}`, init: { method: 'DELETE', headers } }
              : { url: `${api}/trash/restore`, init: { method: 'POST', headers, body: JSON.stringify({ path: m.path }) } };
        m.inFlight = { op, to };
        touched.add(m.path);
        if (to.kind !== 'absent') m.maxVersion = Math.max(m.maxVersion, to.version);
        totals.sent++;
        let res: Response;
        try {
          res = await fetch(request.url, { ...request.init, signal: AbortSignal.timeout(15_000) });
        } catch (err) {
          if (!killed) unexpected.push(`cycle ${cycle}: ${op} ${m.path} failed before the kill: ${String(err)}`);
          return 'dead'; // unknown outcome: stays in flight
        }
        // The status line is written only after the commit is durable: a 200 is an acknowledgement,
        // even if the kill cuts the body short.
        const text = await res.text().catch(() => '');
        if (res.status !== 200) {
          unexpected.push(`cycle ${cycle}: ${op} ${m.path} (${show(m.acked)} -> ${show(to)}) answered ${res.status} ${text}`);
          m.inFlight = undefined;
          return 'acked';
        }
        m.acked = to;
        m.inFlight = undefined;
        totals.acked++;
        totals.ackedByOp[op]++;
        ackedThisCycle++;
        if (op === 'create' || op === 'update') ackedContents.push(contentOf(m.path, (to as { version: number }).version));
        if (op === 'create' || op === 'restore') {
          try {
            const id = (JSON.parse(text) as { data: { item: { id: string } } }).data.item.id;
            if (m.id !== undefined && m.id !== id) unexpected.push(`cycle ${cycle}: ${op} ${m.path} answered id ${id}, was ${m.id}`);
            m.id = id;
          } catch {
            // the body was cut short by the kill; the restart shows the id
          }
        }
        return 'acked';
      };

      const runLoop = async (loop: number): Promise<void> => {
        const mine = owned[loop] as PathModel[];
        while (!killed) {
          const live = mine.filter((m) => m.acked.kind === 'live');
          const trashed = mine.filter((m) => m.acked.kind === 'trashed');
          const ops: Op[] = ['create', 'create'];
          if (live.length > 0) ops.push('update', 'update', 'update', 'update', 'delete', 'delete');
          if (trashed.length > 0) ops.push('restore', 'restore');
          const op = pick(ops);
          let m: PathModel;
          let to: State;
          if (op === 'create') {
            const path = `${PREFIX}l${loop}/p${created[loop]}.md`;
            created[loop] = (created[loop] ?? 0) + 1;
            m = { path, id: undefined, acked: { kind: 'absent' }, inFlight: undefined, maxVersion: 0 };
            model.set(path, m);
            mine.push(m);
            to = { kind: 'live', version: 1 };
          } else if (op === 'update') {
            m = pick(live);
            to = { kind: 'live', version: m.maxVersion + 1 };
          } else if (op === 'delete') {
            m = pick(live);
            to = { kind: 'trashed', version: (m.acked as { version: number }).version };
          } else {
            m = pick(trashed);
            to = { kind: 'live', version: (m.acked as { version: number }).version };
          }
          if ((await send(m, op, to)) === 'dead') return;
        }
      };

      /**
       * Moves a random mover to its other path, one request at a time, until the kill; every other request
       * moves all of them in one POST /commits, which must land whole or not at all.
       */
      const runMover = async (): Promise<void> => {
        let turn = 0;
        while (!killed) {
          const batch = turn++ % 2 === 1;
          const moving = batch ? movers : [pick(movers)];
          const moves = moving.map((m) => ({ op: 'move', from: m.slots[m.at], to: m.slots[1 - m.at] }));
          const what = batch ? `commit of ${moves.length} moves` : `move ${moves[0]?.from} -> ${moves[0]?.to}`;
          for (const m of moving) m.inFlight = true;
          if (batch) moversBatchInFlight = true;
          totals.sent++;
          let res: Response;
          try {
            res = await fetch(batch ? `${api}/commits` : `${api}/move`, {
              method: 'POST',
              headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' },
              body: JSON.stringify(batch ? { operations: moves } : { from: moves[0]?.from, to: moves[0]?.to }),
              signal: AbortSignal.timeout(15_000),
            });
          } catch (err) {
            if (!killed) unexpected.push(`cycle ${cycle}: ${what} failed before the kill: ${String(err)}`);
            return; // unknown outcome: stays in flight
          }
          const text = await res.text().catch(() => '');
          for (const m of moving) m.inFlight = false;
          moversBatchInFlight = false;
          if (res.status !== 200) {
            unexpected.push(`cycle ${cycle}: ${what} answered ${res.status} ${text}`);
            return;
          }
          for (const m of moving) m.at = m.at === 0 ? 1 : 0;
          totals.acked++;
          totals.ackedByOp[batch ? 'commit' : 'move']++;
          ackedThisCycle++;
        }
      };

      const loops = [...Array.from({ length: LOOPS }, (_, loop) => runLoop(loop)), runMover()];
      await sleep(KILL_AFTER_MIN_MS + Math.floor(Math.random() * (KILL_AFTER_MAX_MS - KILL_AFTER_MIN_MS)));
      // A kill only tests something once writes are being acknowledged: on a busy machine the restarted
      // server may not have answered yet (it opens the organization on the first request). Then the kill
      // waits for the first acknowledgement; a server that acknowledges nothing for 15 s fails the test below.
      if (ackedThisCycle === 0) {
        totals.postponed++;
        const deadline = Date.now() + 15_000;
        while (ackedThisCycle === 0 && unexpected.length === 0 && Date.now() < deadline) await sleep(5);
        await sleep(Math.floor(Math.random() * 50));
      }
      killed = true;
      const exit = await child.kill('SIGKILL');
      expect(exit.signal).to.equal('SIGKILL');
      await Promise.all(loops);
      expect(unexpected, unexpected.join('\n')).to.deep.equal([]);
      expect(ackedThisCycle, `cycle ${cycle}: the server acknowledged no write within 15 s`).to.be.greaterThan(0);

      // Restart on the same data dir: no repair step, no new organization, no new admin key.
      child = await spawnServe(dataDir);
      expect(child.stdout(), `cycle ${cycle}`).to.not.include('Admin API key');
      const atBefore = movers.map((m) => m.at);
      const problems = [
        ...(await checkAgainstModel(cycle, child.url, key, gitdir, model, touched, totals)),
        ...(await checkMovers(cycle, child.url, key, gitdir, movers, totals)),
      ];
      // One commit of several moves: all of them landed, or none.
      const landed = movers.filter((m, n) => m.at !== atBefore[n]).length;
      if (moversBatchInFlight && landed !== 0 && landed !== movers.length) problems.push(`cycle ${cycle}: ${landed} of the ${movers.length} moves of one commit landed`);
      moversBatchInFlight = false;
      expect(problems, `after cycle ${cycle}:\n${problems.join('\n')}`).to.deep.equal([]);

      await fsckStrict(gitdir);
      const verify = await runCli(['verify', '--data-dir', dataDir]);
      expect(verify.code, `verify after cycle ${cycle}:\n${verify.stdout}${verify.stderr}`).to.equal(0);
      expect(verify.stdout).to.match(/default: OK/);
      totals.cycles++;
    }

    // Every acknowledged create and update is in the history, not only the latest state of each path.
    const history = await git(['log', '-p', '--format=', '--', PREFIX.slice(0, -1)], { gitdir });
    const inHistory = new Set(history.split('\n').filter((l) => l.startsWith('+kill/')).map((l) => l.slice(1)));
    const missing = ackedContents.filter((c) => !inHistory.has(c.trimEnd()));
    expect(missing, 'acknowledged writes missing from the history').to.deep.equal([]);
    // One commit per state change: at least one per acknowledged write, at most one per request sent.
    const commits = (await commitCount(gitdir)) - 1; // the organization's first commit
    expect(commits).to.be.at.least(totals.acked);
    expect(commits).to.be.at.most(totals.sent);
    await child.kill('SIGKILL');

    const seconds = ((Date.now() - started) / 1000).toFixed(1);
    console.log(
      `      kill loop: ${totals.cycles}/${CYCLES} cycles survived in ${seconds} s; ${totals.acked} acknowledged writes checked ` +
        `(${totals.ackedByOp.create} creates, ${totals.ackedByOp.update} updates, ${totals.ackedByOp.delete} deletes, ` +
        `${totals.ackedByOp.restore} restores, ${totals.ackedByOp.move} moves, ${totals.ackedByOp.commit} commits of 3 moves) of ${totals.sent} sent; ${totals.landedUnacked} in-flight writes found landed; ` +
        `${totals.pathChecks} path checks over ${model.size} paths; ${commits} commits` +
        (totals.postponed ? `; ${totals.postponed} kill(s) waited for the first acknowledgement` : ''),
    );
  });
});

/**
 * Judges every path against the model, via C git (content at `main:<path>`, `.trash/<path>`, the record)
 * and via the API (the list, the trash, a GET of every path the last cycle wrote), then settles each
 * in-flight operation by what was found. Returns the problems found.
 */
async function checkAgainstModel(
  cycle: number,
  url: string,
  key: string,
  gitdir: string,
  model: Map<string, PathModel>,
  touchedThisCycle: Set<string>,
  totals: { landedUnacked: number; pathChecks: number },
): Promise<string[]> {
  const problems: string[] = [];
  const models = [...model.values()];
  const names = models.flatMap((m) => [`main:${m.path}`, `main:.trash/${m.path}`, `main:.knowledge/items/${m.path}`]);
  const objects = await catFileBatch(gitdir, names);
  const gitView = (path: string): GitView => {
    const text = (name: string): string | null => objects.get(name)?.toString('utf8') ?? null;
    const record = text(`main:.knowledge/items/${path}`);
    return {
      content: text(`main:${path}`),
      trash: text(`main:.trash/${path}`),
      record: record === null ? null : (JSON.parse(record) as GitView['record']),
    };
  };

  // The API: every live item under the prefix (paged), and the trash.
  const headers = { Authorization: `Bearer ${key}` };
  const listed = new Map<string, { id: string; content: string }>();
  let cursor: string | null | undefined;
  do {
    const query = new URLSearchParams({ prefix: PREFIX, limit: '1000', ...(cursor ? { cursor } : {}) });
    const res = await fetch(`${url}/api/v1/knowledge?${query}`, { headers });
    const body = (await res.json()) as { data: { items: Array<{ id: string; path: string; content: string }>; nextCursor?: string | null } };
    if (res.status !== 200) throw new Error(`list answered ${res.status}: ${JSON.stringify(body)}`);
    for (const item of body.data.items) listed.set(item.path, { id: item.id, content: item.content });
    cursor = body.data.nextCursor;
  } while (cursor);
  const trashRes = await fetch(`${url}/api/v1/knowledge/trash`, { headers });
  const trashBody = (await trashRes.json()) as { data: { items: Array<{ id: string; path: string; deletedAt: string | null }> } };
  if (trashRes.status !== 200) throw new Error(`trash answered ${trashRes.status}`);
  const inTrash = new Map(trashBody.data.items.filter((i) => i.path.startsWith(PREFIX)).map((i) => [i.path, i]));

  // The search index survived the kill too: every live item is found (all their paths hold the word "kill"), nothing
  // else. Walked one loop's folder at a time: a query pages through its first MAX_SEARCH_DEPTH (1,000) results at
  // most (README, Search), and a long run holds more live items than that under PREFIX (1,005 at cycle 91 of 100).
  const found = new Set<string>();
  for (let loop = 0; loop < LOOPS; loop++) {
    const folder = `${PREFIX}l${loop}/`;
    const inFolder = [...listed.keys()].filter((path) => path.startsWith(folder)).length;
    if (inFolder >= MAX_SEARCH_DEPTH) throw new Error(`${folder} holds ${inFolder} live items: more than one search can page through; check it in smaller folders`);
    let searchCursor: string | null = null;
    do {
      const query = new URLSearchParams({ q: PREFIX.split('/')[0] as string, prefix: folder, limit: '100', ...(searchCursor ? { cursor: searchCursor } : {}) });
      const res = await fetch(`${url}/api/v1/knowledge/search?${query}`, { headers });
      const body = (await res.json()) as { data: { results: Array<{ path: string }>; nextCursor: string | null } };
      if (res.status !== 200) throw new Error(`search answered ${res.status}: ${JSON.stringify(body)}`);
      for (const r of body.data.results) found.add(r.path);
      searchCursor = body.data.nextCursor;
    } while (searchCursor);
  }
  const unfound = [...listed.keys()].filter((path) => !found.has(path));
  for (const path of unfound) {
    // Told apart for whoever reads a failure: missing from the index, or only from the paged walk above.
    const word = (path.split('/').pop() as string).replace(/\.md$/, '');
    const query = new URLSearchParams({ q: word, prefix: path.slice(0, path.lastIndexOf('/') + 1) });
    const res = await fetch(`${url}/api/v1/knowledge/search?${query}`, { headers });
    const alone = ((await res.json()) as { data?: { results: Array<{ path: string }> } }).data?.results.some((r) => r.path === path);
    problems.push(`${path}: listed but not found by search after the restart (${found.size} found of ${listed.size} listed; a search for "${word}" alone ${alone ? 'finds' : 'does not find'} it)`);
  }
  for (const path of found) if (!listed.has(path)) problems.push(`${path}: found by search but not listed`);

  for (const path of listed.keys()) if (!model.has(path)) problems.push(`${path}: listed by the API but never written`);
  for (const path of inTrash.keys()) if (!model.has(path)) problems.push(`${path}: in the trash but never written`);

  for (const m of models) {
    totals.pathChecks++;
    const where = `cycle ${cycle}: ${m.path} (acknowledged ${show(m.acked)}${m.inFlight ? `, in flight ${m.inFlight.op} -> ${show(m.inFlight.to)}` : ''})`;
    const g = gitView(m.path);

    // What C git shows must be one whole state: content, trash entry and record agree.
    let observed: State | undefined;
    const versionOf = (content: string): number | undefined => {
      const match = CONTENT.exec(content);
      return match && match[1] === m.path ? Number(match[2]) : undefined;
    };
    if (g.content !== null && g.trash === null && g.record?.deletedAt === null) {
      const version = versionOf(g.content);
      if (version !== undefined) observed = { kind: 'live', version };
    } else if (g.content === null && g.trash !== null && g.record !== null && g.record.deletedAt !== null) {
      const version = versionOf(g.trash);
      if (version !== undefined) observed = { kind: 'trashed', version };
    } else if (g.content === null && g.trash === null && g.record === null) {
      observed = { kind: 'absent' };
    }
    if (!observed) {
      problems.push(`${where}: half-visible in git: ${JSON.stringify(g)}`);
      continue;
    }
    if (g.record && g.record.path !== m.path) problems.push(`${where}: record names ${g.record.path}`);

    const allowed = m.inFlight ? [m.acked, m.inFlight.to] : [m.acked];
    if (!allowed.some((s) => same(s, observed))) {
      problems.push(`${where}: git shows ${show(observed)}, allowed ${allowed.map(show).join(' or ')}`);
      continue;
    }
    if (observed.kind !== 'absent' && observed.version > m.maxVersion) problems.push(`${where}: version ${observed.version} was never sent`);

    // The API shows the same state.
    const item = listed.get(m.path);
    const trashed = inTrash.get(m.path);
    if (observed.kind === 'live') {
      if (!item) problems.push(`${where}: live in git, missing from the API list`);
      else if (item.content !== g.content) problems.push(`${where}: the API lists ${JSON.stringify(item.content)}, git has ${JSON.stringify(g.content)}`);
      if (trashed) problems.push(`${where}: live, yet in the API's trash`);
    } else if (observed.kind === 'trashed') {
      if (item) problems.push(`${where}: in the trash, yet listed by the API`);
      if (!trashed) problems.push(`${where}: in the trash in git, missing from the API's trash`);
    } else {
      if (item || trashed) problems.push(`${where}: never landed, yet the API shows it`);
    }
    const id = g.record?.id;
    if (id !== undefined) {
      if (m.id !== undefined && m.id !== id) problems.push(`${where}: id ${id}, acknowledged as ${m.id}`);
      if (item && item.id !== id) problems.push(`${where}: the API lists id ${item.id}, the record has ${id}`);
      if (trashed && trashed.id !== id) problems.push(`${where}: the trash shows id ${trashed.id}, the record has ${id}`);
      m.id = id;
    }

    if (m.inFlight) {
      if (same(m.inFlight.to, observed) && !same(m.acked, observed)) totals.landedUnacked++;
    }
    m.acked = observed;
    m.inFlight = undefined;
  }

  // A plain GET of every path the last cycle wrote (the kill left some of their fates open): 200 with the content, or 404.
  for (const path of touchedThisCycle) {
    const m = model.get(path) as PathModel;
    const res = await fetch(`${url}/api/v1/knowledge/items/${m.path}`, { headers });
    const body = (await res.json()) as { data?: { item: { content: string } } };
    const expected = m.acked.kind === 'live' ? 200 : 404;
    if (res.status !== expected) problems.push(`cycle ${cycle}: GET ${m.path} (${show(m.acked)}) answered ${res.status}, expected ${expected}`);
    else if (m.acked.kind === 'live' && body.data?.item.content !== contentOf(m.path, m.acked.version)) {
      problems.push(`cycle ${cycle}: GET ${m.path} gave ${JSON.stringify(body.data?.item.content)}`);
    }
  }
  return problems;
}

/**
 * Judges every mover after a restart: whole at exactly one of its two paths (content and record there,
 * nothing of it at the other), the one the last acknowledged move left or the one its in-flight move
 * would; the same in the API, in search and in its history (created, then only moves). Settles the
 * in-flight move by what was found.
 */
async function checkMovers(
  cycle: number,
  url: string,
  key: string,
  gitdir: string,
  movers: MoverModel[],
  totals: { landedUnacked: number; pathChecks: number },
): Promise<string[]> {
  const problems: string[] = [];
  const names = movers.flatMap((m) => m.slots.flatMap((slot) => [`main:${slot}`, `main:.knowledge/items/${slot}`]));
  const objects = await catFileBatch(gitdir, names);
  const text = (name: string): string | null => objects.get(name)?.toString('utf8') ?? null;
  const headers = { Authorization: `Bearer ${key}` };

  const found = new Set<string>();
  const res = await fetch(`${url}/api/v1/knowledge/search?${new URLSearchParams({ q: 'mover', prefix: MOVE_PREFIX, limit: '100' })}`, { headers });
  const body = (await res.json()) as { data: { results: Array<{ path: string }> } };
  if (res.status !== 200) throw new Error(`search answered ${res.status}: ${JSON.stringify(body)}`);
  for (const r of body.data.results) found.add(r.path);

  for (const [n, m] of movers.entries()) {
    totals.pathChecks++;
    const where = `cycle ${cycle}: mover ${n} (acknowledged at ${m.slots[m.at]}${m.inFlight ? ', a move in flight' : ''})`;
    const whole = m.slots.map((slot) => {
      const content = text(`main:${slot}`);
      const record = text(`main:.knowledge/items/${slot}`);
      return { slot, content, record: record === null ? null : (JSON.parse(record) as { id: string; path: string; deletedAt: string | null }) };
    });
    const present = whole.filter((w) => w.content !== null || w.record !== null);
    if (present.length !== 1) {
      problems.push(`${where}: in git at ${present.length} paths: ${JSON.stringify(whole)}`);
      continue;
    }
    const [here] = present as [(typeof whole)[number]];
    const at = m.slots.indexOf(here.slot) as 0 | 1;
    if (here.content !== moverContent(n) || here.record?.id !== m.id || here.record.path !== here.slot || here.record.deletedAt !== null) {
      problems.push(`${where}: half-moved in git at ${here.slot}: ${JSON.stringify(here)}`);
      continue;
    }
    if (at !== m.at && !m.inFlight) problems.push(`${where}: git has it at ${here.slot}, and no move was in flight`);
    if (at !== m.at) totals.landedUnacked++;
    m.at = at;
    m.inFlight = false;

    const get = async (slot: string): Promise<{ status: number; id?: string }> => {
      const r = await fetch(`${url}/api/v1/knowledge/items/${slot}`, { headers });
      const b = (await r.json()) as { data?: { item: { id: string } } };
      return { status: r.status, id: b.data?.item.id };
    };
    const [there, away] = [await get(m.slots[at]), await get(m.slots[1 - at] as string)];
    if (there.status !== 200 || there.id !== m.id) problems.push(`${where}: GET ${m.slots[at]} answered ${there.status} (id ${there.id})`);
    if (away.status !== 404) problems.push(`${where}: GET ${m.slots[1 - at]} answered ${away.status}, expected 404`);
    for (const slot of m.slots) {
      if (found.has(slot) !== (slot === m.slots[at])) problems.push(`${where}: search ${found.has(slot) ? 'finds' : 'misses'} ${slot}`);
    }
    const h = await fetch(`${url}/api/v1/knowledge/history/${m.slots[at]}`, { headers });
    const actions = ((await h.json()) as { data?: { versions: Array<{ action: string }> } }).data?.versions.map((v) => v.action).reverse() ?? [];
    if (actions[0] !== 'create' || actions.slice(1).some((a) => a !== 'move') || (actions.length - 1) % 2 !== at) {
      problems.push(`${where}: history ${actions.join(', ')}`);
    }
  }
  return problems;
}
