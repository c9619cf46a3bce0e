// `npm run bench:results`: rewrites the benchmark tables of docs/results.md from bench/results/*.json.
// `npm run bench:results -- --check` only reports (exit 1) when a table differs from its file.
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { renderBenchBlocks } from './result-tables.ts';

const PAGE = fileURLToPath(new URL('../docs/results.md', import.meta.url));
const check = process.argv.includes('--check');
const before = readFileSync(PAGE, 'utf8');
const { text, blocks } = renderBenchBlocks(before);
if (check) {
  if (text !== before) {
    console.error(
      'docs/results.md: a benchmark table differs from bench/results; run `npm run bench:results`',
    );
    process.exit(1);
  }
  console.log(
    `docs/results.md: ${blocks.length} benchmark tables match bench/results (${blocks.join(', ')})`,
  );
} else {
  if (text !== before) writeFileSync(PAGE, text);
  console.log(`docs/results.md: ${blocks.length} benchmark tables rendered (${blocks.join(', ')})`);
}
