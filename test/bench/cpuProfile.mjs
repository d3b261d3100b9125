// Preloaded (NODE_OPTIONS="--import <this file>") into a server under study: profiles its CPU from the
// start and writes the profile (.cpuprofile, for Chrome's DevTools) into CPU_PROFILE_DIR on SIGUSR2.
// `--cpu-prof` itself is refused in NODE_OPTIONS.
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector';
import { join } from 'node:path';

const { process } = globalThis;
const session = new Session();
session.connect();
session.post('Profiler.enable', () => session.post('Profiler.setSamplingInterval', { interval: 200 }, () => session.post('Profiler.start')));
process.on('SIGUSR2', () => {
  session.post('Profiler.stop', (err, result) => {
    if (!err) writeFileSync(join(process.env.CPU_PROFILE_DIR || '.', `server-${process.pid}-${Date.now()}.cpuprofile`), JSON.stringify(result.profile));
    session.post('Profiler.start');
  });
});
