import { describe, expect, it } from 'vitest';
import { BLOCK_REJECT_REASONS } from '../../src/errors/index.ts';
import { REJECT_REASON_LABELS, rejectReasonLabel } from '../../src/metrics/index.ts';
import { TRANSPORT_DROP_REASONS } from '../../src/transport/index.ts';

describe('reject reason labels', () => {
  it('maps codes to labels from fixed sets only', () => {
    expect(rejectReasonLabel('BLOCK_BAD_SIGNATURE')).toBe('BAD_SIGNATURE');
    expect(rejectReasonLabel('BAD_SIGNATURE')).toBe('BAD_SIGNATURE');
    expect(rejectReasonLabel('VOTE_REFUSED')).toBe('VOTE_REFUSED');
    expect(rejectReasonLabel('TRANSPORT_RATE_LIMITED')).toBe('TRANSPORT_RATE_LIMITED');
    expect(rejectReasonLabel('RATE_LIMITED', true)).toBe('TRANSPORT_RATE_LIMITED');
    expect(rejectReasonLabel('CRC_MISMATCH', true)).toBe('TRANSPORT_CRC_MISMATCH');
    expect(rejectReasonLabel('CRC_MISMATCH')).toBe('CRC_MISMATCH');
    expect(rejectReasonLabel('site-3 sent junk')).toBe('OTHER');
    expect(rejectReasonLabel('BLOCK_NOT_A_REASON')).toBe('OTHER');
    expect(rejectReasonLabel('TRANSPORT_NOPE')).toBe('OTHER');
    expect(rejectReasonLabel('VOTE_REFUSED', true)).toBe('OTHER');
  });

  it('lists every block and transport reason once', () => {
    for (const r of BLOCK_REJECT_REASONS) expect(REJECT_REASON_LABELS).toContain(r);
    for (const r of TRANSPORT_DROP_REASONS) expect(REJECT_REASON_LABELS).toContain(`TRANSPORT_${r}`);
    expect(new Set(REJECT_REASON_LABELS).size).toBe(REJECT_REASON_LABELS.length);
    for (const l of REJECT_REASON_LABELS) expect(l).toMatch(/^[A-Z][A-Z0-9_]*$/);
  });
});
