/**
 * What holding an organization costs every request (storage/repo/openOrgs.ts): `hold` and its release on an
 * organization already open, against the plain `get` every request made before, in-process, 1,000 organizations
 * open, rotating. Prints µs per call for each, in rounds.
 *
 *   npx tsx test/bench/orgHold.ts [--calls 1000000] [--rounds 3]
 */
import { silentLogger } from '../../src/common/log.js';
import { silentMetrics } from '../../src/common/metrics.js';
import { OpenOrgs, type OpenRepo } from '../../src/storage/repo/openOrgs.js';
import { scriptOptions } from './settings.js';

const options = scriptOptions();
const CALLS = options.number('--calls', 1_000_000);
const ROUNDS = options.number('--rounds', 3);
const ORGS = 1_000;

const repo: OpenRepo = { idle: true, queuedWrites: 0, close: async () => undefined };
const orgs = new OpenOrgs({ openRepo: async () => repo, maxOpen: ORGS, logger: silentLogger, metrics: silentMetrics });
const ids = Array.from({ length: ORGS }, (_, i) => `org${i}`);
for (const id of ids) await orgs.get(id);

for (let round = 1; round <= ROUNDS; round++) {
  let started = performance.now();
  for (let i = 0; i < CALLS; i++) (await orgs.hold(ids[i % ORGS] as string))?.release();
  const hold = ((performance.now() - started) * 1000) / CALLS;
  started = performance.now();
  for (let i = 0; i < CALLS; i++) await orgs.get(ids[i % ORGS] as string);
  const get = ((performance.now() - started) * 1000) / CALLS;
  console.log(`round ${round}: hold + release ${hold.toFixed(3)} µs, get ${get.toFixed(3)} µs (${CALLS} calls each)`);
}
