// Child processes of the round bench: `cohort` members and bench workers, their output kept
// line by line, stopped with SIGTERM (SIGKILL after a grace period).
import { type ChildProcess, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

const BIN = fileURLToPath(new URL('../bin/cohort.js', import.meta.url));

/** Children still running, killed should the bench exit without stopping them. */
const running = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});

/** A child process with its stdout lines kept (and stderr's last 16 KiB, for error messages). */
export class BenchChild {
  readonly name: string;
  readonly child: ChildProcess;
  readonly lines: string[] = [];
  stderr = '';
  readonly exited: Promise<number | null>;

  constructor(name: string, child: ChildProcess) {
    this.name = name;
    this.child = child;
    this.exited = new Promise((resolve) => child.once('exit', (code) => resolve(code)));
    createInterface({ input: child.stdout! }).on('line', (line) => {
      this.lines.push(line);
    });
    child.stderr!.on('data', (d: Buffer) => {
      this.stderr = `${this.stderr}${d.toString()}`.slice(-16_384);
    });
    running.add(child);
    void this.exited.then(() => running.delete(child));
  }

  get running(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  /** The first stdout line that is JSON with `event === name`, waiting up to `ms`. */
  async waitEvent(event: string, ms: number): Promise<Record<string, unknown>> {
    const end = Date.now() + ms;
    for (;;) {
      for (const line of this.lines) {
        if (!line.startsWith('{')) continue;
        try {
          const o = JSON.parse(line) as Record<string, unknown>;
          if (o.event === event) return o;
        } catch {
          // not JSON
        }
      }
      if (!this.running) throw new Error(`${this.name} exited before "${event}":\n${this.stderr}`);
      if (Date.now() > end) throw new Error(`${this.name}: no "${event}" in ${ms} ms:\n${this.stderr}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  /** SIGTERM, SIGKILL after `graceMs`; resolves with the exit code once it exited. */
  async stop(graceMs = 10_000): Promise<number | null> {
    if (this.running) {
      this.child.kill('SIGTERM');
      const t = setTimeout(() => this.child.kill('SIGKILL'), graceMs);
      await this.exited;
      clearTimeout(t);
    }
    return this.exited;
  }
}

/** `cohort <args>` as a child process. */
export function spawnCohort(name: string, args: string[]): BenchChild {
  return new BenchChild(name, spawn(process.execPath, [BIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'] }));
}

/** `node <script> <args>` (a bench worker) as a child process. */
export function spawnScript(name: string, script: string, args: string[]): BenchChild {
  return new BenchChild(
    name,
    spawn(process.execPath, [script, ...args], { stdio: ['ignore', 'pipe', 'pipe'] }),
  );
}

/** Stops every child, in parallel. */
export async function stopAll(children: readonly BenchChild[]): Promise<void> {
  await Promise.allSettled(children.map((c) => c.stop()));
}
