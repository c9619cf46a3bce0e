import { CohortError } from '../errors/index.ts';

/** Stable codes of {@link TreeError}; never renamed once released. */
export const TREE_ERROR_CODES = [
  /** A ring was asked for with no nodes at all: no key could ever be placed. */
  'NO_NODES',
  /** Two nodes share one id: their virtual nodes would collide and loads could not be told apart. */
  'DUPLICATE_NODE',
] as const;

export type TreeErrorCode = (typeof TREE_ERROR_CODES)[number];

/**
 * The aggregation tree's membership cannot be built as given. Other contract violations (a
 * non-positive capacity, ε ≤ 0, a duplicate key) are `InvalidArgumentError`s naming the argument.
 */
export class TreeError extends CohortError {
  declare readonly code: TreeErrorCode;

  constructor(
    code: TreeErrorCode,
    message: string,
    options?: { cause?: unknown; details?: Record<string, unknown> },
  ) {
    super(code, message, options);
  }
}
