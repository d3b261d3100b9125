/**
 * How long an organization's opening holds the event loop, in process: the repository (its index snapshot and
 * history log, read from a copy of the bench's 50,000-item organization, without its search index) opened and
 * closed in rounds while a 1 ms timer measures the longest gap between its runs, i.e. the longest stretch no
 * other request could have been answered. Prints per round the time to open, the longest gap and the next ones.
 * What an opening costs the other organizations of the process: each reopening after `KNOWLEDGE_MAX_OPEN_ORGS`
 * closed it costs it again.
 *
 *   npx tsx test/bench/orgOpen.ts [--data .tmp/bench/work/worst] [--org bench] [--rounds 5]
 *
 * `PROFILE=1` writes a CPU profile of the rounds to .tmp/bench/profiles/ and prints what ran in the longest gaps. The default data is the search bench's
 * organization (`npm run bench` builds it); paths are from the current directory, so that the built script (`node dist/test/bench/orgOpen.js`, what the server runs) finds them too.
 */
import { promises as nodeFs } from 'node:fs';
import { cp, mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Session } from 'node:inspector/promises';
import { silentLogger } from '../../src/common/log.js';
import type { FsPromises } from '../../src/storage/fs/fs.js';
import { OrgRepo } from '../../src/storage/repo/orgRepo.js';
import { scriptOptions } from './settings.js';

const options = scriptOptions();
const DATA = options.text('--data') ?? join(process.cwd(), '.tmp/bench/work/worst');
const ORG = options.text('--org') ?? 'bench';
const ROUNDS = options.number('--rounds', 5);
const copy = join(process.cwd(), '.tmp/bench/org-open');
const gitdir = join(copy, `${ORG}.git`);

await rm(copy, { recursive: true, force: true });
await mkdir(copy, { recursive: true });
// The search index is not the repository's to open (and is 300 MB): left behind.
await cp(join(DATA, 'orgs', `${ORG}.git`), gitdir, { recursive: true, filter: (from) => !from.includes('knowledge-search') });

/** A gap between two runs of the timer: its length (ms) and its ends on the CPU profile's clock (µs). */
interface Gap {
  ms: number;
  from: number;
  to: number;
}

const nowUs = (): number => Number(process.hrtime.bigint() / 1000n);

/** Gaps between the runs of a 1 ms timer while `work` runs, longest first. */
async function gapsDuring(work: () => Promise<void>): Promise<Gap[]> {
  const gaps: Gap[] = [];
  let last = nowUs();
  let on = true;
  const tick = (): void => {
    const now = nowUs();
    gaps.push({ ms: (now - last) / 1000, from: last, to: now });
    last = now;
    if (on) setTimeout(tick, 1);
  };
  setTimeout(tick, 1);
  await work();
  on = false;
  return gaps.sort((a, b) => b.ms - a.ms);
}

interface Profile {
  nodes: { id: number; callFrame: { functionName: string; url: string; lineNumber: number } }[];
  startTime: number;
  samples: number[];
  timeDeltas: number[];
}

/** What the profile sampled inside the gap, by function (self time), most first. */
function inside(profile: Profile, gap: Gap): string {
  const names = new Map(profile.nodes.map((n) => [n.id, `${n.callFrame.functionName || '(anonymous)'} ${n.callFrame.url.split('/').pop() ?? ''}:${n.callFrame.lineNumber + 1}`]));
  const self = new Map<string, number>();
  let t = profile.startTime;
  profile.samples.forEach((id, i) => {
    t += profile.timeDeltas[i] ?? 0;
    if (t < gap.from || t > gap.to) return;
    const name = names.get(id) ?? '?';
    self.set(name, (self.get(name) ?? 0) + (profile.timeDeltas[i] ?? 0) / 1000);
  });
  return [...self].sort((a, b) => b[1] - a[1]).slice(0, 6).map(([name, ms]) => `${name} ${ms.toFixed(1)}`).join(' | ');
}

const session = process.env.PROFILE === '1' ? new Session() : null;
if (session) {
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.setSamplingInterval', { interval: 100 });
  await session.post('Profiler.start');
}
const fs = nodeFs as unknown as FsPromises;
const longest: Gap[] = [];
for (let round = 1; round <= ROUNDS; round++) {
  let repo: OrgRepo | null = null;
  const started = performance.now();
  let openMs = 0;
  const gaps = await gapsDuring(async () => {
    repo = await OrgRepo.open({ orgId: ORG, fs, gitdir, logger: silentLogger });
    openMs = performance.now() - started;
  });
  const opened = repo as OrgRepo | null;
  const items = opened ? [...opened.entries()].length : 0;
  await opened?.close();
  console.log(`round ${round}: open ${openMs.toFixed(0)} ms (${items} items); longest gaps ${gaps.slice(0, 4).map((g) => g.ms.toFixed(1)).join(', ')} ms`);
  longest.push(...gaps.slice(0, 2));
}
if (session) {
  const { profile } = await session.post('Profiler.stop');
  console.log('what ran in the longest gaps (self ms, sampled every 0.1 ms):');
  for (const gap of longest.sort((a, b) => b.ms - a.ms).slice(0, 4)) console.log(`  ${gap.ms.toFixed(1)} ms: ${inside(profile as Profile, gap)}`);
  const dir = join(process.cwd(), '.tmp/bench/profiles');
  await mkdir(dir, { recursive: true });
  const file = join(dir, `org-open-${Date.now()}.cpuprofile`);
  await writeFile(file, JSON.stringify(profile));
  console.log(`profile: ${file}`);
}
await rm(copy, { recursive: true, force: true });
