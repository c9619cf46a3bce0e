import { createHash } from 'node:crypto';
import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  bytesToHex,
  type Commit,
  genesisCommit,
  type ModelStore,
  openModelStore,
  type PreparedCandidate,
  VersionError,
} from '../../src/versions/index.ts';
import { errorCode } from '../helpers/error-code.ts';
import { candidate, PARAMS, state, W0 } from '../helpers/store-fixture.ts';

/** Candidates for rounds 1..n after genesis; round r adds r to every weight (W_r = W0 + r(r+1)/2). */
function chain(genesis: Commit, n: number): PreparedCandidate[] {
  const out: PreparedCandidate[] = [];
  let parent = genesis;
  let model: Float32Array = W0;
  for (let round = 1; round <= n; round++) {
    const c = candidate(parent, model, round, round);
    out.push(c);
    parent = c.commit;
    model = c.parameters;
  }
  return out;
}

function flipByte(path: string, offset: number): void {
  const bytes = readFileSync(path);
  const at = offset < 0 ? bytes.length + offset : offset;
  bytes[at] = bytes[at]! ^ 0x01;
  writeFileSync(path, bytes);
}

/** An enveloped file built by hand from the documented layout (magic, version, length, SHA-256). */
function envelope(magic: string, units: number, payload: Buffer): Buffer {
  const header = Buffer.alloc(48);
  header.write(magic, 0, 'ascii');
  header.writeUInt8(1, 4);
  header.writeBigUInt64LE(BigInt(units), 8);
  createHash('sha256').update(payload).digest().copy(header, 16);
  return Buffer.concat([header, payload]);
}

