// Preloaded with `node --import` by test/cliStartup.test.ts: every module the process loads, one URL per line, appended
// to $MODULE_TRACE_OUT by a load hook (which runs on the hooks' own thread and writes synchronously, so nothing is lost
// at exit).
import { register } from 'node:module';

register('./moduleTraceHooks.mjs', import.meta.url);
