import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { CohortError } from '../errors/index.ts';
import { type AdminRefusalReason, refusalReason } from './admin-refusals.ts';

/** HTTP status of each `CohortError` code the API answers; any other error is a bare 500. */
export const STATUS_BY_CODE: Readonly<Record<string, number>> = Object.freeze({
  VALIDATION_FAILED: 400,
  INVALID_ARGUMENT: 400,
  REF_INVALID: 400,
  REGISTRY_INVALID: 400,
  REGISTRY_CHANGE_KIND: 400,
  UNAUTHENTICATED: 401,
  FORBIDDEN: 403,
  NOT_FOUND: 404,
  REF_UNKNOWN: 404,
  RUN_UNKNOWN: 404,
  ROUND_UNKNOWN: 404,
  MODEL_MISSING: 404,
  REF_AMBIGUOUS: 409,
  RUN_ACTIVE: 409,
  RUN_NOT_ACTIVE: 409,
  ROUND_NOT_OPEN: 409,
  ROLLBACK_REFUSED: 409,
  REGISTRY_CHANGE_REFUSED: 409,
  REGISTRY_SIGNATURE_INVALID: 422,
  RATE_LIMITED: 429,
  AUDIT_BUSY: 429,
  NOT_CONFIGURED: 501,
  AUDIT_TRUST_MISSING: 501,
  NOT_STARTED: 503,
  STOPPED: 503,
  LOG_UNAVAILABLE: 503,
  LOG_FENCED: 503,
  LOG_SEQUENCE_CONFLICT: 503,
  LEASE_LOST: 503,
  AUDIT_SOURCE_UNAVAILABLE: 503,
  AUDIT_CAPACITY: 503,
  AUDIT_TIMEOUT: 503,
  AUDIT_JOB_FAILED: 503,
  AUDIT_JOB_ABORTED: 503,
});

/** The body of every error answer. */
export interface ErrorBody {
  statusCode: number;
  /** Stable code (`CohortError.code`, or `INTERNAL`). */
  code: string;
  /** The status's reason phrase. */
  error: string;
  message: string;
  /** 400 from schema validation: the offending field (`body.rounds`, `querystring.limit`). */
  field?: string;
}

const REASONS: Readonly<Record<number, string>> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  405: 'Method Not Allowed',
  406: 'Not Acceptable',
  409: 'Conflict',
  413: 'Payload Too Large',
  415: 'Unsupported Media Type',
  422: 'Unprocessable Entity',
  429: 'Too Many Requests',
  500: 'Internal Server Error',
  501: 'Not Implemented',
  503: 'Service Unavailable',
};

/** The JSON schema of {@link ErrorBody} (every route's 4xx/5xx answers). */
export const ERROR_SCHEMA = {
  type: 'object',
  required: ['statusCode', 'code', 'error', 'message'],
  additionalProperties: false,
  properties: {
    statusCode: { type: 'integer' },
    code: { type: 'string' },
    error: { type: 'string' },
    message: { type: 'string' },
    field: { type: 'string' },
  },
} as const;

/** `body.rounds`-style path of an Ajv error. */
function fieldOf(context: string, e: { instancePath?: string; params?: Record<string, unknown> }): string {
  const path = (e.instancePath ?? '')
    .split('/')
    .filter((p) => p.length > 0)
    .map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'));
  const extra = e.params?.additionalProperty ?? e.params?.missingProperty;
  if (typeof extra === 'string') path.push(extra);
  return [context, ...path].join('.');
}

function body(statusCode: number, code: string, message: string, field?: string): ErrorBody {
  return {
    statusCode,
    code,
    error: REASONS[statusCode] ?? 'Error',
    message,
    ...(field === undefined ? {} : { field }),
  };
}

/** Told of every error answer, with its refusal reason (metrics, the aggregated refusal log). */
export type RefusalListener = (req: FastifyRequest, reason: AdminRefusalReason) => void;

/**
 * The API's one error handler: schema failures are 400 `VALIDATION_FAILED` naming the field (an
 * unknown field is refused, never stripped); a `CohortError` answers the status of its code
 * ({@link STATUS_BY_CODE}) with its message, and `Retry-After` when its `details.retryAfterS` says
 * when to come back; Fastify's own client errors (bad JSON, wrong media type, body too large)
 * keep their 4xx; anything else is logged and answered as a bare 500. Every error answer, 404s
 * included, is passed to `onRefused` with its reason.
 */
export function installErrorHandler(app: FastifyInstance, onRefused: RefusalListener = () => {}): void {
  const refuse = (req: FastifyRequest, status: number, code: string, bucket?: unknown) => {
    try {
      onRefused(req, refusalReason(status, code, bucket));
    } catch {
      // counting never fails an answer
    }
  };
  app.setErrorHandler((err: FastifyError, req: FastifyRequest, reply: FastifyReply) => {
    if (Array.isArray(err.validation) && err.validation.length > 0) {
      const first = err.validation[0] as {
        instancePath?: string;
        params?: Record<string, unknown>;
        keyword?: string;
        message?: string;
      };
      const field = fieldOf(err.validationContext ?? 'request', first);
      const why =
        first.keyword === 'additionalProperties'
          ? 'unknown field'
          : first.keyword === 'required'
            ? 'required'
            : (first.message ?? 'invalid');
      refuse(req, 400, 'VALIDATION_FAILED');
      return reply.code(400).send(body(400, 'VALIDATION_FAILED', `${field}: ${why}`, field));
    }
    if (err instanceof CohortError) {
      const status = STATUS_BY_CODE[err.code];
      if (status !== undefined) {
        if (status >= 500) req.log.warn({ code: err.code, err }, 'admin request failed');
        const retry = err.details['retryAfterS'];
        if (typeof retry === 'number' && Number.isInteger(retry) && retry > 0) {
          reply.header('retry-after', String(retry));
        }
        refuse(req, status, err.code, err.details['bucket']);
        return reply.code(status).send(body(status, err.code, err.message));
      }
    } else if (
      typeof err.statusCode === 'number' &&
      err.statusCode >= 400 &&
      err.statusCode < 500 &&
      typeof err.code === 'string'
    ) {
      refuse(req, err.statusCode, err.code);
      return reply.code(err.statusCode).send(body(err.statusCode, err.code, err.message));
    }
    req.log.error({ err }, 'admin request failed');
    refuse(req, 500, 'INTERNAL');
    return reply.code(500).send(body(500, 'INTERNAL', 'internal error'));
  });
  app.setNotFoundHandler((req, reply) => {
    refuse(req, 404, 'NOT_FOUND');
    reply.code(404).send(body(404, 'NOT_FOUND', `no route ${req.method} ${req.url.split('?')[0]}`));
  });
}
