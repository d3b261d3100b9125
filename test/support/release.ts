/**
 * The production install, as one string, so that the Dockerfile's runtime stage and the test that
 * really runs it on an unpacked release artifact (test/release/artifact.test.ts) cannot drift apart.
 */
export const PRODUCTION_INSTALL = 'npm ci --omit=dev --no-audit --no-fund';
