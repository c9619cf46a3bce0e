export { CkksContext, getCkksContext, type SealCiphertext } from './ckks-context.ts';
export { CkksKeyset } from './ckks-keyset.ts';
export {
  assertCkksParams,
  type CkksParams,
  ckksParamsId,
  DEFAULT_CKKS_PARAMS,
  slotCount,
} from './ckks-params.ts';
export { loadSeal } from './seal-runtime.ts';
