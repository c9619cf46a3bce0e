// Every log line is one JSON object that tools read whole: no key twice, no secret, no bytes.
import { describe, expect, it } from 'vitest';
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
});
