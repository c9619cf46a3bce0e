// The benchmark tables of docs/results.md and README.md, rendered from the tracked result files: a
// block `<!-- bench: NAME -->` … `<!-- /bench -->` holds the table of bench/results/NAME.json (or,
// with `sections=a,b`, only the rows of those sections), never a figure typed by hand.
// `npm run bench:results` rewrites the blocks; test/bench checks they match.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { markdownTable } from './markdown-table.ts';
import { type BenchResultFile, type BenchRow, formatRatio, formatValue, RESULTS_DIR } from './table.ts';

const BLOCK = /<!-- bench: ([a-z0-9-]+)(?: sections=([a-z0-9,-]+))? -->\n[\s\S]*?<!-- \/bench -->/g;

/** Reads bench/results/<name>.json (or from `dir`), naming the file when it is missing or malformed. */
export function readResultFile(name: string, dir = RESULTS_DIR): BenchResultFile {
  const path = join(dir, `${name}.json`);
  let file: BenchResultFile;
  try {
    file = JSON.parse(readFileSync(path, 'utf8')) as BenchResultFile;
  } catch (err) {
    throw new Error(`cannot read ${path} (run \`npm run bench -- ${name}\`): ${(err as Error).message}`);
  }
  if (file.machine === undefined || !Array.isArray(file.rows))
    throw new Error(`${path}: no machine or rows; rerun \`npm run bench -- ${name}\``);
  return file;
}

function rowCells(r: BenchRow): string[] {
  const unit = r.unit === '' ? '' : ` ${r.unit}`;
  return [
    r.section,
    r.metric,
    `${formatValue(r.value)}${unit}`,
    r.floor === undefined ? '—' : `${formatValue(r.floor.value)}${unit} (${r.floor.metric})`,
    r.floor === undefined ? '—' : formatRatio(r),
    r.compare === '' ? '—' : r.compare,
    r.pass === undefined ? '' : r.pass ? 'yes' : '**no**',
  ];
}

/**
 * The Markdown of one result file: where and how it was measured, then its rows with floors (only
 * those of `sections`, when given).
 */
export function renderResultTable(file: BenchResultFile, sections?: readonly string[]): string {
  const m = file.machine;
  const head = ['section', 'metric', 'measured', 'floor (same run)', 'ratio', 'goal / baseline', 'met'];
  const rows = file.rows
    .filter((r) => r.detail !== true && (sections === undefined || sections.includes(r.section)))
    .map(rowCells);
  if (rows.length === 0)
    throw new Error(`bench/results/${file.name}.json has no rows in sections ${sections?.join(', ')}`);
  return [
    `\`${file.command}\` on ${m.cpu} (${m.cores} cores, ${m.memoryGiB} GiB), Node ${m.node}, ` +
      `${file.date.slice(0, 10)}; \`bench/results/${file.name}.json\`:`,
    '',
    ...markdownTable(head, rows),
  ].join('\n');
}

/**
 * `text` with every bench block replaced by the table of its result file (read by `read`).
 * Returns the new text and the names of the blocks it rendered.
 */
export function renderBenchBlocks(
  text: string,
  read: (name: string) => BenchResultFile = (n) => readResultFile(n),
): { text: string; blocks: string[] } {
  const blocks: string[] = [];
  const out = text.replace(BLOCK, (_all, name: string, sections: string | undefined) => {
    blocks.push(name);
    const only = sections === undefined ? '' : ` sections=${sections}`;
    return `<!-- bench: ${name}${only} -->\n\n${renderResultTable(read(name), sections?.split(','))}\n\n<!-- /bench -->`;
  });
  return { text: out, blocks };
}
