// What a receiver must answer a mutant, where that answer depends on nothing but the mutant: the
// fuzzer (test/adversarial/fuzz-live.test.ts) runs the same stateless checks here, with the same
// library functions the receivers run — the transport's chunk checks, `openControl` and the
// intake's member checks, the aggregator's header routing (`routeFrame`), the snapshot header —
// and the live receiver must then refuse (or drop) the mutant with exactly that code. A mutant
// that passes them all meets the receiver's state (the round, the phase, what it already took),
// and only the general property holds for it: refused with a stable code and counted, dropped and
// counted, or accepted.
import { BlockRejectedError, CohortError } from '../../src/errors/index.ts';
import {
  CONTROL_MAX_BYTES,
  type ControlBodies,
  type KeyLookup,
  maxBlockFrameBytes,
  maxManifestFrameBytes,
  openControl,
  RejectionCounters,
} from '../../src/protocol/index.ts';
import { routeFrame } from '../../src/services/aggregator/frame-intake.ts';
import {
  checkChunkCrc,
  checkDeclaredSize,
  FrameFault,
  readChunkHeader,
} from '../../src/transport/chunk-frame.ts';
import { FRAME_HEADERS, Reassembler } from '../../src/transport/index.ts';
import { peekSnapshotHeader } from '../../src/versions/snapshot.ts';
import { controlTypeOf, encodingOf, type FuzzKind, type Mutant, type Template } from './fuzz-mutations.ts';

/** What the oracle needs of the federation. */
export interface OracleContext {
  readonly federation: string;
  /** The registry's keys (every member reads the same). */
  readonly keys: KeyLookup;
  /** `CkksContext.maxCiphertextBytes` (the caps of update frames). */
  readonly maxCiphertextBytes: number;
  /** `codec.maxContributors` (the cap of a partial's manifest). */
  readonly maxContributors: number;
  /** The coordinator's snapshot cap (`maxSnapshotBytes` of the model). */
  readonly snapshotMaxBytes: number;
  /** The model's parameter count (a snapshot must hold exactly these). */
  readonly parameters: number;
}

/** The largest message the receiver's subscription takes for `kind` (`intakeLimits`). */
export function intakeCap(kind: FuzzKind, o: OracleContext): number {
  const block = maxBlockFrameBytes(o.maxCiphertextBytes);
  switch (encodingOf(kind)) {
    case 'control':
      return CONTROL_MAX_BYTES[controlTypeOf(kind)];
    case 'snapshot':
      return o.snapshotMaxBytes;
    default:
      return kind.startsWith('update')
        ? Math.max(block, maxManifestFrameBytes(0))
        : Math.max(block, maxManifestFrameBytes(o.maxContributors));
  }
}

/** The framing headers a mutant travels with, as the receiver reads them (the first of each). */
export function sentHeaders(
  data: Uint8Array,
  mutant: Mutant,
  id: string,
  crc: string,
): Record<string, string> {
  const honest: Record<string, string> = {
    [FRAME_HEADERS.id]: id,
    [FRAME_HEADERS.chunk]: '0/1',
    [FRAME_HEADERS.length]: String(data.length),
    [FRAME_HEADERS.crc]: crc,
  };
  return { ...honest, ...(mutant.headers?.set ?? {}) };
}

/**
 * The transport's verdict on a mutant sent as one chunk with `headers`: `dropped TRANSPORT_<reason>`
 * (reply subject outside the sender's inbox, framing headers, declared size, CRC, reassembly), or
 * undefined when the whole message reaches the handler.
 */
export function transportVerdict(
  subject: string,
  data: Uint8Array,
  mutant: Mutant,
  headers: Record<string, string>,
  cap: number,
): string | undefined {
  // Every reply subject a mutant names lies outside `_INBOX.<F>.<sender>.` (fuzz-mutations.ts).
  if (mutant.reply !== undefined) return 'dropped TRANSPORT_REPLY_REFUSED';
  const get = (name: string) => headers[name] ?? '';
  const h = readChunkHeader(get, data.length);
  if (h instanceof FrameFault) return `dropped TRANSPORT_${h.reason}`;
  const fault = checkDeclaredSize(h, cap) ?? checkChunkCrc(h, data);
  if (fault !== undefined) return `dropped TRANSPORT_${fault.reason}`;
  const r = new Reassembler<undefined>({
    timeoutMs: 60_000,
    maxPending: 64,
    maxPendingBytes: 2 ** 40,
    onDrop: () => undefined,
  });
  try {
    const result = r.accept(subject, { ...h, data });
    if (result.status === 'refused') return `dropped TRANSPORT_${result.fault.reason}`;
    if (result.status === 'pending') return 'held';
    return undefined;
  } finally {
    r.clear();
  }
}

function codeOf(err: unknown): string {
  return err instanceof CohortError ? err.code : 'ERROR';
}

/**
 * The receiver's verdict from its stateless checks, in its order: `refused <CODE>`, or undefined
 * when the mutant passes them (the receiver's state decides). `sender` is the member the subject
 * names (the mutant's own subject; mutants sent elsewhere are not predicted).
 */
export function statelessVerdict(
  kind: FuzzKind,
  template: Template,
  data: Uint8Array,
  o: OracleContext,
): string | undefined {
  const sender = template.sender;
  try {
    switch (encodingOf(kind)) {
      case 'control': {
        const type = controlTypeOf(kind);
        // MemberIntake: the envelope (size, frame, type, signer = the subject's member, key,
        // signature, body), then the body's member and federation; a heartbeat's role.
        const opened = openControl(data, type, o.keys, { signer: sender });
        const body = opened.body as ControlBodies[typeof type] & { member: string; federation: string };
        if (body.member !== sender) return 'refused BLOCK_WRONG_SIGNER';
        if (body.federation !== o.federation) return 'refused BLOCK_WRONG_CONTEXT';
        if (type === 'heartbeat') {
          const role = kind === 'heartbeat' ? 'site' : 'aggregator';
          if ((body as ControlBodies['heartbeat']).role !== role) return 'refused BLOCK_BAD_HEADER';
        }
        return undefined;
      }
      case 'snapshot': {
        // SnapshotIntake: the header's shape, its signer, federation and parameter count.
        const claimed = peekSnapshotHeader(data, { maxBytes: o.snapshotMaxBytes });
        if (claimed.signer !== sender) return 'refused BLOCK_WRONG_SIGNER';
        if (claimed.federation !== o.federation) return 'refused BLOCK_WRONG_CONTEXT';
        if (claimed.parameterCount !== o.parameters) return 'refused BLOCK_WRONG_CONTEXT';
        return undefined;
      }
      default: {
        if (kind.startsWith('partial')) return undefined; // the coordinator's round state comes first
        // An aggregator's intake: subject, frame kind, size, frame header, signer = sender.
        const t = template.subject.split('.');
        const prefix = `${t.slice(0, -1).join('.')}.`;
        const block = maxBlockFrameBytes(o.maxCiphertextBytes);
        const manifest = maxManifestFrameBytes(kind.startsWith('update') ? 0 : o.maxContributors);
        routeFrame(
          new RejectionCounters(),
          { subject: template.subject, data, headers: {}, messageId: 'oracle', expectsReply: true },
          prefix,
          { block, manifest },
        );
        return undefined;
      }
    }
  } catch (err) {
    return `refused ${err instanceof BlockRejectedError ? err.code : codeOf(err)}`;
  }
}
