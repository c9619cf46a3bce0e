// `npm run bench:readme`: rewrites the README's benchmark tables from bench/results/*.json.
// `npm run bench:readme -- --check` only reports (exit 1) when a table differs from its file.
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { renderReadme } from './readme-tables.ts';

const README = fileURLToPath(new URL('../README.md', import.meta.url));
const check = process.argv.includes('--check');
const before = readFileSync(README, 'utf8');
const { text, blocks } = renderReadme(before);
if (check) {
  if (text !== before) {
    console.error('README.md: a benchmark table differs from bench/results; run `npm run bench:readme`');
    process.exit(1);
  }
  console.log(`README.md: ${blocks.length} benchmark tables match bench/results (${blocks.join(', ')})`);
} else {
  if (text !== before) writeFileSync(README, text);
  console.log(`README.md: ${blocks.length} benchmark tables rendered (${blocks.join(', ')})`);
}
