// @ts-check
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/', 'node_modules/', 'data/', 'fixtures/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', destructuredArrayIgnorePattern: '^_' }],
    },
  },
  {
    files: ['**/*.cjs'],
    languageOptions: { sourceType: 'commonjs', globals: { module: 'writable', require: 'readonly' } },
  },
  {
    // Plain JavaScript run by Node without a compiler (the build and release scripts).
    files: ['scripts/**/*.mjs'],
    languageOptions: { sourceType: 'module', globals: { process: 'readonly' } },
  },
  {
    // A module of ours imported at run time is a second copy of one the static graph already holds wherever that
    // graph was loaded another way (as CommonJS, as the tests loaded it through tsx until .mocharc.json made mocha
    // import them; test/moduleLoading.test.ts), and `instanceof` does not know a second copy's classes: a
    // KnowledgeError's 429 once became a 500 that way. Packages may be loaded late (src/http/mcp/sdk.ts), our own
    // modules not: what a start saves by loading late is in the packages. The CLI's late imports run in a process of
    // their own, where nothing else loaded them.
    files: ['src/**/*.ts'],
    ignores: ['src/cli/**'],
    rules: {
      'no-restricted-syntax': ['error', { selector: 'ImportExpression[source.value=/^\\.{1,2}\\//]', message: 'no late import() of our own modules outside src/cli: it can load a second copy (see eslint.config.js)' }],
    },
  },
  {
    files: ['test/**/*.ts'],
    rules: { '@typescript-eslint/no-unused-expressions': 'off' },
  },
);
