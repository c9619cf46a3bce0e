import { describe, expect, it } from 'vitest';
import { RdpLedger, rdpToEpsilon, sampledGaussianRdp } from '../../federation/privacy/index.ts';

describe('RdpLedger', () => {
  it('adds RDP run by run: T charges of one run spend what one charge of T runs spends', () => {
    const a = new RdpLedger({ delta: 1e-5 });
    for (let i = 0; i < 100; i++) a.charge(a.gaussian(0.01, 1.1));
    const b = new RdpLedger({ delta: 1e-5 });
    b.charge(b.gaussian(0.01, 1.1, 100), 100);
    expect(a.spent().epsilon).toBeCloseTo(b.spent().epsilon, 10);
    expect(a.spent().runs).toBe(100);
    const direct = rdpToEpsilon(a.orders, sampledGaussianRdp(0.01, 1.1, 100, a.orders), 1e-5);
    expect(a.spent().epsilon).toBeCloseTo(direct.epsilon, 10);
  });

  it('stops training at the budget: the last round it allows stays within ε, the next would not', () => {
    const ledger = new RdpLedger({ delta: 1e-5, budget: 1 });
    let rounds = 0;
    const round = ledger.gaussian(0.05, 2.0);
    while (ledger.allows(round)) {
      ledger.charge(round);
      rounds++;
    }
    expect(rounds).toBeGreaterThan(10);
    expect(ledger.spent().epsilon).toBeLessThanOrEqual(1);
    expect(ledger.preview(round).epsilon).toBeGreaterThan(1);
    expect(ledger.spent().runs).toBe(rounds);
  });

  it('reads ε at δ less the δ charged outside RDP, and refuses a charge at other orders', () => {
    const ledger = new RdpLedger({ delta: 1e-5 });
    const round = ledger.gaussian(0.05, 2.0);
    const spent = ledger.charge({ rdp: round.rdp, deltaCost: 4e-6 });
    expect(spent.deltaCost).toBe(4e-6);
    expect(spent.epsilon).toBeCloseTo(rdpToEpsilon(ledger.orders, round.rdp, 6e-6).epsilon, 12);
    expect(spent.epsilon).toBeGreaterThan(rdpToEpsilon(ledger.orders, round.rdp, 1e-5).epsilon);
    expect(ledger.preview({ rdp: round.rdp, deltaCost: 7e-6 }).epsilon).toBe(Number.POSITIVE_INFINITY);
    expect(() => ledger.charge({ rdp: [1, 2] })).toThrow(/RDP at 2 orders, the ledger accounts at/);
    expect(() => ledger.charge({ rdp: round.rdp, deltaCost: -1 })).toThrow(/deltaCost is -1/);
  });

  it('spends nothing before its first charge, and refuses a budget that is not positive', () => {
    expect(new RdpLedger({ delta: 1e-5 }).spent()).toMatchObject({ epsilon: 0, runs: 0 });
    expect(() => new RdpLedger({ delta: 1e-5, budget: 0 })).toThrow(/budget is 0/);
    expect(() => new RdpLedger({ delta: 2 })).toThrow(/delta is 2/);
  });
});
