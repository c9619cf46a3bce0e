import fc from 'fast-check';
import { describe, expect, it, vi } from 'vitest';
import { InvalidArgumentError } from '../../../src/errors/index.ts';
import {
  AGENT_STATES,
  AGENT_TRANSITIONS,
  type AgentState,
  AgentStateError,
  AgentStateMachine,
  isLegalTransition,
} from '../../../src/services/agent/index.ts';

/**
 * The full 8×8 matrix, written out independently of the table it checks: row = from, column = to
 * in the order of the header; `x` = legal, `.` = refused.
 */
const MATRIX = `
             IDLE LOADING READY TRAINING UPLOADING PREPARED ERROR RECOVERING
IDLE          .    x       .     .        .         .        x     .
LOADING       .    .       x     .        .         .        x     x
READY         .    x       .     x        .         x        x     .
TRAINING      .    .       x     .        x         .        x     .
UPLOADING     .    .       x     .        .         .        x     .
PREPARED      .    .       x     .        .         .        x     x
ERROR         .    .       .     .        .         .        .     x
RECOVERING    .    x       x     .        .         x        x     .
`;

const matrix = (() => {
  const [header, ...rows] = MATRIX.trim().split('\n');
  const columns = header!.trim().split(/\s+/) as AgentState[];
  const legal = new Map<string, boolean>();
  for (const row of rows) {
    const [from, ...cells] = row.trim().split(/\s+/);
    cells.forEach((cell, j) => {
      legal.set(`${from}>${columns[j]}`, cell === 'x');
    });
  }
  return { columns, legal };
})();

const allPairs = AGENT_STATES.flatMap((from) => AGENT_STATES.map((to) => [from, to] as const));
const legalPairs = allPairs.filter(([f, t]) => matrix.legal.get(`${f}>${t}`));
const illegalPairs = allPairs.filter(([f, t]) => !matrix.legal.get(`${f}>${t}`));

describe('transition table', () => {
  it('covers the eight lifecycle states and matches the written matrix exactly', () => {
    expect([...AGENT_STATES].sort()).toEqual([...matrix.columns].sort());
    expect(matrix.legal.size).toBe(64);
    expect(legalPairs).toHaveLength(22);
    for (const [from, to] of allPairs) {
      expect(isLegalTransition(from, to), `${from} → ${to}`).toBe(matrix.legal.get(`${from}>${to}`));
    }
  });

  it('has no self-loops, ERROR reachable from every other state, and only RECOVERING out of ERROR', () => {
    for (const s of AGENT_STATES) {
      expect(AGENT_TRANSITIONS[s]).not.toContain(s);
      if (s !== 'ERROR') expect(AGENT_TRANSITIONS[s]).toContain('ERROR');
    }
    expect(AGENT_TRANSITIONS.ERROR).toEqual(['RECOVERING']);
  });

  it('is frozen', () => {
    expect(Object.isFrozen(AGENT_TRANSITIONS)).toBe(true);
    expect(Object.isFrozen(AGENT_TRANSITIONS.READY)).toBe(true);
  });
});

