// Every log line is one JSON object that tools read whole: no key twice, no secret, no bytes.
import { describe, expect, it } from 'vitest';
import { CohortError } from '../../src/errors/index.ts';
import { createLogger } from '../../src/log/index.ts';

function capture(): { lines: string[]; destination: { write(line: string): boolean } } {
  const lines: string[] = [];
  return { lines, destination: { write: (line: string) => lines.push(line) > 0 } };
}

describe('createLogger', () => {
  it('keeps a record’s own msg as detail, so the line has each key once', () => {
    const { lines, destination } = capture();
    const log = createLogger({ destination, name: 'test' });
    log.warn({ code: 'X', msg: 'the refusal detail' }, 'refused');
    log.warn({ detail: 'first', msg: 'second' }, 'both');
    const keys = (line: string) => [...line.matchAll(/"([^"]+)":/g)].map((m) => m[1]);
    for (const line of lines) expect(new Set(keys(line)).size).toBe(keys(line).length);
    expect(JSON.parse(lines[0]!)).toMatchObject({ msg: 'refused', detail: 'the refusal detail', code: 'X' });
    expect(JSON.parse(lines[1]!)).toMatchObject({ msg: 'both', detail: 'first', detailMsg: 'second' });
  });

  it('redacts secret-ish keys and replaces bytes by their length', () => {
    const { lines, destination } = capture();
    const log = createLogger({ destination });
    log.info({ secretKey: 'k', nested: { password: 'p' }, blob: new Uint8Array(7) }, 'hello');
    const line = JSON.parse(lines[0]!);
    expect(line.secretKey).toBe('[redacted]');
    expect(line.nested.password).toBe('[redacted]');
    expect(line.blob).toBe('[7 bytes]');
    expect(lines[0]).not.toContain('"p"');
  });

  it('writes an error as an object: its type, code, message, stack and cause chain; bytes in its details scrubbed', () => {
    const { lines, destination } = capture();
    const log = createLogger({ destination });
    const cause = new Error('socket closed');
    const err = new CohortError('TRANSPORT_REMOTE', 'no answer from agg-1', {
      cause,
      details: { subject: 'cohort.f.partial.agg-1', frame: new Uint8Array(12) },
    });
    log.error({ round: 3, err }, 'partial not delivered');
    const line = JSON.parse(lines[0]!);
    expect(line.err).toMatchObject({ type: 'CohortError', code: 'TRANSPORT_REMOTE' });
    expect(line.err.message).toContain('no answer from agg-1');
    expect(line.err.message).toContain('socket closed');
    expect(line.err.stack).toContain('create-logger.test.ts');
    expect(line.err.details).toEqual({ subject: 'cohort.f.partial.agg-1', frame: '[12 bytes]' });
    // Not an error: written as it is.
    log.warn({ err: 'a plain reason' }, 'refused');
    expect(JSON.parse(lines[1]!).err).toBe('a plain reason');
  });
});
