// globalSetup of the fault suite (vitest.faults.config.ts): hands the cases a folder for their rows
// and, once every case of FAULT_CASES reported one, writes the outcome table into docs/faults.md
// between its markers. A run with a failed or skipped case leaves the document as it was.
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { TestProject } from 'vitest/node';
import { markdownTable } from '../../bench/markdown-table.ts';
import { FAULT_CASES, type FaultRow } from './fault-cases.ts';

const DOC = fileURLToPath(new URL('../../docs/faults.md', import.meta.url));
const BEGIN = '<!-- faults:table:begin -->';
const END = '<!-- faults:table:end -->';

function render(rows: readonly FaultRow[]): string {
  const head = [
    'case',
    'fault',
    'injected at',
    'outcome',
    'committed',
    'aborted',
    'drift',
    'log entries (+ appended)',
  ];
  return [
    `Run ${new Date().toISOString().slice(0, 10)} on ${cpus().length} × ${cpus()[0]?.model.trim() ?? 'unknown CPU'}, Node ${process.version}.`,
    '',
    ...markdownTable(
      head,
      rows.map((r) =>
        [
          r.id,
          r.fault,
          r.injectedAt,
          r.outcome,
          r.committed,
          r.aborted,
          r.drift,
          `${r.logEntries} (+${r.appended})`,
        ].map(String),
      ),
    ),
  ].join('\n');
}

export default function setup(project: TestProject): () => void {
  const dir = mkdtempSync(join(tmpdir(), 'cohort-faults-'));
  project.provide('faultRowsDir', dir);
  return () => {
    try {
      const rows: FaultRow[] = [];
      const missing: string[] = [];
      for (const id of FAULT_CASES) {
        const file = join(dir, `${id}.json`);
        if (existsSync(file)) rows.push(JSON.parse(readFileSync(file, 'utf8')) as FaultRow);
        else missing.push(id);
      }
      if (missing.length > 0) {
        console.warn(`fault table not written: no outcome from ${missing.join(', ')}`);
        return;
      }
      const doc = readFileSync(DOC, 'utf8');
      const a = doc.indexOf(BEGIN);
      const b = doc.indexOf(END);
      if (a < 0 || b < a) throw new Error(`${DOC} lacks the markers ${BEGIN} … ${END}`);
      writeFileSync(DOC, `${doc.slice(0, a + BEGIN.length)}\n${render(rows)}\n${doc.slice(b)}`);
      console.log(`fault table written to ${DOC}`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  };
}
