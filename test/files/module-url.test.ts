// moduleUrl: the .ts module itself beside a TypeScript caller, its .js twin beside a compiled one.
import { describe, expect, it } from 'vitest';
import { moduleUrl } from '../../src/files/index.ts';

describe('moduleUrl', () => {
  it('keeps .ts beside a .ts caller and takes the .js twin beside a .js caller', () => {
    expect(moduleUrl('./worker.ts', 'file:///repo/src/a/caller.ts').href).toBe(
      'file:///repo/src/a/worker.ts',
    );
    expect(moduleUrl('../../crypto/x/index.ts', 'file:///pkg/src/a/caller.js').href).toBe(
      'file:///pkg/crypto/x/index.js',
    );
  });

  it('refuses a path that names no .ts module', () => {
    expect(() => moduleUrl('./worker.js', 'file:///repo/a.ts')).toThrow(/must name a \.ts module/);
  });
});
