// `npm run bench:results`: rewrites the benchmark tables of docs/results.md and README.md from
// bench/results/*.json. `npm run bench:results -- --check` only reports (exit 1) when a table
// differs from its file.
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { renderBenchBlocks } from './result-tables.ts';

const PAGES = ['../docs/results.md', '../README.md'];
const check = process.argv.includes('--check');
let differs = false;
for (const page of PAGES) {
  const path = fileURLToPath(new URL(page, import.meta.url));
  const name = page.slice(3);
  const before = readFileSync(path, 'utf8');
  const { text, blocks } = renderBenchBlocks(before);
  if (check) {
    if (text !== before) {
      console.error(`${name}: a benchmark table differs from bench/results; run \`npm run bench:results\``);
      differs = true;
    } else {
      console.log(`${name}: ${blocks.length} benchmark tables match bench/results (${blocks.join(', ')})`);
    }
  } else {
    if (text !== before) writeFileSync(path, text);
    console.log(`${name}: ${blocks.length} benchmark tables rendered (${blocks.join(', ')})`);
  }
}
if (differs) process.exit(1);
