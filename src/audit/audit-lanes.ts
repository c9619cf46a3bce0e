import {
  type CkksParams,
  ckksParamsId,
  getCkksContext,
  PlainLaneContext,
  plainLanesId,
} from '../../crypto/ckks/index.ts';
import { bytesEqual } from '../../crypto/digest/index.ts';
import type { LaneContext } from '../../crypto/lanes/index.ts';
import {
  DEFAULT_THRESHOLD_PARAMS,
  getThresholdContext,
  ThresholdLaneContext,
  thresholdParamsId,
} from '../../crypto/threshold/index.ts';

/**
 * The slot cipher a logged block names by its parameters id, among what the auditor knows: the
 * configuration's CKKS parameters (`he` with a shared key), their plain slot format (`plain`), and
 * threshold CKKS's parameters, which are fixed and public. Undefined for an id none of them has.
 * Re-adding needs no key under any of them: the auditor sums ciphertexts it cannot read.
 */
export async function auditLanes(
  known: readonly CkksParams[],
  id: Uint8Array,
): Promise<LaneContext | undefined> {
  const plain = known.find((p) => bytesEqual(plainLanesId(p), id));
  if (plain !== undefined) return new PlainLaneContext(plain);
  const params = known.find((p) => bytesEqual(ckksParamsId(p), id));
  if (params !== undefined) return getCkksContext(params);
  if (bytesEqual(thresholdParamsId(DEFAULT_THRESHOLD_PARAMS), id)) {
    return new ThresholdLaneContext(await getThresholdContext(DEFAULT_THRESHOLD_PARAMS));
  }
  return undefined;
}
