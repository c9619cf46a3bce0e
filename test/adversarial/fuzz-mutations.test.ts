// The fuzzer's mutations are a function of the seeded plan, not of the live bytes they mutate: the
// docs/security.md fuzz summary is compared with each run's, so a mutant whose class of outcome
// depended on the bytes made that table flaky. Found when `Cohort-Crc` upper-cased an honest CRC
// that had no hex letters (about one run in 40): it stayed the honest value and became a CRC
// mismatch instead of a malformed header.
import { describe, expect, it } from 'vitest';
import { type FuzzPlan, type MutationContext, mutate, type Template } from './fuzz-mutations.ts';

const template: Template = {
  kind: 'snapshot',
  sender: 'site-5',
  subject: 'cohort.fuzz.snapshot.site-5',
  data: new Uint8Array([1, 2, 3]),
  at: 0,
};
const crcPlan = (variant: number) =>
  ({ layer: 'transport', header: { which: 'crc', variant } }) as unknown as FuzzPlan;

describe('fuzz mutations', () => {
  it('the upper-cased Cohort-Crc is never a well-formed lowercase CRC, whatever the honest CRC', () => {
    for (const honest of ['94c8adfa', '12345678', '00000000', 'abcdef01']) {
      const m = mutate(template, crcPlan(1), {} as MutationContext, honest);
      const crc = m.headers!.set['Cohort-Crc']!;
      expect(crc, honest).not.toMatch(/^[0-9a-f]{8}$/);
    }
  });
});
