import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  bytesToHex,
  genesisCommit,
  openModelStore,
  peekStoreHead,
  VersionError,
} from '../../src/versions/index.ts';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe('peekStoreHead', () => {
  it("reads a store's HEAD without tidying or finishing anything", () => {
    const dir = mkdtempSync(join(tmpdir(), 'cohort-peek-'));
    dirs.push(dir);
    expect(peekStoreHead(dir)).toBeNull();
    const parameters = new Float32Array([1, 2, 3]);
    const genesis = genesisCommit(parameters, new Uint8Array([1]));
    openModelStore(dir).init(genesis, parameters);
    // A write in progress (what a running agent may be doing) must survive a peek.
    const temp = join(dir, '.tmp-residual.f32-123-abc');
    writeFileSync(temp, 'half-written');
    expect(bytesToHex(peekStoreHead(dir)!.hash)).toBe(bytesToHex(genesis.hash));
    expect(existsSync(temp)).toBe(true);
  });

  it('reports a HEAD that names no stored commit as STORE_CORRUPT', () => {
    const dir = mkdtempSync(join(tmpdir(), 'cohort-peek-'));
    dirs.push(dir);
    writeFileSync(join(dir, 'HEAD'), `${'ab'.repeat(32)}\n`);
    expect(() => peekStoreHead(dir)).toThrow(VersionError);
    writeFileSync(join(dir, 'HEAD'), 'not a hash\n');
    expect(() => peekStoreHead(dir)).toThrow(/not a commit hash/);
  });
});