describe('model store: catch-up and shallow history', () => {
  let dir: string;
  let store: ModelStore;
  let genesis: Commit;
  let c: PreparedCandidate[];

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'cohort-versions-history-'));
    store = openModelStore(dir);
    genesis = genesisCommit(W0, PARAMS);
    c = chain(genesis, 6);
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  describe('advance', () => {
    it('replays a chain of commits without prepared files', () => {
      store.init(genesis, W0);
      for (const step of c.slice(0, 3)) expect(store.advance(step)).toEqual(step.commit);
      expect(store.head()).toEqual(c[2]!.commit);
      expect(store.preparedRounds()).toEqual([]);
      // W3 = W0 + 1 + 2 + 3
      expect(store.readModel(c[2]!.commit)).toEqual(new Float32Array([7, 5.5, 6.25, 9]));
      expect(store.loadStrategyState()).toEqual(state(3));

      const reopened = openModelStore(dir);
      expect(reopened.head()).toEqual(c[2]!.commit);
      expect(reopened.loadStrategyState()).toEqual(state(3));
      expect(reopened.history(10).map((x) => x.height)).toEqual([3, 2, 1, 0]);
      expect(reopened.shallowCommits()).toEqual([]);
      // A prepared round on top of replayed commits still works.
      reopened.prepare(c[3]!);
      expect(reopened.commitPrepared(4, c[3]!.commit.hash)).toEqual(c[3]!.commit);
    });

    it('is idempotent: advancing to HEAD rewrites only the strategy state', () => {
      store.init(genesis, W0);
      store.advance(c[0]!);
      store.saveStrategyState(state(99));
      expect(store.advance(c[0]!)).toEqual(c[0]!.commit);
      expect(store.head()).toEqual(c[0]!.commit);
      expect(store.loadStrategyState()).toEqual(state(1));
      expect(store.history(10)).toHaveLength(2);
    });

    it('refuses a commit that is not a child of HEAD, a wrong model, and a bad argument, writing nothing', () => {
      expect(errorCode(() => store.advance(c[0]!))).toBe('NOT_INITIALIZED');
      store.init(genesis, W0);
      expect(errorCode(() => store.advance(c[1]!))).toBe('PARENT_MISMATCH'); // skips round 1
      store.advance(c[0]!);
      const sibling = candidate(genesis, W0, 2, 0.5); // parent genesis, HEAD is c1
      expect(errorCode(() => store.advance(sibling))).toBe('PARENT_MISMATCH');
      expect(store.hasCommit(sibling.commit.hash)).toBe(false);
      expect(store.hasModel(sibling.commit)).toBe(false);
      expect(errorCode(() => store.advance({ ...c[1]!, parameters: W0 }))).toBe('MODEL_MISMATCH');
      expect(store.hasCommit(c[1]!.commit.hash)).toBe(false);
      expect(() => store.advance({ ...c[1]!, commit: { ...c[1]!.commit, round: 9 } })).toThrow(
        /candidate\.commit/,
      );
      expect(() => store.advance(null as unknown as PreparedCandidate)).toThrow(
        /candidate must be an object/,
      );
      expect(() => store.advance({ ...c[1]!, strategyState: { ...state(2), step: -1 } })).toThrow(
        /candidate\.strategyState/,
      );
      expect(openModelStore(dir).head()).toEqual(c[0]!.commit);
    });

    it('a crash between the HEAD swap and the state write reads as STATE_STALE; advancing again repairs it', () => {
      store.init(genesis, W0);
      store.saveStrategyState(state(0));
      const savedState = join(dir, 'saved-state.bin');
      copyFileSync(join(dir, 'strategy-state.bin'), savedState);
      store.advance(c[0]!);
      // Rewind to "HEAD swapped, state not yet written".
      copyFileSync(savedState, join(dir, 'strategy-state.bin'));

      const afterCrash = openModelStore(dir);
      expect(afterCrash.head()).toEqual(c[0]!.commit);
      expect(errorCode(() => afterCrash.loadStrategyState())).toBe('STATE_STALE');
      expect(afterCrash.advance(c[0]!)).toEqual(c[0]!.commit);
      expect(afterCrash.loadStrategyState()).toEqual(state(1));
      expect(openModelStore(dir).loadStrategyState()).toEqual(state(1));
    });

    it('a crash before the HEAD swap leaves the old HEAD; the replay then completes', () => {
      store.init(genesis, W0);
      const savedHead = readFileSync(join(dir, 'HEAD'));
      store.advance(c[0]!);
      writeFileSync(join(dir, 'HEAD'), savedHead); // model and commit durable, HEAD not swapped
      const afterCrash = openModelStore(dir);
      expect(afterCrash.head()).toEqual(genesis);
      expect(afterCrash.hasCommit(c[0]!.commit.hash)).toBe(true);
      expect(afterCrash.advance(c[0]!)).toEqual(c[0]!.commit);
      expect(openModelStore(dir).head()).toEqual(c[0]!.commit);
    });

    it('discards a prepared file of the same commit, keeps one of another commit', () => {
      store.init(genesis, W0);
      store.prepare(c[0]!);
      store.advance(c[0]!); // the decision arrived through the log instead
      expect(store.preparedRounds()).toEqual([]);
      const other = candidate(c[0]!.commit, c[0]!.parameters, 2, 0.5);
      store.prepare(other);
      store.advance(c[1]!);
      expect(store.preparedRounds()).toEqual([2]);
      expect(errorCode(() => store.commitPrepared(2, other.commit.hash))).toBe('PARENT_MISMATCH');
      expect(store.abortPrepared(2)).toBe(true);
    });
  });

  describe('hasCommit', () => {
    it('tells stored commits from unknown ones and checks its argument', () => {
      expect(store.hasCommit(genesis.hash)).toBe(false);
      store.init(genesis, W0);
      expect(store.hasCommit(genesis.hash)).toBe(true);
      expect(store.hasCommit(c[0]!.commit.hash)).toBe(false);
      expect(() => store.hasCommit(new Uint8Array(31))).toThrow(/hash must be a 32-byte/);
    });
  });

  describe('jumpTo (shallow bases)', () => {
    it('starts an empty store from a later commit; history stops at the boundary', () => {
      const c3 = c[2]!;
      expect(store.jumpTo(c3)).toEqual(c3.commit);
      expect(store.head()).toEqual(c3.commit);
      expect(store.isShallow(c3.commit.hash)).toBe(true);
      expect(store.isShallow(genesis.hash)).toBe(false);
      expect(store.shallowCommits()).toEqual([c3.commit.hash]);
      expect(store.history(10)).toEqual([c3.commit]);
      expect(store.hasCommit(c[1]!.commit.hash)).toBe(false);
      expect(store.hasCommit(genesis.hash)).toBe(false);
      expect(store.loadStrategyState()).toEqual(state(3));
      expect(store.pruneModels(5)).toEqual([]);

      const reopened = openModelStore(dir);
      expect(reopened.head()).toEqual(c3.commit);
      expect(reopened.readModel(c3.commit)).toEqual(new Float32Array([7, 5.5, 6.25, 9]));
      expect(reopened.history(10)).toEqual([c3.commit]);
      expect(reopened.loadStrategyState()).toEqual(state(3));
      // A shallow store is not initialised from genesis: init with another genesis is refused.
      expect(errorCode(() => reopened.init(genesis, W0))).toBe('ALREADY_INITIALIZED');
    });

    it('jumps over an older HEAD; replay continues after the boundary', () => {
      store.init(genesis, W0);
      store.advance(c[0]!);
      expect(store.jumpTo(c[3]!)).toEqual(c[3]!.commit);
      expect(store.history(10).map((x) => x.height)).toEqual([4]);
      store.advance(c[4]!);
      const reopened = openModelStore(dir);
      expect(reopened.history(10).map((x) => x.height)).toEqual([5, 4]);
      expect(reopened.hasCommit(c[0]!.commit.hash)).toBe(true); // the old line is kept, not walked
      expect(reopened.pruneModels(1).sort()).toEqual(
        [genesis, c[0]!.commit, c[3]!.commit].map((x) => bytesToHex(x.modelHash)).sort(),
      );
      expect(reopened.readModel(c[4]!.commit)).toEqual(c[4]!.parameters);
    });

    it('a boundary whose parent is stored does not cut history', () => {
      store.init(genesis, W0);
      store.advance(c[0]!);
      store.jumpTo(c[1]!); // a child of HEAD taken from a snapshot
      expect(store.isShallow(c[1]!.commit.hash)).toBe(true);
      expect(store.history(10).map((x) => x.height)).toEqual([2, 1, 0]);
    });

    it('refuses a jump that is not above HEAD, and is idempotent for HEAD itself', () => {
      store.jumpTo(c[2]!);
      expect(errorCode(() => store.jumpTo(c[1]!))).toBe('JUMP_BACKWARDS');
      const fork = candidate(c[1]!.commit, c[1]!.parameters, 3, 0.5); // height 3, not HEAD
      expect(errorCode(() => store.jumpTo(fork))).toBe('JUMP_BACKWARDS');
      expect(store.hasCommit(fork.commit.hash)).toBe(false);
      expect(store.shallowCommits()).toEqual([c[2]!.commit.hash]);
      store.saveStrategyState(state(42));
      expect(store.jumpTo(c[2]!)).toEqual(c[2]!.commit);
      expect(store.loadStrategyState()).toEqual(state(3));
      expect(store.shallowCommits()).toEqual([c[2]!.commit.hash]);
      expect(errorCode(() => store.jumpTo({ ...c[3]!, parameters: W0 }))).toBe('MODEL_MISMATCH');
      expect(store.head()).toEqual(c[2]!.commit);
    });

    it('a genesis commit on an empty store is a plain start, not a boundary', () => {
      expect(store.jumpTo({ commit: genesis, parameters: W0, strategyState: state(0) })).toEqual(genesis);
      expect(store.shallowCommits()).toEqual([]);
      expect(store.history(3)).toEqual([genesis]);
      expect(store.init(genesis, W0)).toEqual(genesis);
    });

    it('prepare and commitPrepared work on a shallow HEAD; a candidate on the old HEAD is refused', () => {
      store.init(genesis, W0);
      store.prepare(c[0]!);
      store.jumpTo(c[2]!);
      expect(errorCode(() => store.commitPrepared(1, c[0]!.commit.hash))).toBe('PARENT_MISMATCH');
      expect(store.head()).toEqual(c[2]!.commit);
      store.abortPrepared(1);
      store.prepare(c[3]!);
      const reopened = openModelStore(dir);
      expect(reopened.commitPrepared(4, c[3]!.commit.hash)).toEqual(c[3]!.commit);
      expect(reopened.history(10).map((x) => x.round)).toEqual([4, 3]);
      expect(openModelStore(dir).loadStrategyState()).toEqual(state(4));
    });

    it('survives a crash on either side of the HEAD swap', () => {
      store.init(genesis, W0);
      store.saveStrategyState(state(0));
      const savedHead = readFileSync(join(dir, 'HEAD'));
      const savedState = readFileSync(join(dir, 'strategy-state.bin'));
      store.jumpTo(c[3]!);

      // Before the swap: the shallow entry is durable, HEAD is not moved.
      writeFileSync(join(dir, 'HEAD'), savedHead);
      writeFileSync(join(dir, 'strategy-state.bin'), savedState);
      const before = openModelStore(dir);
      expect(before.head()).toEqual(genesis);
      expect(before.loadStrategyState()).toEqual(state(0));
      expect(before.shallowCommits()).toEqual([c[3]!.commit.hash]); // unused, harmless
      expect(before.history(5)).toEqual([genesis]);

      // After the swap, before the state write.
      before.jumpTo(c[3]!);
      writeFileSync(join(dir, 'strategy-state.bin'), savedState);
      const after = openModelStore(dir);
      expect(after.head()).toEqual(c[3]!.commit);
      expect(errorCode(() => after.loadStrategyState())).toBe('STATE_STALE');
      expect(after.jumpTo(c[3]!)).toEqual(c[3]!.commit);
      expect(after.loadStrategyState()).toEqual(state(4));
    });

    it('a missing parent that is not a boundary is still STORE_CORRUPT', () => {
      store.jumpTo(c[2]!);
      rmSync(join(dir, 'shallow'));
      expect(openModelStore(dir).head()).toEqual(c[2]!.commit); // HEAD itself verifies
      expect(errorCode(() => openModelStore(dir).history(2))).toBe('STORE_CORRUPT');
    });

    it('writes the documented shallow file and detects its corruption', () => {
      store.jumpTo(c[1]!);
      store.jumpTo(c[4]!);
      const path = join(dir, 'shallow');
      const expected = envelope(
        'CSHL',
        2,
        Buffer.concat([c[1]!.commit.hash, c[4]!.commit.hash].map((h) => Buffer.from(h))),
      );
      expect(readFileSync(path).equals(expected)).toBe(true);
      flipByte(path, -1);
      expect(errorCode(() => store.isShallow(c[4]!.commit.hash))).toBe('STORE_CORRUPT');
      expect(errorCode(() => store.history(3))).toBe('STORE_CORRUPT');
      const twice = Buffer.from(c[1]!.commit.hash);
      writeFileSync(path, envelope('CSHL', 2, Buffer.concat([twice, twice])));
      expect(errorCode(() => store.shallowCommits())).toBe('STORE_CORRUPT');
    });
  });
});

