import { sha256 } from '../../crypto/digest/index.ts';
import type { DataContract } from '../config/index.ts';
import { canonicalJson } from './canonical-json.ts';

/** Domain tag hashed before the contract: `cohort/v1/data-contract` and a NUL byte. */
export const DATA_CONTRACT_DOMAIN = 'cohort/v1/data-contract\0';

/**
 * SHA-256 of `DATA_CONTRACT_DOMAIN ‖ canonicalJson(contract)` (UTF-8): the digest the genesis
 * commit pins. Pass the validated contract (`config.data`): defaults are filled there, so a file
 * that spells a default out and one that leaves it out give the same digest; any other difference
 * (a feature's name, type or place, a class, the scale) gives another.
 */
export function dataContractDigest(contract: DataContract): Uint8Array {
  const encoder = new TextEncoder();
  return sha256(encoder.encode(DATA_CONTRACT_DOMAIN), encoder.encode(canonicalJson(contract)));
}
