export {
  AggregateMacKey,
  MAC_KEY_BYTES,
  MAC_PRIME,
  MAC_TAG_BITS,
  type MacNonce,
  macAccumulate,
  macSiteOffset,
  macWeights,
} from './linear-mac.ts';
