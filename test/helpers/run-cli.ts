import { readFileSync } from 'node:fs';
import { expect } from 'vitest';
import type { AuditReport } from '../../src/audit/index.ts';
import { type CliContext, runCli } from '../../src/cli/index.ts';

/** Runs `cohort ...args` in-process; returns the exit status and what was written. */
export async function cohort(...args: string[]): Promise<{ status: number; stdout: string; stderr: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const ctx: CliContext = {
    stdout: { write: (s) => out.push(s) },
    stderr: { write: (s) => err.push(s) },
    env: {},
  };
  const status = await runCli(['node', 'cohort', ...args], ctx);
  return { status, stdout: out.join(''), stderr: err.join('') };
}

/**
 * `cohort audit verify --config <configPath> --member <member> --json [...flags]` in-process, as a
 * member's read-only NATS user: the report, once it exited 0 with nothing on stderr.
 */
export async function auditLive(
  configPath: string,
  member = 'auditor-1',
  ...flags: string[]
): Promise<AuditReport> {
  const r = await cohort('audit', 'verify', '--config', configPath, '--member', member, '--json', ...flags);
  expect(r.stderr).toBe('');
  expect(r.status).toBe(0);
  return JSON.parse(r.stdout) as AuditReport;
}

/**
 * `cohort audit export --config <configPath> --member <member> --out <path> [...flags]` in-process:
 * the bundle's bytes, once it exited 0 with nothing on stderr.
 */
export async function auditExport(
  configPath: string,
  path: string,
  member = 'auditor-1',
  ...flags: string[]
): Promise<Uint8Array> {
  const r = await cohort(
    'audit',
    'export',
    '--config',
    configPath,
    '--member',
    member,
    '--out',
    path,
    ...flags,
  );
  expect(r.stderr).toBe('');
  expect(r.status).toBe(0);
  return new Uint8Array(readFileSync(path));
}
