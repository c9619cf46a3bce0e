import { writeSync } from 'node:fs';

/** What a failpoint does when it fires. */
export type FailpointAction = 'kill' | 'skip' | 'stop';

interface Armed {
  readonly name: string;
  readonly round: number | undefined;
  readonly action: FailpointAction;
}

let armed: readonly Armed[] | undefined;

function parse(spec: string): Armed[] {
  return spec
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s.length > 0)
    .map((s) => {
      const m = /^([a-z0-9.-]+)(?:@(\d+))?(?::(kill|skip|stop))?$/.exec(s);
      if (m === null)
        throw new Error(
          `COHORT_FAILPOINT: cannot parse ${JSON.stringify(s)} (name[@round][:kill|skip|stop])`,
        );
      return {
        name: m[1]!,
        round: m[2] === undefined ? undefined : Number(m[2]),
        action: (m[3] ?? 'kill') as FailpointAction,
      };
    });
}

/**
 * Fault injection for the crash tests (in the spirit of etcd's gofail and TiKV's fail-rs): the
 * environment variable `COHORT_FAILPOINT` lists `name[@round][:action]` entries, comma-separated.
 * When the process reaches failpoint `name` (in `round`, when one is given):
 *
 * - `kill` (default): writes `{"failpoint":name,"round":r}` to stderr and SIGKILLs this very
 *   process — a real crash at an exact protocol step, nothing flushed or cleaned up;
 * - `skip`: returns `'skip'`, and the caller leaves the step out (a member that misbehaves, e.g. a
 *   site that never votes);
 * - `stop`: writes the same line and SIGSTOPs this process (a pause at an exact step: a long GC,
 *   a VM frozen, an operator's Ctrl-Z); whoever sends SIGCONT resumes it right there.
 *
 * Unset (always, outside tests), it returns undefined and costs one comparison. The points are
 * listed in docs/round-protocol.md ("Crash points").
 */
export function failpoint(name: string, round?: number): FailpointAction | undefined {
  armed ??= parse(process.env['COHORT_FAILPOINT'] ?? '');
  if (armed.length === 0) return undefined;
  const hit = armed.find((a) => a.name === name && (a.round === undefined || a.round === round));
  if (hit === undefined) return undefined;
  if (hit.action === 'skip') return 'skip';
  writeSync(2, `${JSON.stringify({ failpoint: name, round: round ?? null })}\n`);
  if (hit.action === 'stop') {
    // Once: a resumed process goes on as if nothing happened.
    armed = armed.filter((a) => a !== hit);
    process.kill(process.pid, 'SIGSTOP');
    return 'stop';
  }
  process.kill(process.pid, 'SIGKILL');
  return undefined;
}