describe('model store: residual staged per round', () => {
  let dir: string;
  let store: ModelStore;
  const R0 = new Float32Array([0.5, -0.25]);
  const R1 = new Float32Array([0.125, -0]);
  const R2 = new Float32Array([3, 4]);

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'cohort-versions-residual-'));
    store = openModelStore(dir);
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('applies a staged residual on commit, once', () => {
    store.saveResidual(R0);
    store.stageResidual(1, R1);
    expect(store.pendingResidualRounds()).toEqual([1]);
    expect(store.loadResidual()).toEqual(R0); // staging does not touch the residual
    expect(openModelStore(dir).pendingResidualRounds()).toEqual([1]);
    expect(store.resolveResidual(1, true)).toBe(true);
    const back = openModelStore(dir).loadResidual();
    expect(back).toEqual(R1);
    expect(Object.is(back![1], -0)).toBe(true);
    expect(store.pendingResidualRounds()).toEqual([]);
    expect(existsSync(join(dir, 'pending-residual-1.f32'))).toBe(false);
    expect(store.resolveResidual(1, true)).toBe(false); // again: nothing happens
    expect(store.resolveResidual(1, false)).toBe(false);
    expect(store.loadResidual()).toEqual(R1);
  });

  it('discards a staged residual on abort; staging a round again replaces it', () => {
    store.saveResidual(R0);
    store.stageResidual(2, R1);
    store.stageResidual(2, R2);
    store.stageResidual(10, R1);
    expect(store.pendingResidualRounds()).toEqual([2, 10]);
    expect(store.resolveResidual(10, false)).toBe(true);
    expect(store.loadResidual()).toEqual(R0);
    expect(store.resolveResidual(2, true)).toBe(true);
    expect(store.loadResidual()).toEqual(R2);
    expect(store.pendingResidualRounds()).toEqual([]);
  });

  it('applies a first residual when none existed', () => {
    store.stageResidual(0, R1);
    expect(store.loadResidual()).toBeNull();
    expect(store.resolveResidual(0, true)).toBe(true);
    expect(store.loadResidual()).toEqual(R1);
  });

  it('crash leftovers: a half-written stage is dropped, a durable one is resolved after reopening', () => {
    store.saveResidual(R0);
    writeFileSync(join(dir, '.tmp-pending-residual-4.f32-1-abcdef'), 'half');
    store.stageResidual(3, R1);
    const reopened = openModelStore(dir);
    expect(existsSync(join(dir, '.tmp-pending-residual-4.f32-1-abcdef'))).toBe(false);
    expect(reopened.pendingResidualRounds()).toEqual([3]);
    expect(reopened.loadResidual()).toEqual(R0);
    expect(reopened.resolveResidual(3, true)).toBe(true);
    // Crash right after the rename: nothing is pending any more, and a replayed resolve is a no-op.
    const again = openModelStore(dir);
    expect(again.resolveResidual(3, true)).toBe(false);
    expect(again.loadResidual()).toEqual(R1);
  });

  it('never applies a corrupt pending residual, but can discard it', () => {
    store.saveResidual(R0);
    store.stageResidual(5, R1);
    flipByte(join(dir, 'pending-residual-5.f32'), -1);
    expect(errorCode(() => store.resolveResidual(5, true))).toBe('STORE_CORRUPT');
    expect(store.loadResidual()).toEqual(R0);
    expect(store.pendingResidualRounds()).toEqual([5]);
    expect(store.resolveResidual(5, false)).toBe(true);
    expect(store.pendingResidualRounds()).toEqual([]);
  });

  it('clearResidual removes the residual durably, pending residuals stay', () => {
    store.clearResidual(); // nothing to clear: fine
    store.saveResidual(R0);
    store.stageResidual(1, R1);
    store.clearResidual();
    expect(store.loadResidual()).toBeNull();
    expect(openModelStore(dir).loadResidual()).toBeNull();
    expect(store.pendingResidualRounds()).toEqual([1]);
  });

  it('checks its arguments', () => {
    expect(() => store.stageResidual(-1, R1)).toThrow(/round must be an integer/);
    expect(() => store.stageResidual(1.5, R1)).toThrow(/round must be an integer/);
    expect(() => store.stageResidual(1, [1, 2] as unknown as Float32Array)).toThrow(
      /residual must be a Float32Array/,
    );
    expect(errorCode(() => store.stageResidual(1, new Float32Array([0, Number.NaN])))).toBe(
      'UPDATE_NON_FINITE',
    );
    expect(() => store.resolveResidual(1, 1 as unknown as boolean)).toThrow(/apply must be a boolean/);
    expect(() => store.resolveResidual(-2, true)).toThrow(/round must be an integer/);
    expect(store.pendingResidualRounds()).toEqual([]);
  });
});

