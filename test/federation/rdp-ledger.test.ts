import { describe, expect, it } from 'vitest';
import { RdpLedger, rdpToEpsilon, sampledGaussianRdp } from '../../federation/privacy/index.ts';

describe('RdpLedger', () => {
  it('adds RDP run by run: T charges of one run spend what one charge of T runs spends', () => {
    const a = new RdpLedger({ delta: 1e-5 });
    for (let i = 0; i < 100; i++) a.charge(0.01, 1.1);
    const b = new RdpLedger({ delta: 1e-5 });
    b.charge(0.01, 1.1, 100);
    expect(a.spent().epsilon).toBeCloseTo(b.spent().epsilon, 10);
    expect(a.spent().runs).toBe(100);
    const direct = rdpToEpsilon(a.orders, sampledGaussianRdp(0.01, 1.1, 100, a.orders), 1e-5);
    expect(a.spent().epsilon).toBeCloseTo(direct.epsilon, 10);
  });

  it('stops training at the budget: the last round it allows stays within ε, the next would not', () => {
    const ledger = new RdpLedger({ delta: 1e-5, budget: 1 });
    let rounds = 0;
    while (ledger.allows(0.05, 2.0)) {
      ledger.charge(0.05, 2.0);
      rounds++;
    }
    expect(rounds).toBeGreaterThan(10);
    expect(ledger.spent().epsilon).toBeLessThanOrEqual(1);
    expect(ledger.preview(0.05, 2.0).epsilon).toBeGreaterThan(1);
    expect(ledger.spent().runs).toBe(rounds);
  });

  it('spends nothing before its first charge, and refuses a budget that is not positive', () => {
    expect(new RdpLedger({ delta: 1e-5 }).spent()).toMatchObject({ epsilon: 0, runs: 0 });
    expect(() => new RdpLedger({ delta: 1e-5, budget: 0 })).toThrow(/budget is 0/);
    expect(() => new RdpLedger({ delta: 2 })).toThrow(/delta is 2/);
  });
});
