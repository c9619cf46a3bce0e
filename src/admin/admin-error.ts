import { CohortError } from '../errors/index.ts';

/**
 * An error of the admin API itself (`UNAUTHENTICATED`, `FORBIDDEN`, `RATE_LIMITED`,
 * `VALIDATION_FAILED`, `NOT_FOUND`, `NOT_CONFIGURED`, `REGISTRY_CHANGE_KIND`); the error handler
 * maps its code to a status like any `CohortError`'s.
 */
export class AdminApiError extends CohortError {}
