// The attack tables of docs/security.md, written from what the adversarial tests observed.
//
// Each test file owns one section of docs/security.md, between `<!-- attacks:<section>:begin -->`
// and `<!-- attacks:<section>:end -->`. A test states each attack's outcome as facts; each fact
// asserts what it claims against the observed value and renders its words from that value, so a
// row in the table is never a literal the test pushes: it is what the assertions held. At the end
// of the file, `ledger.verify()` compares the section with the rows (cell by cell), or rewrites it
// when COHORT_WRITE_ATTACKS=1.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'vitest';

const DOC = join(import.meta.dirname, '..', '..', 'docs', 'security.md');

/** One checked statement about an attack's outcome: its text comes from the observed value. */
export interface Fact {
  readonly text: string;
}

/** The attack was refused with `reason` (a stable code): `observed` is the code seen (or a message holding it). */
export function refusedAs(reason: string, observed: string | undefined, by = ''): Fact {
  expect(observed ?? '', `expected a refusal ${reason}`).toMatch(new RegExp(`\\b${reason}\\b`));
  return { text: `refused${by === '' ? '' : ` by ${by}`} \`${reason}\`` };
}

/**
 * A counter named `name` rose by at least `min` across the attack (`before` read just before it,
 * `after` after it): comparing with the value before keeps an earlier attack's count out.
 */
export function counted(name: string, before: number, after: number, min = 1): Fact {
  expect(after - before, `${name} before ${before}, after ${after}`).toBeGreaterThanOrEqual(min);
  return { text: `counted in \`${name}\`` };
}

/** A counter that must not move (the attack cost nothing of that kind). */
export function unchanged(name: string, before: number, after: number): Fact {
  expect(after, `${name} moved from ${before}`).toBe(before);
  return { text: `\`${name}\` unchanged` };
}

/** A boolean outcome stated in words: asserts `observed === expected` and renders `text`. */
export function holds(text: string, observed: boolean, expected = true): Fact {
  expect(observed, text).toBe(expected);
  return { text };
}

/** Honest rounds committed after the attack (`round` is the attack's last round). */
export function honestRoundsCommit(committedAfter: boolean): Fact {
  return holds('honest rounds commit afterwards', committedAfter);
}

/** One row of a table: the break's number in the issue, the attack, and the checked facts. */
export interface AttackRow {
  readonly item: number;
  readonly attack: string;
  readonly outcome: string;
}

/** A markdown table's cells, trimmed (a separator row's cells read `---`). */
function cells(markdown: string): string[][] {
  return markdown
    .trim()
    .split('\n')
    .map((line) =>
      line
        .trim()
        .replace(/^\||\|$/g, '')
        .split('|')
        .map((c) => (/^\s*-+\s*$/.test(c) ? '---' : c.trim())),
    );
}

/** The rows of one docs/security.md section, written by one test file. */
export class AttackLedger {
  readonly section: string;
  readonly #heading: readonly [string, string, string];
  readonly #rows: AttackRow[] = [];

  /** @param heading the table's three column titles. */
  constructor(section: string, heading: readonly [string, string, string]) {
    this.section = section;
    this.#heading = heading;
  }

  /** Records an attack whose outcome is `facts` (each already asserted). */
  record(item: number, attack: string, facts: readonly Fact[]): void {
    expect(facts.length, `attack "${attack}" states no outcome`).toBeGreaterThan(0);
    const words = facts.map((f) => f.text).join('; ');
    this.#rows.push({ item, attack, outcome: `${words.charAt(0).toUpperCase()}${words.slice(1)}` });
  }

  get rows(): readonly AttackRow[] {
    return this.#rows;
  }

  table(): string {
    const [a, b, c] = this.#heading;
    const lines = [`| ${a} | ${b} | ${c} |`, '|---|---|---|'];
    const sorted = [...this.#rows].sort((x, y) => x.item - y.item || (x.attack < y.attack ? -1 : 1));
    for (const r of sorted) lines.push(`| ${r.item} | ${r.attack} | ${r.outcome} |`);
    return lines.join('\n');
  }

  /**
   * Checks the section of docs/security.md against the rows recorded (call it in the file's last
   * test), or rewrites the section with COHORT_WRITE_ATTACKS=1.
   */
  verify(): void {
    const begin = `<!-- attacks:${this.section}:begin -->`;
    const end = `<!-- attacks:${this.section}:end -->`;
    const doc = readFileSync(DOC, 'utf8');
    const from = doc.indexOf(begin);
    const to = doc.indexOf(end);
    expect(from, `docs/security.md lacks the ${begin} marker`).toBeGreaterThanOrEqual(0);
    expect(to, `docs/security.md lacks the ${end} marker`).toBeGreaterThan(from);
    if (process.env['COHORT_WRITE_ATTACKS'] === '1') {
      writeFileSync(DOC, `${doc.slice(0, from + begin.length)}\n${this.table()}\n${doc.slice(to)}`);
      return;
    }
    // Cell by cell: the formatter may pad the columns.
    expect(cells(doc.slice(from + begin.length, to))).toEqual(cells(this.table()));
  }
}
