import {
  copyFileSync,
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  bytesToHex,
  type Commit,
  encodeCommit,
  genesisCommit,
  type ModelStore,
  openModelStore,
  rollbackCommit,
} from '../../src/versions/index.ts';
import { errorCode } from '../helpers/error-code.ts';
import { candidate, PARAMS, state, W0 } from '../helpers/store-fixture.ts';

function flipByte(path: string, offset: number): void {
  const bytes = readFileSync(path);
  const at = offset < 0 ? bytes.length + offset : offset;
  bytes[at] = bytes[at]! ^ 0x01;
  writeFileSync(path, bytes);
}

describe('model store', () => {
  let dir: string;
  let store: ModelStore;
  let genesis: Commit;

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'cohort-versions-'));
    store = openModelStore(dir);
    genesis = genesisCommit(W0, PARAMS);
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('starts empty, initializes from genesis, and init is idempotent', () => {
    expect(store.head()).toBeNull();
    expect(store.history(5)).toEqual([]);
    expect(errorCode(() => store.prepare(candidate(genesis, W0, 1, 1)))).toBe('NOT_INITIALIZED');
    expect(errorCode(() => store.init(genesis, new Float32Array([5, 6, 7, 8])))).toBe('MODEL_MISMATCH');
    expect(() => store.init(candidate(genesis, W0, 1, 1).commit, W0)).toThrow(/genesis\.kind/);
    expect(store.init(genesis, W0)).toEqual(genesis);
    expect(store.init(genesis, W0)).toEqual(genesis);
    expect(store.head()).toEqual(genesis);
    expect(store.readModel(genesis)).toEqual(W0);
    expect(readFileSync(join(dir, 'HEAD'), 'utf8')).toBe(`${bytesToHex(genesis.hash)}\n`);
    const reopened = openModelStore(dir);
    expect(reopened.head()).toEqual(genesis);
    expect(reopened.init(genesis, W0)).toEqual(genesis);
    const other = genesisCommit(new Float32Array([9]), PARAMS);
    expect(errorCode(() => reopened.init(other, new Float32Array([9])))).toBe('ALREADY_INITIALIZED');
  });

  it('prepare survives a crash with HEAD unchanged; commitPrepared switches HEAD durably', () => {
    store.init(genesis, W0);
    const c1 = candidate(genesis, W0, 1, 0.5);
    store.prepare(c1);
    expect(store.preparedRounds()).toEqual([1]);
    expect(store.head()).toEqual(genesis);

    // "Crash": a new instance reads only the disk.
    const afterCrash = openModelStore(dir);
    expect(afterCrash.head()).toEqual(genesis);
    const prepared = afterCrash.prepared(1);
    expect(prepared?.commit).toEqual(c1.commit);
    expect(prepared?.parameters).toEqual(c1.parameters);
    expect(prepared?.strategyState).toEqual(c1.strategyState);
    expect(afterCrash.hasModel(c1.commit)).toBe(false); // the candidate model is not a version yet

    expect(afterCrash.commitPrepared(1, c1.commit.hash)).toEqual(c1.commit);
    expect(afterCrash.head()).toEqual(c1.commit);
    expect(afterCrash.prepared(1)).toBeNull();
    expect(afterCrash.preparedRounds()).toEqual([]);

    const reopened = openModelStore(dir);
    expect(reopened.head()).toEqual(c1.commit);
    expect(reopened.readModel(c1.commit)).toEqual(c1.parameters);
    expect(reopened.loadStrategyState()).toEqual(c1.strategyState);
    expect(reopened.history(10).map((c) => c.hash)).toEqual([c1.commit.hash, genesis.hash]);
  });

  it('refuses a decision that is not the prepared candidate, and commits nothing unprepared', () => {
    store.init(genesis, W0);
    const c1 = candidate(genesis, W0, 1, 0.5);
    const other = candidate(genesis, W0, 1, 0.25);
    store.prepare(c1);
    expect(errorCode(() => store.commitPrepared(1, other.commit.hash))).toBe('PREPARED_MISMATCH');
    expect(openModelStore(dir).head()).toEqual(genesis);
    expect(store.prepared(1)?.commit).toEqual(c1.commit); // still there: the right decision may follow
    expect(errorCode(() => store.commitPrepared(2, c1.commit.hash))).toBe('NOT_PREPARED');
    expect(errorCode(() => store.prepare(other))).toBe('PREPARED_CONFLICT');
    expect(store.prepare(c1).commit).toEqual(c1.commit); // same candidate again: no-op
  });

  it('abort discards the candidate and leaves HEAD, model and state alone', () => {
    store.init(genesis, W0);
    store.saveStrategyState(state(0));
    const c1 = candidate(genesis, W0, 1, 0.5);
    store.prepare(c1);
    expect(store.abortPrepared(1)).toBe(true);
    expect(store.abortPrepared(1)).toBe(false);
    const reopened = openModelStore(dir);
    expect(reopened.prepared(1)).toBeNull();
    expect(reopened.head()).toEqual(genesis);
    expect(reopened.loadStrategyState()).toEqual(state(0));
    expect(errorCode(() => reopened.commitPrepared(1, c1.commit.hash))).toBe('NOT_PREPARED');
  });

  it('refuses a candidate that is not a child of HEAD, or whose model does not match', () => {
    store.init(genesis, W0);
    const c1 = candidate(genesis, W0, 1, 0.5);
    store.prepare(c1);
    store.commitPrepared(1, c1.commit.hash);
    const stale = candidate(genesis, W0, 2, 0.25); // parent is genesis, HEAD is c1
    expect(errorCode(() => store.prepare(stale))).toBe('PARENT_MISMATCH');
    const c2 = candidate(c1.commit, c1.parameters, 2, 1);
    expect(errorCode(() => store.prepare({ ...c2, parameters: W0 }))).toBe('MODEL_MISMATCH');
    expect(() => store.prepare({ ...c2, commit: { ...c2.commit, round: 3 } })).toThrow(/candidate\.commit/);
  });

  it('finishes a commit interrupted after the HEAD swap when reopened', () => {
    store.init(genesis, W0);
    store.saveStrategyState(state(0));
    const c1 = candidate(genesis, W0, 1, 0.5);
    store.prepare(c1);
    const preparedPath = join(dir, 'prepared', '1.bin');
    const saved = join(dir, 'saved.bin');
    const savedState = join(dir, 'saved-state.bin');
    copyFileSync(preparedPath, saved);
    copyFileSync(join(dir, 'strategy-state.bin'), savedState);
    store.commitPrepared(1, c1.commit.hash);
    // Rewind to "HEAD swapped, state not yet written, prepared file not yet removed".
    copyFileSync(saved, preparedPath);
    copyFileSync(savedState, join(dir, 'strategy-state.bin'));
    expect(errorCode(() => store.loadStrategyState())).toBe('STATE_STALE');

    const reopened = openModelStore(dir);
    expect(reopened.head()).toEqual(c1.commit);
    expect(reopened.preparedRounds()).toEqual([]);
    expect(reopened.loadStrategyState()).toEqual(c1.strategyState);
    // A recovering agent that re-applies COMMIT from the log is also fine.
    copyFileSync(saved, preparedPath);
    expect(openModelStore(dir).commitPrepared(1, c1.commit.hash)).toEqual(c1.commit);
    expect(reopened.commitPrepared(1, c1.commit.hash)).toEqual(c1.commit); // nothing prepared: HEAD
    expect(errorCode(() => reopened.commitPrepared(1, genesis.hash))).toBe('NOT_PREPARED');
  });

  it('removes temporary files left by an interrupted write', () => {
    store.init(genesis, W0);
    writeFileSync(join(dir, 'models', '.tmp-half-written'), 'x');
    writeFileSync(join(dir, '.tmp-HEAD-1-abc'), 'garbage');
    const reopened = openModelStore(dir);
    expect(reopened.head()).toEqual(genesis);
    expect(readdirSync(join(dir, 'models')).some((n) => n.startsWith('.tmp-'))).toBe(false);
    expect(existsSync(join(dir, '.tmp-HEAD-1-abc'))).toBe(false);
  });

  describe('tamper detection', () => {
    beforeEach(() => {
      store.init(genesis, W0);
    });

    it('a flipped byte in a model file is STORE_CORRUPT', () => {
      const path = join(dir, 'models', `${bytesToHex(genesis.modelHash)}.f32`);
      flipByte(path, -1); // payload
      expect(errorCode(() => store.readModel(genesis))).toBe('STORE_CORRUPT');
      flipByte(path, -1);
      expect(store.readModel(genesis)).toEqual(W0);
      flipByte(path, 20); // header checksum
      expect(errorCode(() => store.readModel(genesis))).toBe('STORE_CORRUPT');
    });

    it('a model file renamed to another hash is STORE_CORRUPT', () => {
      const c1 = candidate(genesis, W0, 1, 0.5);
      store.prepare(c1);
      store.commitPrepared(1, c1.commit.hash);
      copyFileSync(
        join(dir, 'models', `${bytesToHex(genesis.modelHash)}.f32`),
        join(dir, 'models', `${bytesToHex(c1.commit.modelHash)}.f32`),
      );
      expect(errorCode(() => store.readModel(c1.commit))).toBe('STORE_CORRUPT');
    });

    it('a commit file whose hash does not verify is STORE_CORRUPT', () => {
      const path = join(dir, 'commits', `${bytesToHex(genesis.hash)}.commit`);
      flipByte(path, -1); // a params byte: the stored hash no longer verifies
      expect(errorCode(() => store.readCommit(genesis.hash))).toBe('STORE_CORRUPT');
      expect(errorCode(() => openModelStore(dir))).toBe('STORE_CORRUPT');
    });

    it('a commit file holding another (valid) commit is STORE_CORRUPT', () => {
      const other = genesisCommit(new Float32Array([7]), PARAMS);
      writeFileSync(join(dir, 'commits', `${bytesToHex(genesis.hash)}.commit`), encodeCommit(other));
      expect(errorCode(() => openModelStore(dir))).toBe('STORE_CORRUPT');
    });

    it('HEAD naming a missing commit is STORE_CORRUPT; an unknown hash is COMMIT_UNKNOWN', () => {
      expect(errorCode(() => store.readCommit(new Uint8Array(32).fill(3)))).toBe('COMMIT_UNKNOWN');
      writeFileSync(join(dir, 'HEAD'), `${'ab'.repeat(32)}\n`);
      expect(errorCode(() => openModelStore(dir))).toBe('STORE_CORRUPT');
      writeFileSync(join(dir, 'HEAD'), 'not a hash');
      expect(errorCode(() => openModelStore(dir))).toBe('STORE_CORRUPT');
    });

    it('a flipped byte in a prepared file is STORE_CORRUPT', () => {
      const c1 = candidate(genesis, W0, 1, 0.5);
      store.prepare(c1);
      flipByte(join(dir, 'prepared', '1.bin'), -2);
      expect(errorCode(() => store.prepared(1))).toBe('STORE_CORRUPT');
      expect(errorCode(() => store.commitPrepared(1, c1.commit.hash))).toBe('STORE_CORRUPT');
      expect(store.head()).toEqual(genesis);
    });
  });

  it('rolls back to an older model through the same prepare/commit', () => {
    store.init(genesis, W0);
    const c1 = candidate(genesis, W0, 1, 0.5);
    store.prepare(c1);
    store.commitPrepared(1, c1.commit.hash);
    const rb = rollbackCommit(c1.commit, genesis, 2);
    expect(rb.hash).not.toEqual(genesis.hash);
    expect(rb.modelHash).toEqual(genesis.modelHash);
    store.prepare({ commit: rb, parameters: store.readModel(genesis), strategyState: state(0) });
    store.commitPrepared(2, rb.hash);
    const reopened = openModelStore(dir);
    expect(reopened.head()).toEqual(rb);
    expect(reopened.readModel(rb)).toEqual(W0);
    expect(reopened.history(3).map((c) => c.kind)).toEqual(['rollback', 'round', 'genesis']);
  });

  it('history walks parents up to the limit', () => {
    store.init(genesis, W0);
    let head = genesis;
    let model: Float32Array = W0;
    for (let round = 1; round <= 4; round++) {
      const c = candidate(head, model, round, round);
      store.prepare(c);
      head = store.commitPrepared(round, c.commit.hash);
      model = c.parameters;
    }
    const all = store.history(100);
    expect(all.map((c) => c.height)).toEqual([4, 3, 2, 1, 0]);
    for (let i = 0; i + 1 < all.length; i++) expect(all[i]!.parent).toEqual(all[i + 1]!.hash);
    expect(store.history(2).map((c) => c.round)).toEqual([4, 3]);
    expect(store.history(0)).toEqual([]);
    expect(() => store.history(-1)).toThrow(/limit/);
  });

  it('pruning keeps the models of the last commits, HEAD included', () => {
    store.init(genesis, W0);
    const commits = [genesis];
    let model: Float32Array = W0;
    for (let round = 1; round <= 3; round++) {
      const c = candidate(commits.at(-1)!, model, round, 1);
      store.prepare(c);
      commits.push(store.commitPrepared(round, c.commit.hash));
      model = c.parameters;
    }
    const removed = store.pruneModels(1);
    expect(removed).toEqual(
      commits
        .slice(0, 3)
        .map((c) => bytesToHex(c.modelHash))
        .sort(),
    );
    const head = store.head()!;
    expect(store.readModel(head)).toEqual(model);
    expect(errorCode(() => store.readModel(genesis))).toBe('MODEL_MISSING');
    expect(store.pruneModels(1)).toEqual([]);
    expect(() => store.pruneModels(0)).toThrow(/keep/);
    expect(openModelStore(dir).history(10)).toHaveLength(4); // commits are kept
  });

  it('pruning keeps a model shared by a rollback commit', () => {
    store.init(genesis, W0);
    const c1 = candidate(genesis, W0, 1, 0.5);
    store.prepare(c1);
    store.commitPrepared(1, c1.commit.hash);
    const rb = rollbackCommit(c1.commit, genesis, 2);
    store.prepare({ commit: rb, parameters: W0, strategyState: state(0) });
    store.commitPrepared(2, rb.hash);
    expect(store.pruneModels(1)).toEqual([bytesToHex(c1.commit.modelHash)]);
    expect(store.readModel(genesis)).toEqual(W0);
  });

  it('round-trips the residual and detects its corruption', () => {
    expect(store.loadResidual()).toBeNull();
    const residual = new Float32Array([0.125, -0, 1e-30, -3.5]);
    store.saveResidual(residual);
    const back = openModelStore(dir).loadResidual();
    expect(back).toEqual(residual);
    expect(Object.is(back![1], -0)).toBe(true);
    store.saveResidual(new Float32Array([1]));
    expect(store.loadResidual()).toEqual(new Float32Array([1]));
    expect(() => store.saveResidual(new Float32Array([Number.POSITIVE_INFINITY]))).toThrow(/residual\[0\]/);
    flipByte(join(dir, 'residual.f32'), -1);
    expect(errorCode(() => store.loadResidual())).toBe('STORE_CORRUPT');
  });

  it('round-trips the strategy state as HEAD’s', () => {
    expect(errorCode(() => store.saveStrategyState(state(1)))).toBe('NOT_INITIALIZED');
    store.init(genesis, W0);
    expect(store.loadStrategyState()).toBeNull();
    store.saveStrategyState(state(3));
    expect(openModelStore(dir).loadStrategyState()).toEqual(state(3));
    flipByte(join(dir, 'strategy-state.bin'), -1);
    expect(errorCode(() => store.loadStrategyState())).toBe('STORE_CORRUPT');
  });
});
