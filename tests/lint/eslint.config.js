// ESLint's flat config for scripts/check.sh's `js` and `js-ui` checks (run from the repository
// root with --config, so the patterns below are relative to the root). ESLint's recommended
// rules, plus a few that catch real mistakes; formatting is left to the authors.
import js from '@eslint/js';
import globals from 'globals';
import { readFileSync } from 'node:fs';

// ui/: the files ui/index.html loads as classic <script>s (no type="module") are scripts;
// every other .js under ui/ is an ES module (imported by one).
const html = readFileSync(new URL('../../ui/index.html', import.meta.url), 'utf8');
const uiScripts = [...html.matchAll(/<script\b([^>]*)>/gi)]
  .filter((m) => !/\btype\s*=\s*["']?module\b/i.test(m[1]))
  .map((m) => /\bsrc\s*=\s*["']?([^"'\s>]+)/i.exec(m[1])?.[1])
  .filter((src) => src && !/^[a-z]+:/i.test(src))
  .map((src) => 'ui/' + src.replace(/^(\.\/|\/ui\/|\/)/, ''));

const rules = {
  ...js.configs.recommended.rules,
  'no-unused-vars': ['error', { argsIgnorePattern: '^_', ignoreRestSiblings: true }],
  eqeqeq: ['error', 'always', { null: 'ignore' }],
  'no-var': 'error',
  'prefer-const': 'error',
};

export default [
  { linterOptions: { reportUnusedDisableDirectives: 'error' } },
  {
    files: ['ui/**/*.js'],
    languageOptions: { ecmaVersion: 'latest', sourceType: 'module', globals: globals.browser },
    rules,
  },
  ...(uiScripts.length
    ? [{ files: uiScripts, languageOptions: { sourceType: 'script' } }]
    : []),
  {
    files: ['tests/**/*.{js,mjs}', 'bench/**/*.{js,mjs}'],
    languageOptions: { ecmaVersion: 'latest', sourceType: 'module', globals: globals.node },
    rules,
  },
  { files: ['tests/lint/eslint.config.js'], languageOptions: { sourceType: 'module', globals: globals.node }, rules },
];
