import { ExtractionFailed } from '../domain/errors.js';
import type { TextExtractor } from '../domain/files.js';
import { ExtractionError, ExtractorPool } from '../extract/extractorPool.js';
import type { Config } from './config.js';

/** A DOCX that says it unpacks to more than this is refused before it is opened (a zip bomb). */
const MAX_INFLATED_BYTES = 128 * 1024 * 1024;
/** A PDF of more pages is refused before any page is read. */
const MAX_PDF_PAGES = 5_000;

/** The worker-thread extractor, its refusals turned into the domain's `ExtractionFailed` (422). */
export function createExtractor(config: Pick<Config, 'extractTimeoutMs' | 'extractMemoryMb'>): TextExtractor & { pool: ExtractorPool } {
  const pool = new ExtractorPool({ timeoutMs: config.extractTimeoutMs, maxHeapMb: config.extractMemoryMb, maxInflatedBytes: MAX_INFLATED_BYTES, maxPdfPages: MAX_PDF_PAGES });
  return {
    pool,
    extract: async (job) => {
      try {
        return await pool.extract(job);
      } catch (err) {
        if (err instanceof ExtractionError) throw new ExtractionFailed({ reason: err.message });
        throw err;
      }
    },
  };
}
