#!/usr/bin/env node
// The `knowledge-store` executable. The hold on V8's young generation comes first and the program
// after it: every static import of an ES module is read and compiled before any of them runs, which
// alone grew the young generation to 16 MiB, so the program is imported once the hold is in place.
import { holdForStartup } from '../common/youngGeneration.js';

holdForStartup();
await import('./run.js');
