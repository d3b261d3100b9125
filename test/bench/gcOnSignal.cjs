// Preloaded (NODE_OPTIONS="--expose-gc --require <this file>") into the servers whose memory the search
// phase compares: SIGUSR2 runs a full garbage collection, so both are read without the garbage their
// start left behind (a server that allocates little after it starts may carry it for minutes).
// With KNOWLEDGE_BENCH_GC_REPORT set, the process's own view of its memory after the GC (V8 heap,
// external memory, which holds the WebAssembly SQLite's heap) is written to that file, so a bench can
// say what the RSS is made of.
globalThis.process.on('SIGUSR2', () => {
  if (typeof globalThis.gc === 'function') globalThis.gc();
  const report = globalThis.process.env.KNOWLEDGE_BENCH_GC_REPORT;
  if (!report) return;
  const spaces = globalThis.process.getBuiltinModule('node:v8').getHeapSpaceStatistics();
  const usage = { ...globalThis.process.memoryUsage(), spaces: Object.fromEntries(spaces.map((s) => [s.space_name, { size: s.space_size, used: s.space_used_size }])) };
  globalThis.process.getBuiltinModule('node:fs').writeFileSync(report, JSON.stringify(usage));
});
