export { assertFiniteArray, assertInteger, assertLength } from './assert.ts';
export { BLOCK_REJECT_REASONS, BlockRejectedError, type BlockRejectReason } from './block-rejected-error.ts';
export { CohortError, ConfigError, CryptoError, InvalidArgumentError, UpdateError } from './cohort-error.ts';