describe('AgentStateMachine', () => {
  it('starts in IDLE', () => {
    expect(new AgentStateMachine().state).toBe('IDLE');
  });

  it.each(legalPairs)('accepts %s → %s', (from, to) => {
    const sm = new AgentStateMachine({ initial: from });
    expect(sm.can(to)).toBe(true);
    sm.transition(to, 'test');
    expect(sm.state).toBe(to);
    expect(sm.history).toEqual([{ from, to, reason: 'test', at: expect.any(Number) }]);
  });

  it.each(illegalPairs)(
    'refuses %s → %s with ILLEGAL_TRANSITION naming both, changing nothing',
    (from, to) => {
      const sm = new AgentStateMachine({ initial: from });
      const listener = vi.fn();
      sm.onChange(listener);
      expect(sm.can(to)).toBe(false);
      let error: unknown;
      try {
        sm.transition(to, 'test');
      } catch (e) {
        error = e;
      }
      expect(error).toBeInstanceOf(AgentStateError);
      expect(error).toMatchObject({ code: 'ILLEGAL_TRANSITION', details: { from, to, reason: 'test' } });
      expect((error as Error).message).toContain(`${from} → ${to}`);
      expect(sm.state).toBe(from);
      expect(sm.history).toEqual([]);
      expect(listener).not.toHaveBeenCalled();
    },
  );

  it('walks a whole round: load, train, upload, prepare, commit', () => {
    let t = 1000;
    const sm = new AgentStateMachine({ now: () => t++ });
    const path: [AgentState, string][] = [
      ['LOADING', 'start'],
      ['READY', 'at head c0'],
      ['TRAINING', 'RoundOpen r1'],
      ['UPLOADING', 'update packed'],
      ['READY', 'manifest acked'],
      ['PREPARED', 'PREPARE r1, voted YES'],
      ['READY', 'COMMIT c1'],
    ];
    for (const [to, reason] of path) sm.transition(to, reason);
    expect(sm.history.map((h) => h.to)).toEqual(path.map(([to]) => to));
    expect(sm.history.map((h) => h.at)).toEqual([1000, 1001, 1002, 1003, 1004, 1005, 1006]);
    expect(sm.history[5]).toEqual({
      from: 'READY',
      to: 'PREPARED',
      reason: 'PREPARE r1, voted YES',
      at: 1005,
    });
  });

  it('calls listeners once per accepted transition, in order, after the state changed; unsubscribe works', () => {
    const sm = new AgentStateMachine();
    const seen: string[] = [];
    const first = vi.fn((c) => seen.push(`1:${c.from}>${c.to}:${sm.state}`));
    const off = sm.onChange(first);
    sm.onChange((c) => seen.push(`2:${c.from}>${c.to}`));
    sm.transition('LOADING', 'start');
    off();
    sm.transition('READY', 'loaded');
    expect(() => sm.transition('UPLOADING', 'nope')).toThrow(AgentStateError);
    expect(seen).toEqual(['1:IDLE>LOADING:LOADING', '2:IDLE>LOADING', '2:LOADING>READY']);
    expect(first).toHaveBeenCalledTimes(1);
  });

  it('reports a failing listener after all listeners ran; the transition stands', () => {
    const sm = new AgentStateMachine();
    const boom = new Error('boom');
    const after = vi.fn();
    sm.onChange(() => {
      throw boom;
    });
    sm.onChange(after);
    expect(() => sm.transition('LOADING', 'start')).toThrow(
      expect.objectContaining({ code: 'LISTENER_FAILED', cause: boom }),
    );
    expect(sm.state).toBe('LOADING');
    expect(after).toHaveBeenCalledTimes(1);
  });

  it('refuses a transition requested from inside a listener', () => {
    const sm = new AgentStateMachine({ initial: 'LOADING' });
    let inner: unknown;
    sm.onChange(() => {
      try {
        sm.transition('RECOVERING', 'nested');
      } catch (e) {
        inner = e;
      }
    });
    sm.transition('ERROR', 'disk full');
    expect(inner).toMatchObject({ code: 'REENTRANT_TRANSITION' });
    expect(sm.state).toBe('ERROR');
    sm.transition('RECOVERING', 'after the listener returned');
    expect(sm.state).toBe('RECOVERING');
  });

  it('keeps a bounded history, oldest dropped first', () => {
    const sm = new AgentStateMachine({ initial: 'READY', historyLimit: 3 });
    for (let i = 0; i < 5; i++) {
      sm.transition('TRAINING', `r${i}`);
      sm.transition('READY', `cancel r${i}`);
    }
    const h = sm.history;
    expect(h.map((x) => x.reason)).toEqual(['cancel r3', 'r4', 'cancel r4']);
    // history is a copy
    (h as unknown as unknown[]).length = 0;
    expect(sm.history).toHaveLength(3);
  });

  it('validates its arguments, naming them', () => {
    expect(() => new AgentStateMachine({ historyLimit: 0 })).toThrow(/options\.historyLimit/);
    expect(() => new AgentStateMachine({ initial: 'SLEEPING' as AgentState })).toThrow(/options\.initial/);
    const sm = new AgentStateMachine();
    expect(() => sm.transition('SLEEPING' as AgentState, 'x')).toThrow(InvalidArgumentError);
    expect(() => sm.transition('SLEEPING' as AgentState, 'x')).toThrow(/^to must be/);
    expect(() => sm.transition('LOADING', '')).toThrow(/reason/);
    expect(sm.can('SLEEPING' as AgentState)).toBe(false);
    expect(() => sm.onChange(42 as unknown as () => void)).toThrow(/listener/);
    expect(sm.state).toBe('IDLE');
  });

  it('random walks only ever follow table edges, and history is a connected path', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...AGENT_STATES),
        fc.array(fc.constantFrom(...AGENT_STATES), { maxLength: 200 }),
        fc.integer({ min: 1, max: 50 }),
        (initial, attempts, historyLimit) => {
          const sm = new AgentStateMachine({ initial, historyLimit });
          const observed: [AgentState, AgentState][] = [];
          sm.onChange((c) => observed.push([c.from, c.to]));
          let accepted = 0;
          for (const to of attempts) {
            const from = sm.state;
            const legal = sm.can(to);
            if (legal) {
              sm.transition(to, 'walk');
              accepted++;
              expect(sm.state).toBe(to);
            } else {
              expect(() => sm.transition(to, 'walk')).toThrow(AgentStateError);
              expect(sm.state).toBe(from);
            }
            expect(legal).toBe(matrix.legal.get(`${from}>${to}`));
          }
          expect(observed).toHaveLength(accepted);
          let at = initial;
          for (const [from, to] of observed) {
            expect(from).toBe(at);
            expect(matrix.legal.get(`${from}>${to}`)).toBe(true);
            at = to;
          }
          expect(at).toBe(sm.state);
          const h = sm.history;
          expect(h).toHaveLength(Math.min(accepted, historyLimit));
          for (let i = 1; i < h.length; i++) expect(h[i]!.from).toBe(h[i - 1]!.to);
        },
      ),
      { numRuns: 300 },
    );
  });
});
