// The benchmark tables of docs/results.md are rendered from the tracked result files, never typed: each
// block matches its bench/results/<name>.json, and the renderer puts every row's floor and ratio
// beside it.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { renderBenchBlocks, renderResultTable } from '../../bench/result-tables.ts';
import type { BenchResultFile } from '../../bench/table.ts';

const PAGE = fileURLToPath(new URL('../../docs/results.md', import.meta.url));
const README = fileURLToPath(new URL('../../README.md', import.meta.url));

const file: BenchResultFile = {
  name: 'demo',
  date: '2026-12-01T10:00:00.000Z',
  machine: {
    cpu: 'Test CPU',
    cores: 2,
    memoryGiB: 24,
    node: 'v22.0.0',
    platform: 'linux',
    arch: 'x64',
    kernel: '6',
  },
  command: 'npm run bench -- demo',
  rows: [
    {
      section: 'site',
      metric: 'pipeline',
      value: 4_000_000,
      unit: 'params/s',
      compare: '≥ 1,000,000',
      pass: true,
      floor: { metric: 'SEAL alone', value: 5_000_000 },
    },
    { section: 'site', metric: 'hidden', value: 1, unit: '', compare: '', detail: true },
    { section: 'wire', metric: 'bytes | param', value: 5.5, unit: 'B', compare: '' },
  ],
};

describe('benchmark tables', () => {
  it('renders the machine, the command, each row with its floor and ratio, and leaves detail rows out', () => {
    expect(renderResultTable(file).split('\n')).toEqual([
      '`npm run bench -- demo` on Test CPU (2 cores, 24 GiB), Node v22.0.0, 2026-12-01; `bench/results/demo.json`:',
      '',
      '| section | metric         | measured           | floor (same run)                | ratio | goal / baseline | met |',
      '| ------- | -------------- | ------------------ | ------------------------------- | ----- | --------------- | --- |',
      '| site    | pipeline       | 4,000,000 params/s | 5,000,000 params/s (SEAL alone) | 0.80× | ≥ 1,000,000     | yes |',
      '| wire    | bytes \\| param | 5.500 B            | —                               | —     | —               |     |',
    ]);
  });

  it('replaces only the marked blocks and names the missing result file', () => {
    const text = 'a\n<!-- bench: demo -->\nold\n<!-- /bench -->\nb\n';
    const { text: out, blocks } = renderBenchBlocks(text, () => file);
    expect(blocks).toEqual(['demo']);
    expect(out.startsWith('a\n<!-- bench: demo -->\n\n`npm run bench -- demo`')).toBe(true);
    expect(out.endsWith('\n\n<!-- /bench -->\nb\n')).toBe(true);
    expect(() => renderBenchBlocks('<!-- bench: nothing-here -->\n<!-- /bench -->')).toThrow(
      /bench\/results\/nothing-here\.json.*npm run bench -- nothing-here/,
    );
  });

  it('the tables of docs/results.md and README.md match bench/results', () => {
    for (const page of [PAGE, README]) {
      const text = readFileSync(page, 'utf8');
      expect(renderBenchBlocks(text).text, page).toBe(text);
    }
    // The README's threshold block holds only the sections it names.
    const readme = readFileSync(README, 'utf8');
    const block = readme.slice(readme.indexOf('<!-- bench: threshold sections=wire,round -->'));
    const table = block.slice(0, block.indexOf('<!-- /bench -->'));
    expect(table).toMatch(/\| wire +\|/);
    expect(table).toMatch(/\| round +\|/);
    expect(table).not.toMatch(/\| decryption +\|/);
  });
});
