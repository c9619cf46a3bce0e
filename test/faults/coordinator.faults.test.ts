// The coordinator SIGKILLed at each step of the two-phase commit (its failpoints, in protocol
// order), then restarted with the same command: every round ends decided exactly once, the next
// round commits, and every site follows. One federation lives through all cases, so each also
// checks that nothing logged before it was lost. (test/recovery/coordinator-crash.test.ts looks
// closer at some of these steps: residuals, the lease, the agents' own recovery.)
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Federation, type MemberProcess, waitExit, waitLine } from '../recovery/recovery-helpers.ts';
import { decisionOf, finishCase, lastRound } from './fault-checks.ts';
import { faultOverrides, startMembers } from './fault-federation.ts';

const SITES = ['site-1', 'site-2', 'site-3'];
const MS = 150_000;

const STEPS = [
  ['round-open-logged', 'RoundOpen appended, before it is announced'],
  ['partials-logged', 'partial records appended, before PREPARE'],
  ['prepare-sent', 'PREPARE sent, before the vote records'],
  ['votes-logged', 'vote records appended, before the decision'],
  ['decision-logged', 'decision appended, before it is announced'],
] as const;

describe('fault suite: the coordinator killed at each 2PC step', () => {
  let f: Federation;

  beforeAll(async () => {
    f = await Federation.create('fcoord', { aggregators: 1, sites: 3, overrides: faultOverrides(3) });
    await startMembers(f, ['agg-1'], SITES);
  });
  afterAll(async () => {
    await f?.stop();
  });

  for (const [step, where] of STEPS) {
    const point = `coordinator.${step}`;
    it(
      `${point}: SIGKILL, restart; the round is decided once, the next commits, no drift`,
      async () => {
        const before = await f.logEntries();
        const r = lastRound(before) + 1;
        const killed: MemberProcess = f.spawn('coordinator', 'coordinator', ['--rounds', String(r + 1)], {
          COHORT_FAILPOINT: `${point}@${r}`,
        });
        const exit = await waitExit(killed, MS);
        expect(exit.signal, killed.output).toBe('SIGKILL');
        expect(killed.output).toContain(`"failpoint":"${point}","round":${r}`);

        const restarted = f.spawn('coordinator', 'coordinator', ['--rounds', String(r + 1)]);
        await waitLine(f, restarted, new RegExp(`^round ${r + 1}: .*COMMIT`), MS);
        expect((await waitExit(restarted, MS)).code, restarted.output).toBe(0);

        const { entries } = await finishCase(f, {
          id: point as `coordinator.${typeof step}`,
          fault: 'coordinator SIGKILLed (failpoint), restarted',
          injectedAt: `r${r}: ${where}`,
          before,
          sites: SITES,
        });
        const faulted = decisionOf(entries, r);
        if (step === 'decision-logged') {
          // The decision was durable before the crash: the restart re-announces it, never re-decides.
          expect(faulted.commit).toBe(true);
          expect(
            restarted.lines.some((l) => l.startsWith(`recovered: re-announced the decision of round ${r}`)),
          ).toBe(true);
        } else {
          expect(faulted.commit).toBe(false);
          expect(faulted.reason).toBe(`the coordinator restarted before deciding round ${r}`);
        }
        expect(decisionOf(entries, r + 1).commit).toBe(true);
      },
      2 * MS,
    );
  }
});
