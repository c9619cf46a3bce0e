import { pino } from 'pino';
import type { LogLevel } from './log-levels.ts';
import { REDACT_PATHS, REDACTED } from './redact-paths.ts';
import { scrubBytes } from './scrub-bytes.ts';

/** Cohort's logger: a pino logger (JSON lines). */
export type Logger = pino.Logger;

/** Where log lines go: any stream with `write(line)`, e.g. `process.stderr` or `pino.destination(path)`. */
export type LogDestination = pino.DestinationStream;

/** Options of {@link createLogger}. */
export interface CreateLoggerOptions {
  /** Minimum level written (default `'info'`). */
  level?: LogLevel;
  /** Process or component name, written as `name` on every line. */
  name?: string;
  /** Destination stream; stdout when omitted. */
  destination?: LogDestination;
  /** Bindings added to every line (e.g. `{ federation, site }`). Never pass secrets. */
  base?: Record<string, unknown>;
}

/**
 * Creates a JSON logger. Values under secret-ish keys ({@link REDACT_PATHS}: `secretKey`,
 * `secret`, `password`, `token`, `privateKey`, `key`, at the top level and two levels down)
 * are replaced by `[redacted]`, and every binary value (typed array, Buffer, ArrayBuffer) in
 * a log record is replaced by a `[N bytes]` marker, so key material never reaches a log. An `err`
 * is written as an object (type, code, message and stack with its causes', details). Every
 * line is one JSON object with unique keys (a record's own `msg` becomes `detail`).
 */
export function createLogger(options: CreateLoggerOptions = {}): Logger {
  const pinoOptions: pino.LoggerOptions = {
    level: options.level ?? 'info',
    redact: { paths: [...REDACT_PATHS], censor: REDACTED },
    // pino's own: type, message and stack with every cause's appended, own fields (code, details);
    // then the details' bytes scrubbed like the record's.
    serializers: { err: serializeError },
    formatters: {
      log: (record) => scrubBytes(keepMessageKey(record)) as Record<string, unknown>,
      bindings: (bindings) => scrubBytes(bindings) as Record<string, unknown>,
    },
  };
  if (options.name !== undefined) pinoOptions.name = options.name;
  if (options.base !== undefined) pinoOptions.base = { pid: process.pid, ...options.base };
  return options.destination === undefined ? pino(pinoOptions) : pino(pinoOptions, options.destination);
}

/**
 * A record's own `msg` field would be written beside the line's message under the same key, and
 * JSON readers keep only one of the two: it is moved to `detail` (or `detailMsg` when that is taken).
 */
function keepMessageKey(record: Record<string, unknown>): Record<string, unknown> {
  if (!Object.hasOwn(record, 'msg')) return record;
  const { msg, ...rest } = record;
  return Object.hasOwn(rest, 'detail') ? { ...rest, detailMsg: msg } : { ...rest, detail: msg };
}

/**
 * Returns a child of `logger` whose lines carry `component` and the given bindings
 * (same level, redaction and destination as the parent).
 */
export function childLogger(
  logger: Logger,
  component: string,
  bindings: Record<string, unknown> = {},
): Logger {
  return logger.child({ ...bindings, component });
}

/**
 * pino's error serializer, its result copied to a plain object so its details' bytes are scrubbed
 * (the record's formatter leaves errors whole). Anything else under `err` the formatter scrubs.
 */
function serializeError(err: unknown): unknown {
  if (!(err instanceof Error)) return err;
  return scrubBytes({ ...pino.stdSerializers.err(err) });
}
