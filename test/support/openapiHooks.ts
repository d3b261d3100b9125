import { mismatches } from './openapiCheck.js';

/**
 * Mocha root hooks (loaded by .mocharc.json): a test during which a response broke the API description
 * fails, with every mismatch listed. Cleared first, so the next test starts clean.
 */
export const mochaHooks = {
  afterEach(): void {
    if (mismatches.length === 0) return;
    const found = mismatches.splice(0);
    throw new Error(`${found.length} response(s) do not match the API description (src/http/openapi/):\n  ${found.join('\n  ')}`);
  },
};