describe('model store: log cursor', () => {
  let dir: string;
  let store: ModelStore;
  const HASH = new Uint8Array(32).map((_, i) => i + 1);

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'cohort-versions-cursor-'));
    store = openModelStore(dir);
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('round-trips through a reopen and is replaced by the next save', () => {
    expect(store.logCursor()).toBeNull();
    store.saveLogCursor({ sequence: 0, entryHash: HASH });
    expect(openModelStore(dir).logCursor()).toEqual({ sequence: 0, entryHash: HASH });
    store.saveLogCursor({ sequence: Number.MAX_SAFE_INTEGER, entryHash: new Uint8Array(32).fill(7) });
    expect(openModelStore(dir).logCursor()).toEqual({
      sequence: Number.MAX_SAFE_INTEGER,
      entryHash: new Uint8Array(32).fill(7),
    });
  });

  it('writes the documented bytes', () => {
    store.saveLogCursor({ sequence: 258, entryHash: HASH });
    const payload = Buffer.concat([Buffer.from([2, 1, 0, 0, 0, 0, 0, 0]), Buffer.from(HASH)]);
    expect(readFileSync(join(dir, 'log-cursor.bin')).equals(envelope('CLGC', 40, payload))).toBe(true);
  });

  it('reports a corrupted or out-of-range cursor file as STORE_CORRUPT', () => {
    store.saveLogCursor({ sequence: 5, entryHash: HASH });
    const path = join(dir, 'log-cursor.bin');
    flipByte(path, -1);
    expect(errorCode(() => store.logCursor())).toBe('STORE_CORRUPT');
    const big = Buffer.alloc(40);
    big.writeBigUInt64LE(2n ** 53n, 0);
    writeFileSync(path, envelope('CLGC', 40, big)); // checksum fine, sequence too large
    expect(errorCode(() => store.logCursor())).toBe('STORE_CORRUPT');
    writeFileSync(path, envelope('CLGC', 39, Buffer.alloc(39)));
    expect(errorCode(() => store.logCursor())).toBe('STORE_CORRUPT');
    writeFileSync(path, envelope('CMDL', 40, Buffer.alloc(40)));
    expect(errorCode(() => store.logCursor())).toBe('STORE_CORRUPT');
  });

  it('checks its argument', () => {
    expect(() => store.saveLogCursor({ sequence: -1, entryHash: HASH })).toThrow(/cursor\.sequence/);
    expect(() => store.saveLogCursor({ sequence: 1.5, entryHash: HASH })).toThrow(/cursor\.sequence/);
    expect(() => store.saveLogCursor({ sequence: 2 ** 53, entryHash: HASH })).toThrow(/cursor\.sequence/);
    expect(() => store.saveLogCursor({ sequence: 1, entryHash: new Uint8Array(31) })).toThrow(
      /cursor\.entryHash/,
    );
    expect(() => store.saveLogCursor(null as unknown as { sequence: number; entryHash: Uint8Array })).toThrow(
      /cursor must be an object/,
    );
    expect(store.logCursor()).toBeNull();
  });
});

describe('VersionError catalogue', () => {
  it('has JUMP_BACKWARDS', () => {
    expect(new VersionError('JUMP_BACKWARDS', 'x').code).toBe('JUMP_BACKWARDS');
  });
});
