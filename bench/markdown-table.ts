/**
 * A Markdown table as lines, cells padded to their column's width (the layout the repository's
 * formatter keeps), `|` in a cell escaped. Every row must have as many cells as `head`.
 */
export function markdownTable(head: readonly string[], rows: readonly (readonly string[])[]): string[] {
  const esc = (s: string) => s.replaceAll('|', '\\|');
  const cells = [head, ...rows].map((r, i) => {
    if (r.length !== head.length)
      throw new Error(`table row ${i}: ${r.length} cells, head has ${head.length}`);
    return r.map(esc);
  });
  const widths = head.map((_, c) => Math.max(3, ...cells.map((r) => width(r[c]!))));
  const line = (r: readonly string[]) =>
    `| ${r.map((x, c) => x + ' '.repeat(widths[c]! - width(x))).join(' | ')} |`;
  return [
    line(cells[0]!),
    `| ${widths.map((w) => '-'.repeat(w)).join(' | ')} |`,
    ...cells.slice(1).map(line),
  ];
}

const graphemes = new Intl.Segmenter('en', { granularity: 'grapheme' });

/** Characters as the formatter counts them: a letter with a combining mark (Δ̄) is one. */
function width(s: string): number {
  let n = 0;
  for (const _ of graphemes.segment(s)) n++;
  return n;
}
