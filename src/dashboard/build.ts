import { build } from 'esbuild';
import { packageRoot } from '../common/packageInfo.js';
import { copyFile, mkdir } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

/**
 * Builds the admin dashboard into `outDir` (dist/dashboard by default): the client
 * TypeScript bundled by esbuild into one app.js (markdown-it included, so nothing is
 * fetched from elsewhere at run time), and the static index.html and app.css copied
 * as they are. Type checking is tsc's job (`npm run typecheck`), not esbuild's.
 */
export async function buildDashboard(options: { root?: string; outDir?: string } = {}): Promise<string> {
  const root = options.root ?? packageRoot();
  const source = join(root, 'src', 'dashboard');
  const outDir = options.outDir ?? join(root, 'dist', 'dashboard');
  await mkdir(outDir, { recursive: true });
  await build({
    entryPoints: [join(source, 'client', 'main.ts')],
    outfile: join(outDir, 'app.js'),
    bundle: true,
    format: 'esm',
    platform: 'browser',
    target: ['es2022'],
    minify: true,
    legalComments: 'eof',
    logLevel: 'warning',
  });
  for (const file of ['index.html', 'app.css']) await copyFile(join(source, 'static', file), join(outDir, file));
  return outDir;
}

// `node dist/src/dashboard/build.js` (npm run build): silent on success, like tsc before it.
if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) await buildDashboard();
