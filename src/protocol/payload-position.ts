import type { MacNonce } from '../../crypto/mac/index.ts';

/**
 * The position label of a round attempt's payloads: `update:<federation>:<round>:<attempt hex>`.
 * Block b of an update sits at (label, b). Under threshold encryption every site encrypting for
 * this attempt uses the position's common random polynomial, so their payloads add; a new
 * attempt (a new random attempt id) gives new positions, and a site refuses to encrypt twice at
 * one (`POSITION_REUSED`).
 */
export function payloadPositionLabel(nonce: MacNonce): string {
  return `update:${nonce.federation}:${nonce.round}:${Buffer.from(nonce.attempt).toString('hex')}`;
}
