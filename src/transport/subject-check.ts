import { InvalidArgumentError } from '../errors/index.ts';

/** Whether `text` holds a C0 control character or DEL. */
export function hasControlCharacter(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x20 || c === 0x7f) return true;
  }
  return false;
}

/**
 * Throws `INVALID_ARGUMENT` naming `name` unless `subject` is a well-formed NATS subject:
 * non-empty dot-separated tokens without whitespace; wildcards (`*` token, trailing `>`) only
 * when `wildcards` is true.
 */
export function assertSubject(name: string, subject: unknown, wildcards: boolean): asserts subject is string {
  const fail = (problem: string): never => {
    throw new InvalidArgumentError(`${name} ${problem}, got ${JSON.stringify(String(subject))}`, {
      details: { name, subject: String(subject) },
    });
  };
  if (typeof subject !== 'string' || subject.length === 0 || subject.length > 1024) {
    fail('must be a NATS subject of 1-1024 characters');
  }
  const s = subject as string;
  if (/\s/.test(s) || hasControlCharacter(s)) fail('must not contain whitespace or control characters');
  const tokens = s.split('.');
  tokens.forEach((t, i) => {
    if (t.length === 0) fail('must not have empty tokens');
    const wild = t === '*' || (t === '>' && i === tokens.length - 1);
    if (!wild && (t.includes('*') || t.includes('>'))) fail('has a misplaced wildcard');
    if (wild && !wildcards) fail('must not contain wildcards');
  });
}
