// A generated section of a markdown document: the text between `<!-- <name>:begin -->` and
// `<!-- <name>:end -->`, written from what a test observed (COHORT_WRITE_ATTACKS=1) and otherwise
// compared with it. Tables are compared cell by cell (the formatter pads columns), other lines with
// their whitespace collapsed. The attack tables (attack-ledger.ts) follow the same pattern.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'vitest';

/** docs/security.md, which most generated sections live in. */
export const SECURITY_DOC = join(import.meta.dirname, '..', '..', 'docs', 'security.md');

/** Whether this run writes the generated sections instead of checking them. */
export function writingDocs(): boolean {
  return process.env['COHORT_WRITE_ATTACKS'] === '1';
}

/** One markdown line as compared: a table row's trimmed cells, or the line's words. */
function normalized(line: string): string {
  const t = line.trim();
  if (t.startsWith('|')) {
    return t
      .replace(/^\||\|$/g, '')
      .split('|')
      .map((c) => (/^\s*:?-+:?\s*$/.test(c) ? '---' : c.trim()))
      .join(' | ');
  }
  return t.replace(/\s+/g, ' ');
}

/**
 * The blocks of `markdown` as compared: each table row's cells, and each paragraph (consecutive
 * other lines) with its whitespace collapsed, so that a formatter may pad or rewrap them.
 */
export function markdownLines(markdown: string): string[] {
  const out: string[] = [];
  let paragraph: string[] = [];
  const endParagraph = () => {
    if (paragraph.length > 0) out.push(paragraph.join(' '));
    paragraph = [];
  };
  for (const line of markdown.split('\n')) {
    const t = normalized(line);
    if (t === '') {
      endParagraph();
    } else if (line.trim().startsWith('|')) {
      endParagraph();
      out.push(t);
    } else {
      paragraph.push(t);
    }
  }
  endParagraph();
  return out;
}

/** The text of section `name` of `doc` (between its markers), or a failed expectation naming the marker. */
export function readSection(name: string, doc = SECURITY_DOC): string {
  const text = readFileSync(doc, 'utf8');
  const begin = `<!-- ${name}:begin -->`;
  const end = `<!-- ${name}:end -->`;
  const from = text.indexOf(begin);
  const to = text.indexOf(end);
  expect(from, `${doc} lacks the ${begin} marker`).toBeGreaterThanOrEqual(0);
  expect(to, `${doc} lacks the ${end} marker`).toBeGreaterThan(from);
  return text.slice(from + begin.length, to);
}

/**
 * Checks section `name` of `doc` against `markdown` (what the test observed), or rewrites it with
 * COHORT_WRITE_ATTACKS=1. Only the text between the markers is touched.
 */
export function verifySection(name: string, markdown: string, doc = SECURITY_DOC): void {
  const current = readSection(name, doc);
  if (writingDocs()) {
    const text = readFileSync(doc, 'utf8');
    const begin = `<!-- ${name}:begin -->`;
    const from = text.indexOf(begin) + begin.length;
    const to = text.indexOf(`<!-- ${name}:end -->`);
    writeFileSync(doc, `${text.slice(0, from)}\n${markdown.trim()}\n${text.slice(to)}`);
    return;
  }
  expect(markdownLines(current), `docs section ${name} differs from what was observed`).toEqual(
    markdownLines(markdown),
  );
}

/** A markdown table of `heading` and `rows` (cells must hold no `|`). */
export function markdownTable(heading: readonly string[], rows: readonly (readonly string[])[]): string {
  for (const cell of [...heading, ...rows.flat()]) {
    expect(cell.includes('|'), `table cell holds a pipe: ${cell}`).toBe(false);
  }
  return [
    `| ${heading.join(' | ')} |`,
    `|${heading.map(() => '---').join('|')}|`,
    ...rows.map((r) => `| ${r.join(' | ')} |`),
  ].join('\n');
}
