import { BLOCK_REJECT_REASONS } from '../errors/index.ts';
import { TRANSPORT_DROP_REASONS } from '../transport/index.ts';

/**
 * `CohortError` codes other than `BLOCK_*` that the coordinator counts when it refuses a member's
 * message or an operator request (a closed round, a failed partial, a vote or decryption shares
 * out of time, a refused rollback or registry change, a request during shutdown, a malformed
 * argument), and `ERROR` for anything that is not a `CohortError`.
 */
export const COORDINATOR_REFUSAL_CODES = Object.freeze([
  'ROUND_CLOSED',
  'PARTIAL_FAILED',
  'VOTE_REFUSED',
  'SHARES_REFUSED',
  'ROLLBACK_REFUSED',
  'REGISTRY_CHANGE_REFUSED',
  'STOPPED',
  'INVALID_ARGUMENT',
  'ERROR',
] as const);

/** The label a code outside every known set is counted under (codes are stable, but new ones may come). */
export const OTHER_REASON = 'OTHER';

const BLOCK = new Set<string>(BLOCK_REJECT_REASONS);
const TRANSPORT = new Set<string>(TRANSPORT_DROP_REASONS);
const CODES = new Set<string>(COORDINATOR_REFUSAL_CODES);

/**
 * Every `reason` label of `cohort_blocks_rejected_total`, each created at 0: the block reject
 * reasons (bare, as `BLOCK_REJECT_REASONS` names them), the coordinator's other refusal codes,
 * the transport drop reasons prefixed `TRANSPORT_`, and {@link OTHER_REASON}.
 */
export const REJECT_REASON_LABELS: readonly string[] = Object.freeze([
  ...BLOCK_REJECT_REASONS,
  ...COORDINATOR_REFUSAL_CODES,
  ...TRANSPORT_DROP_REASONS.map((r) => `TRANSPORT_${r}`),
  OTHER_REASON,
]);

/**
 * The label of a counted refusal: a `BlockRejectedError` code (`BLOCK_BAD_SIGNATURE`) or its bare
 * reason (`BAD_SIGNATURE`, as `RejectionCounters` keeps it) gives the bare reason; a transport drop
 * reason, bare or prefixed, gives `TRANSPORT_<reason>`; a known coordinator code stays as it is;
 * anything else is {@link OTHER_REASON}, so no free text ever becomes a label.
 */
export function rejectReasonLabel(code: string, transport = false): string {
  if (transport) return TRANSPORT.has(code) ? `TRANSPORT_${code}` : OTHER_REASON;
  if (code.startsWith('BLOCK_') && BLOCK.has(code.slice(6))) return code.slice(6);
  if (BLOCK.has(code) || CODES.has(code)) return code;
  if (code.startsWith('TRANSPORT_') && TRANSPORT.has(code.slice(10))) return code;
  return OTHER_REASON;
}

/**
 * Sums counts keyed by code into counts keyed by label ({@link rejectReasonLabel}); every label
 * of {@link REJECT_REASON_LABELS} is present.
 */
export function countsByLabel(
  byCode: Readonly<Record<string, number>>,
  transport = false,
): Map<string, number> {
  const out = new Map<string, number>(REJECT_REASON_LABELS.map((l) => [l, 0]));
  for (const [code, n] of Object.entries(byCode)) {
    if (!Number.isFinite(n) || n <= 0) continue;
    const label = rejectReasonLabel(code, transport);
    out.set(label, (out.get(label) ?? 0) + n);
  }
  return out;
}
