// Preloaded (NODE_OPTIONS="--expose-gc --require <this file>") into the servers whose memory the search
// phase compares: SIGUSR2 runs a full garbage collection, so both are read without the garbage their
// start left behind (a server that allocates little after it starts may carry it for minutes).
globalThis.process.on('SIGUSR2', () => {
  if (typeof globalThis.gc === 'function') globalThis.gc();
});
