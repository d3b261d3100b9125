// Preloaded into the server by `TRACE_GC=1 npx tsx test/bench/events.ts`: V8 prints a line per garbage collection
// (--trace-gc may not be given in NODE_OPTIONS, so it is set from here). The bench counts them per kind of round.
globalThis.process.getBuiltinModule('node:v8').setFlagsFromString('--trace-gc');
