// docs/round-lifecycle.md follows one round file by file: every step of its tables names a file
// and a function, and both must exist (a renamed or moved function fails here, not in a
// newcomer's hands). The steps are numbered 1, 2, … in reading order, and the page covers the
// round from the CLI command to the switch.
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '../..');
const PAGE = 'docs/round-lifecycle.md';

interface Step {
  readonly step: number;
  readonly file: string;
  readonly name: string;
}

/** The rows `| n | \`file\` | \`function\` | … |` of the page's tables. */
function steps(markdown: string): Step[] {
  const out: Step[] = [];
  for (const line of markdown.split('\n')) {
    const m = /^\|\s*(\d+)\s*\|\s*`([^`]+)`\s*\|\s*`([^`]+)`\s*\|/.exec(line);
    if (m) out.push({ step: Number(m[1]), file: m[2]!, name: m[3]! });
  }
  return out;
}

/**
 * Whether `source` defines `name`: a function, a class, a constant, a method (`#private` too) or
 * an object literal's property or method.
 */
function defines(source: string, name: string): boolean {
  const n = name.replace(/[$#]/g, (c) => `\\${c}`);
  return [
    new RegExp(`\\bfunction\\s+${n}\\s*[(<]`),
    new RegExp(`\\bclass\\s+${n}\\b`),
    new RegExp(`\\bconst\\s+${n}\\s*[:=]`),
    new RegExp(`^\\s*(?:async\\s+)?${n}\\s*[(<:]`, 'm'),
  ].some((re) => re.test(source));
}

describe(PAGE, () => {
  const list = steps(readFileSync(join(ROOT, PAGE), 'utf8'));

  it('numbers its steps 1, 2, … from `cohort coordinator` to the switch', () => {
    expect(list.length).toBeGreaterThanOrEqual(30);
    expect(list.map((s) => s.step)).toEqual(list.map((_, i) => i + 1));
    expect(list[0]!.file).toBe('src/cli/commands/coordinator.ts');
    expect(list.at(-1)!.file).toBe('src/services/agent/switcher.ts');
  });

  it('names, at every step, a function that exists in the file it names', () => {
    const missing = list.filter((s) => {
      const path = join(ROOT, s.file);
      return !existsSync(path) || !defines(readFileSync(path, 'utf8'), s.name);
    });
    expect(missing).toEqual([]);
  });

  it('the check finds definitions of every form and nothing else', () => {
    const source = [
      'export async function runRound(host) {}',
      'class Intake {',
      '  accept(a, b) {}',
      '  async #onDecision(entry) {}',
      '}',
      'const plan = { settle: async () => 1 };',
      'export const trainingSitePlan = {',
      '  refusal: refuse,',
      '};',
      '// calls runOther(x) and uses plan.settle',
    ].join('\n');
    for (const name of ['runRound', 'Intake', 'accept', '#onDecision', 'trainingSitePlan', 'refusal'])
      expect(defines(source, name), name).toBe(true);
    for (const name of ['runOther', 'onDecision', 'runRoun', 'Intak', 'missing'])
      expect(defines(source, name), name).toBe(false);
  });
});
