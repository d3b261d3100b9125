// The layering the code keeps (README, "How the code is laid out"): each room imports only from the
// rooms below it, and no module reaches itself through a cycle. `npm run lint` runs this check.
/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    { name: 'no-circular', severity: 'error', comment: 'A cycle makes load order matter and the layers meaningless.', from: {}, to: { circular: true } },
    {
      name: 'common-is-the-floor',
      severity: 'error',
      comment: 'common/ holds what every layer uses (errors, log, clock); it depends on none of them.',
      from: { path: '^src/common/' },
      to: { path: '^src/(app|cli|http|domain|storage|dashboard)/' },
    },
    {
      name: 'storage-below-domain',
      severity: 'error',
      comment: 'storage/ keeps bytes safe and knows nothing of roles, routes or the process.',
      from: { path: '^src/storage/' },
      to: { path: '^src/(app|cli|http|domain|dashboard)/' },
    },
    {
      name: 'extract-is-a-leaf',
      severity: 'error',
      comment: 'extract/ turns bytes into text in worker threads; app/ hands it to the domain as a TextExtractor.',
      from: { path: '^src/extract/' },
      to: { path: '^src/(app|cli|http|domain|storage|dashboard)/' },
    },
    {
      name: 'domain-below-http',
      severity: 'error',
      comment: 'domain/ holds the rules; it is called by HTTP and the CLI, never the other way.',
      from: { path: '^src/domain/' },
      to: { path: '^src/(app|cli|http|dashboard)/' },
    },
    {
      name: 'http-below-app',
      severity: 'error',
      comment: 'http/ gets its dependencies passed in; only app/ wires them.',
      from: { path: '^src/http/' },
      to: { path: '^src/(app|cli)/' },
    },
    {
      name: 'app-below-cli',
      severity: 'error',
      from: { path: '^src/app/' },
      to: { path: '^src/cli/' },
    },
    {
      name: 'dashboard-client-is-browser-code',
      severity: 'error',
      comment: 'The dashboard bundle runs in a browser: of the server it may use only the pure rule modules.',
      from: { path: '^src/dashboard/client/' },
      to: { path: '^src/', pathNot: ['^src/dashboard/client/', '^src/domain/(permissions|paths|versionView)\\.ts$'] },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    exclude: { path: '^(dist|node_modules)/' },
  },
};
