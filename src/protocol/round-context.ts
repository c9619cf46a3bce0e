import { InvalidArgumentError } from '../errors/index.ts';

/**
 * Where an update belongs. Every signed block and manifest names all four, and a receiver
 * rejects one whose context differs from its own (`WRONG_CONTEXT`): no replay across
 * federations, rounds or base commits.
 */
export interface RoundContext {
  /** Federation id. */
  readonly federation: string;
  /** Round number (≥ 0, safe integer). */
  readonly round: number;
  /** SHA-256 hash of the base commit (32 bytes). */
  readonly baseCommit: Uint8Array;
  /** Height of the base commit (≥ 0, safe integer). */
  readonly version: number;
}

/** Throws `INVALID_ARGUMENT` naming the bad field of a round context. */
export function assertRoundContext(ctx: RoundContext): void {
  if (typeof ctx.federation !== 'string' || !/^[a-z0-9][a-z0-9-]{0,62}$/.test(ctx.federation)) {
    throw new InvalidArgumentError(
      `context.federation ${JSON.stringify(ctx.federation)} is not a federation id`,
    );
  }
  if (!Number.isSafeInteger(ctx.round) || ctx.round < 0) {
    throw new InvalidArgumentError(`context.round ${ctx.round} must be a non-negative safe integer`);
  }
  if (!Number.isSafeInteger(ctx.version) || ctx.version < 0) {
    throw new InvalidArgumentError(`context.version ${ctx.version} must be a non-negative safe integer`);
  }
  if (!(ctx.baseCommit instanceof Uint8Array) || ctx.baseCommit.length !== 32) {
    throw new InvalidArgumentError(`context.baseCommit length ${ctx.baseCommit?.length}, expects 32`);
  }
}
