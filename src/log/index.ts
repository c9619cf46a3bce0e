export {
  type CreateLoggerOptions,
  childLogger,
  createLogger,
  type LogDestination,
  type Logger,
} from './create-logger.ts';
export { LOG_LEVELS, type LogLevel } from './log-levels.ts';
export { REDACT_PATHS, REDACTED, SECRET_KEYS } from './redact-paths.ts';
export { scrubBytes } from './scrub-bytes.ts';
export type { TextSink } from './text-sink.ts';
