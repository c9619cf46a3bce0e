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
