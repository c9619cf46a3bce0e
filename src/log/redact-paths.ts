/**
 * Object keys whose values are treated as secrets and never written to a log. Matched at
 * the top level of a log record and up to two levels down (pino's redaction has no
 * recursive wildcard, so deeper nesting must not carry secrets: pass ids, not key objects).
 */
export const SECRET_KEYS = ['secretKey', 'secret', 'password', 'token', 'privateKey', 'key'] as const;

/** Censor written in place of a redacted value. */
export const REDACTED = '[redacted]';

/** pino `redact.paths` covering {@link SECRET_KEYS}: `k`, `*.k` and `*.*.k` for each key. */
export const REDACT_PATHS: readonly string[] = Object.freeze(
  SECRET_KEYS.flatMap((k) => [k, `*.${k}`, `*.*.${k}`]),
);
