// `cohort` loads only the command it runs: program.ts imports no command module statically, a
// run of one command registers that one whole and lists the others by name and summary, and each
// summary is the description its command gives itself (so `--help` never drifts from the
// commands). `help <command>` loads that command.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { COMMANDS, commandOf, createProgram, runCli } from '../../src/cli/index.ts';

const quiet = { stdout: { write: () => true }, stderr: { write: () => true }, env: {} };

async function run(...args: string[]): Promise<{ status: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const status = await runCli(['node', 'cohort', ...args], {
    stdout: { write: (s: string) => (out += s) },
    stderr: { write: (s: string) => (err += s) },
    env: {},
  });
  return { status, out, err };
}

describe('lazy commands', () => {
  it('program.ts imports no command module up front', () => {
    const source = readFileSync(new URL('../../src/cli/program.ts', import.meta.url), 'utf8');
    expect(source).not.toMatch(/^import[^;]*from '\.\/commands\//m);
    expect(source).toMatch(/import\('\.\/commands\//);
  });

  it('each summary is the description its command gives itself, in the same order', async () => {
    const full = await createProgram(quiet);
    expect(full.commands.map((c) => [c.name(), c.description()])).toEqual(
      COMMANDS.map((c) => [c.name, c.summary]),
    );
    expect(new Set(COMMANDS.map((c) => c.name)).size).toBe(COMMANDS.length);
  });

  it('a run registers the command it runs whole and the others by name only', async () => {
    const p = await createProgram(quiet, ['node', 'cohort', 'keys', 'signing', '--help']);
    const keys = p.commands.find((c) => c.name() === 'keys')!;
    const nats = p.commands.find((c) => c.name() === 'nats')!;
    expect(keys.commands.map((c) => c.name())).toContain('signing');
    expect(nats.commands).toEqual([]);
    const none = await createProgram(quiet, ['node', 'cohort', '--version']);
    expect(none.commands.every((c) => c.commands.length === 0 && c.options.length === 0)).toBe(true);
  });

  it('finds the command: the first word, or the one after help', () => {
    expect(commandOf(['node', 'cohort', '--version'])).toBeUndefined();
    expect(commandOf(['node', 'cohort', 'agent', '--config', 'x.yaml'])).toBe('agent');
    expect(commandOf(['node', 'cohort', 'help', 'keys'])).toBe('keys');
    expect(commandOf(['node', 'cohort', '-h'])).toBeUndefined();
  });

  it('--version, --help, help <command> and an unknown command behave as before', async () => {
    const version = await run('--version');
    expect(version.status).toBe(0);
    expect(version.out).toMatch(/^\d+\.\d+\.\d+/);
    const help = await run('--help');
    expect(help.out).toMatch(/^ {2}coordinator +run the round coordinator/m);
    const keys = await run('help', 'keys');
    expect(keys.out).toMatch(/^ {2}signing +lattice signing keys/m);
    const unknown = await run('nonsense');
    expect(unknown.status).not.toBe(0);
    expect(unknown.err).toMatch(/unknown command 'nonsense'/);
  });
});
