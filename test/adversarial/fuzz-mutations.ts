// Structure-aware mutations of the messages a member may send (test/adversarial/fuzz-live.test.ts).
//
// A mutation starts from a valid message a member really sent (a template), decodes it by its
// structure — the 12-byte wire frame, the SignedEnvelope and its body for control messages, the
// ParameterBlock or UpdateManifest for updates and partials, the snapshot frame and its canonical
// header — changes one thing drawn by fast-check, encodes it again and either keeps the old
// signature or signs the changed message with the sender's own key (a valid signature on a bad
// body: derived fields the mutation did not target, CRC32s, the contributors digest and the
// Merkle root, are recomputed first). Fields are found by reflection on cohort.proto, so a field
// added to a message is fuzzed without a change here. Transport headers (`Cohort-*`), other NATS
// headers, the reply subject and the subject itself are mutated on the wire.
import fc from 'fast-check';
import protobuf from 'protobufjs';
import { chunkCrc32s, merkleRootFromProof, sha256 } from '../../crypto/digest/index.ts';
import { type SigningKeyPair, sign } from '../../crypto/signature/index.ts';
import {
  blockLeaf,
  contributorsDigest,
  controlDomain,
  decodeBlockBody,
  decodeManifestBody,
  FRAME_KIND,
  frame,
  PROTO_PATH,
  updateSignatureDomain,
  updateStatement,
} from '../../src/protocol/index.ts';
import { SNAPSHOT_SIGNING_DOMAIN } from '../../src/versions/snapshot.ts';
import {
  appendCiphertextDigest,
  decodeSnapshotHeader,
  encodeSnapshotHeaderFields,
  type SnapshotHeader,
} from '../../src/versions/snapshot-header.ts';

/** Every kind of message a site or an aggregator may send, as the fuzzer names them. */
export const FUZZ_KINDS = [
  'heartbeat',
  'update-block',
  'update-manifest',
  'vote',
  'switched',
  'snapshot',
  'aggregator-heartbeat',
  'partial-block',
  'partial-manifest',
  'subpartial-block',
  'subpartial-manifest',
] as const;
export type FuzzKind = (typeof FUZZ_KINDS)[number];

/** How a kind is encoded: a control message of a type, a ParameterBlock, an UpdateManifest, a snapshot. */
export type Encoding = 'control' | 'block' | 'manifest' | 'snapshot';

export function encodingOf(kind: FuzzKind): Encoding {
  if (kind === 'snapshot') return 'snapshot';
  if (kind.endsWith('-block')) return 'block';
  if (kind.endsWith('-manifest')) return 'manifest';
  return 'control';
}

/** The control type of a control kind. */
export function controlTypeOf(kind: FuzzKind): 'heartbeat' | 'vote' | 'switched' {
  if (kind === 'vote' || kind === 'switched') return kind;
  return 'heartbeat';
}

/** A message a member really sent: what a mutation starts from. */
export interface Template {
  readonly kind: FuzzKind;
  /** The member that sent it (whose credentials and key the mutant uses). */
  readonly sender: string;
  readonly subject: string;
  readonly data: Uint8Array;
  /** When it was sent (ms since the epoch). */
  readonly at: number;
}

// ---- the plan fast-check draws ---------------------------------------------------------------

/** Where a mutation acts. */
export const LAYERS = ['body', 'wire', 'frame', 'envelope', 'transport', 'reply', 'subject'] as const;
export type Layer = (typeof LAYERS)[number];

/** Numbers at the edges of what each field type holds (unsigned fields take −1 as their maximum). */
export const EDGE_NUMBERS = [
  0,
  -1,
  1,
  2 ** 31 - 1,
  2 ** 32 - 1,
  2 ** 32,
  2 ** 53,
  2 ** 53 + 2,
  -(2 ** 53),
  1e300,
  -1e300,
  Number.NaN,
  Number.POSITIVE_INFINITY,
  Number.NEGATIVE_INFINITY,
  0.5,
  -0,
  'u64max',
] as const;
export type EdgeNumber = (typeof EDGE_NUMBERS)[number];

/** A string field's new value: another member's id, empty, long, or odd characters. */
export type StringValue =
  | { readonly t: 'member'; readonly i: number }
  | { readonly t: 'empty' }
  | { readonly t: 'long'; readonly n: number }
  | { readonly t: 'text'; readonly s: string };

/** What happens to a byte field. */
export type BytesOp =
  | { readonly t: 'truncate'; readonly keep: number }
  | { readonly t: 'extend'; readonly by: number }
  | { readonly t: 'flip'; readonly at: number; readonly bit: number }
  | { readonly t: 'other-round' }
  | { readonly t: 'empty' }
  | { readonly t: 'random'; readonly seed: number };

/** What happens to a repeated field. */
export type RepeatedOp =
  | { readonly t: 'drop'; readonly i: number }
  | { readonly t: 'duplicate'; readonly i: number }
  | { readonly t: 'reorder'; readonly seed: number }
  | { readonly t: 'clear' }
  | { readonly t: 'element' };

/** Transport framing headers as the mutant sends them (undefined: the honest value). */
export interface HeaderPlan {
  readonly which: 'id' | 'chunk' | 'length' | 'crc' | 'nats';
  readonly variant: number;
}

/** One mutation, as fast-check draws it; applied to whatever template the live federation offers. */
export interface FuzzPlan {
  readonly layer: Layer;
  /** Chooses the field (modulo the fields the template has). */
  readonly field: number;
  /** Chooses an operation within the layer. */
  readonly op: number;
  readonly number: EdgeNumber;
  readonly string: StringValue;
  readonly bytes: BytesOp;
  readonly repeated: RepeatedOp;
  readonly header: HeaderPlan;
  /** Re-sign with the sender's own key after the change, or keep the old signature. */
  readonly seal: 'resign' | 'keep';
  /** Go out before the original (waiting a while for a fresh one, if need be) or after it. */
  readonly order: 'before' | 'after';
}

const stringValue: fc.Arbitrary<StringValue> = fc.oneof(
  fc.record({ t: fc.constant('member' as const), i: fc.nat(31) }),
  fc.constant({ t: 'empty' as const }),
  fc.record({ t: fc.constant('long' as const), n: fc.constantFrom(129, 256, 4096, 20_000) }),
  fc.record({
    t: fc.constant('text' as const),
    s: fc.oneof(
      fc.constantFrom('*', '>', 'site-1.x', ' ', '\u0000', 'é', '𝄞', '%s', 'COHB'),
      fc.string({ maxLength: 12 }),
    ),
  }),
);

const bytesOp: fc.Arbitrary<BytesOp> = fc.oneof(
  fc.record({ t: fc.constant('truncate' as const), keep: fc.nat(64) }),
  fc.record({ t: fc.constant('extend' as const), by: fc.integer({ min: 1, max: 64 }) }),
  fc.record({ t: fc.constant('flip' as const), at: fc.nat(), bit: fc.integer({ min: 0, max: 7 }) }),
  fc.constant({ t: 'other-round' as const }),
  fc.constant({ t: 'empty' as const }),
  fc.record({ t: fc.constant('random' as const), seed: fc.nat() }),
);

const repeatedOp: fc.Arbitrary<RepeatedOp> = fc.oneof(
  fc.record({ t: fc.constant('drop' as const), i: fc.nat() }),
  fc.record({ t: fc.constant('duplicate' as const), i: fc.nat() }),
  fc.record({ t: fc.constant('reorder' as const), seed: fc.nat() }),
  fc.constant({ t: 'clear' as const }),
  fc.constant({ t: 'element' as const }),
);

/** The fast-check arbitrary of one mutation: the body most often, every other layer too. */
export const fuzzPlan: fc.Arbitrary<FuzzPlan> = fc.record({
  layer: fc.oneof(
    { weight: 10, arbitrary: fc.constant('body' as const) },
    { weight: 2, arbitrary: fc.constant('wire' as const) },
    { weight: 2, arbitrary: fc.constant('frame' as const) },
    { weight: 2, arbitrary: fc.constant('envelope' as const) },
    { weight: 3, arbitrary: fc.constant('transport' as const) },
    { weight: 1, arbitrary: fc.constant('reply' as const) },
    { weight: 1, arbitrary: fc.constant('subject' as const) },
  ),
  field: fc.nat(),
  op: fc.nat(),
  number: fc.constantFrom(...EDGE_NUMBERS),
  string: stringValue,
  bytes: bytesOp,
  repeated: repeatedOp,
  header: fc.record({
    which: fc.constantFrom('id', 'chunk', 'length', 'crc', 'nats'),
    variant: fc.nat(),
  }),
  seal: fc.constantFrom('resign', 'keep'),
  order: fc.constantFrom('before', 'after'),
});

// ---- mutation classes (the rows of the summary) -------------------------------------------------

/** The class a mutation falls in, as docs/security.md's summary names it. */
export type MutationClass =
  | 'numbers at edges'
  | 'strings (other members’ ids, empty, long, odd characters)'
  | 'byte fields (truncated, extended, flipped, emptied, random, another round’s)'
  | 'repeated fields (dropped, duplicated, reordered, cleared)'
  | 'booleans flipped, sub-messages cleared'
  | 'protobuf wire (unknown, repeated or mistyped fields, cut short)'
  | 'wire frame (magic, version, kind, reserved, length, truncated, trailing)'
  | 'envelope and signature fields'
  | 'transport headers (`Cohort-Id`, `Cohort-Chunk`, `Cohort-Length`, `Cohort-Crc`)'
  | 'NATS headers (`Nats-Msg-Id`, `Nats-Rollup`, `Nats-Expected-*`, spoofed `Cohort-Error`, repeated)'
  | 'reply subject (another inbox, JetStream API, service subjects)'
  | 'subject (another member’s, another kind’s)';

/** A mutated message, ready to send. */
export interface Mutant {
  readonly data: Uint8Array;
  readonly class: MutationClass;
  /** What was changed, in words (for a failing run's report). */
  readonly what: string;
  /** Whether it carries a signature the sender made over the changed message. */
  readonly resigned: boolean;
  /** Framing headers to send instead of the honest ones (transport layer). */
  readonly headers?: { readonly set: Readonly<Record<string, string>>; readonly extra: [string, string][] };
  /** Reply subject to publish with (reply layer): no reply is awaited. */
  readonly reply?: string;
  /** Subject to send on instead of the template's (subject layer). */
  readonly subject?: string;
  /**
   * The plan could not be applied as drawn (it left the message as it was, or could not be
   * encoded): a byte of the template was flipped instead, where its length puts it.
   */
  readonly substituted?: boolean;
}

/** What a mutation needs besides the template and the plan. */
export interface MutationContext {
  readonly federation: string;
  /** The sender's own signing key (a hostile member signs with its own key, nothing else). */
  readonly signing: SigningKeyPair;
  /** Every member id of the federation (string values pick from them). */
  readonly members: readonly string[];
  /** Earlier templates of the same kind (other rounds), newest last. */
  readonly history: readonly Template[];
  /** The log stream and the contributions stream (reply subjects aimed at the JetStream API). */
  readonly logStream: string;
  readonly contributionsStream: string;
}

// ---- protobuf reflection ----------------------------------------------------------------------

const root = protobuf.loadSync(PROTO_PATH);
const ENVELOPE = root.lookupType('cohort.v1.SignedEnvelope');
const BODY_TYPES: Record<'heartbeat' | 'vote' | 'switched', protobuf.Type> = {
  heartbeat: root.lookupType('cohort.v1.Heartbeat'),
  vote: root.lookupType('cohort.v1.Vote'),
  switched: root.lookupType('cohort.v1.Switched'),
};
const BLOCK = root.lookupType('cohort.v1.ParameterBlock');
const MANIFEST = root.lookupType('cohort.v1.UpdateManifest');
root.resolveAll();

type Msg = Record<string, unknown>;

/** One field of a decoded message (possibly nested): where it lives and its reflection. */
interface FieldRef {
  readonly path: string;
  readonly owner: Msg;
  readonly field: protobuf.Field;
}

function fieldsOf(type: protobuf.Type, msg: Msg, prefix = '', out: FieldRef[] = []): FieldRef[] {
  for (const field of type.fieldsArray) {
    out.push({ path: `${prefix}${field.name}`, owner: msg, field });
    const sub = field.resolvedType;
    if (!(sub instanceof protobuf.Type)) continue;
    const value = msg[field.name];
    if (field.repeated) {
      // The first element only: every template of a kind then offers the same fields.
      const first = (value as Msg[] | undefined)?.[0];
      if (first !== undefined) fieldsOf(sub, first, `${prefix}${field.name}[0].`, out);
    } else if (value !== null && value !== undefined) {
      fieldsOf(sub, value as Msg, `${prefix}${field.name}.`, out);
    }
  }
  return out;
}

const NUMERIC = new Set([
  'double',
  'float',
  'int32',
  'uint32',
  'sint32',
  'fixed32',
  'sfixed32',
  'int64',
  'uint64',
  'sint64',
  'fixed64',
  'sfixed64',
]);
const WIDE = new Set(['int64', 'uint64', 'sint64', 'fixed64', 'sfixed64']);

/** A 64-bit value as protobufjs writes it (`{low, high}` is taken as raw bits). */
function edgeValue(type: string, n: EdgeNumber): unknown {
  if (n === 'u64max') return WIDE.has(type) ? { low: 0xffffffff, high: 0xffffffff } : 0xffffffff;
  return n;
}

function stringOf(v: StringValue, ctx: MutationContext): string {
  switch (v.t) {
    case 'member':
      return ctx.members[v.i % ctx.members.length] ?? '';
    case 'empty':
      return '';
    case 'long':
      return 'x'.repeat(v.n);
    case 'text':
      return v.s;
  }
}

/** A small deterministic generator (a mutation must not depend on Math.random). */
function stream(seed: number): () => number {
  let s = seed >>> 0 || 1;
  return () => {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    return (s >>> 0) / 2 ** 32;
  };
}

function bytesAfter(op: BytesOp, old: Uint8Array, other: Uint8Array | undefined): Uint8Array {
  switch (op.t) {
    case 'truncate':
      return old.slice(0, Math.min(op.keep, Math.max(0, old.length - 1)));
    case 'extend': {
      const out = new Uint8Array(old.length + op.by);
      out.set(old);
      out.fill(0xa5, old.length);
      return out;
    }
    case 'flip': {
      if (old.length === 0) return Uint8Array.of(1 << op.bit);
      const out = old.slice();
      out[op.at % out.length]! ^= 1 << op.bit;
      return out;
    }
    case 'other-round':
      if (other !== undefined && !equal(other, old)) return other.slice();
      return bytesAfter({ t: 'flip', at: 0, bit: 0 }, old, undefined);
    case 'empty':
      return old.length === 0 ? Uint8Array.of(0) : new Uint8Array(0);
    case 'random': {
      const next = stream(op.seed);
      return Uint8Array.from({ length: Math.max(1, old.length) }, () => Math.floor(next() * 256));
    }
  }
}

function equal(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

/** The same field of an earlier template's decoded message (`other round's`), if any. */
function otherValue(path: string, others: readonly Msg[]): unknown {
  for (const o of [...others].reverse()) {
    let v: unknown = o;
    for (const part of path.split('.')) {
      const m = /^(\w+)(?:\[(\d+)\])?$/.exec(part);
      if (m === null || v === null || typeof v !== 'object') return undefined;
      v = (v as Msg)[m[1]!];
      if (m[2] !== undefined) v = (v as unknown[] | undefined)?.[Number(m[2])];
    }
    if (v !== undefined) return v;
  }
  return undefined;
}

/**
 * Changes one field of `msg` (decoded with `type`) as `plan` says, in place; returns the class
 * and the field's path. Repeated fields may be dropped, duplicated, reordered or cleared, or have
 * one element changed; scalars by type.
 */
function mutateField(
  type: protobuf.Type,
  msg: Msg,
  plan: FuzzPlan,
  ctx: MutationContext,
  others: readonly Msg[],
): { class: MutationClass; what: string; path: string } {
  const fields = fieldsOf(type, msg);
  const ref = fields[plan.field % fields.length]!;
  const { field, owner, path } = ref;
  const name = field.name;
  if (field.repeated) {
    const list = [...((owner[name] as unknown[] | undefined) ?? [])];
    const op = plan.repeated;
    if (op.t !== 'element' || list.length === 0) {
      const i = list.length === 0 ? 0 : 'i' in op ? op.i % list.length : 0;
      let what: string;
      if (op.t === 'drop' && list.length > 0) {
        list.splice(i, 1);
        what = `${path}: element ${i} dropped`;
      } else if (op.t === 'reorder' && list.length > 1) {
        const next = stream(op.seed);
        for (let k = list.length - 1; k > 0; k--) {
          const j = Math.floor(next() * (k + 1));
          [list[k], list[j]] = [list[j], list[k]];
        }
        if (list.every((x, k) => x === (owner[name] as unknown[])[k])) list.reverse();
        what = `${path}: reordered`;
      } else if (op.t === 'clear' && list.length > 0) {
        list.length = 0;
        what = `${path}: cleared`;
      } else {
        // duplicate (also what an empty list or a one-element reorder becomes)
        const sub = field.resolvedType;
        const extra =
          list.length > 0
            ? list[i]
            : sub instanceof protobuf.Type
              ? sub.create({})
              : field.type === 'bytes'
                ? new Uint8Array(32)
                : field.type === 'string'
                  ? stringOf(plan.string, ctx)
                  : 0;
        list.splice(i, 0, extra);
        what = `${path}: element ${i} duplicated`;
      }
      owner[name] = list;
      return { class: 'repeated fields (dropped, duplicated, reordered, cleared)', what, path };
    }
    // One element changed, as a scalar of the field's type.
    const i = plan.field % list.length;
    const value = scalarAfter(field, list[i], plan, ctx, otherValue(`${path}[${i}]`, others));
    list[i] = value.value;
    owner[name] = list;
    return { class: value.class, what: `${path}[${i}]: ${value.what}`, path };
  }
  const value = scalarAfter(field, owner[name], plan, ctx, otherValue(path, others));
  owner[name] = value.value;
  return { class: value.class, what: `${path}: ${value.what}`, path };
}

function scalarAfter(
  field: protobuf.Field,
  old: unknown,
  plan: FuzzPlan,
  ctx: MutationContext,
  other: unknown,
): { value: unknown; class: MutationClass; what: string } {
  const sub = field.resolvedType;
  if (sub instanceof protobuf.Type) {
    return old === null || old === undefined
      ? { value: sub.create({}), class: 'booleans flipped, sub-messages cleared', what: 'set empty' }
      : { value: null, class: 'booleans flipped, sub-messages cleared', what: 'cleared' };
  }
  if (field.type === 'bool') {
    return { value: !old, class: 'booleans flipped, sub-messages cleared', what: `${String(!old)}` };
  }
  if (field.type === 'string') {
    let s = stringOf(plan.string, ctx);
    if (s === old) s = `${s}x`;
    return {
      value: s,
      class: 'strings (other members’ ids, empty, long, odd characters)',
      what: JSON.stringify(s.length > 40 ? `${s.slice(0, 20)}… (${s.length})` : s),
    };
  }
  if (field.type === 'bytes') {
    const before = old instanceof Uint8Array ? old : new Uint8Array(0);
    const value = bytesAfter(plan.bytes, before, other instanceof Uint8Array ? other : undefined);
    return {
      value,
      class: 'byte fields (truncated, extended, flipped, emptied, random, another round’s)',
      what: `${plan.bytes.t} (${before.length} → ${value.length} bytes)`,
    };
  }
  if (NUMERIC.has(field.type)) {
    return {
      value: edgeValue(field.type, plan.number),
      class: 'numbers at edges',
      what: `${String(plan.number)} (${field.type})`,
    };
  }
  // An enum: an unknown value.
  return { value: 1000 + (plan.field % 7), class: 'numbers at edges', what: 'unknown enum value' };
}

// ---- the protobuf wire (tags and varints written by hand) --------------------------------------

function appendBytes(a: Uint8Array, b: Uint8Array): Uint8Array {
  const out = new Uint8Array(a.length + b.length);
  out.set(a);
  out.set(b, a.length);
  return out;
}

/** Changes a protobuf body below the schema: unknown, repeated or mistyped fields, or cut short. */
function mutateWire(
  type: protobuf.Type,
  body: Uint8Array,
  plan: FuzzPlan,
): { body: Uint8Array; what: string } {
  const w = protobuf.Writer.create();
  const fields = type.fieldsArray;
  const field = fields[plan.field % fields.length]!;
  switch (plan.op % 5) {
    case 0: // an unknown field, a varint
      w.uint32(((1000 + (plan.field % 500)) << 3) | 0).uint64(plan.field);
      return { body: appendBytes(body, w.finish()), what: 'unknown field appended' };
    case 1: // the same field again with another value (last wins, or one more element)
      if (field.type === 'string' || field.type === 'bytes' || field.resolvedType instanceof protobuf.Type) {
        w.uint32((field.id << 3) | 2).bytes(new Uint8Array(plan.op % 40));
      } else if (field.type === 'double' || field.type === 'fixed64' || field.type === 'sfixed64') {
        w.uint32((field.id << 3) | 1).double(Number.NaN);
      } else if (field.type === 'float' || field.type === 'fixed32' || field.type === 'sfixed32') {
        w.uint32((field.id << 3) | 5).float(Number.POSITIVE_INFINITY);
      } else {
        w.uint32((field.id << 3) | 0).uint64(plan.field);
      }
      return { body: appendBytes(body, w.finish()), what: `${field.name} repeated on the wire` };
    case 2: // a known field with the wrong wire type
      w.uint32((field.id << 3) | (field.type === 'string' || field.type === 'bytes' ? 0 : 2)).uint32(3);
      return { body: appendBytes(body, w.finish()), what: `${field.name} with another wire type` };
    case 3: // a length prefix running past the end
      w.uint32((field.id << 3) | 2).uint32(1_000_000);
      return { body: appendBytes(body, w.finish()), what: `${field.name} declared longer than the body` };
    default: // cut short
      return {
        body: body.slice(0, Math.max(0, body.length - 1 - (plan.field % Math.max(1, body.length)))),
        what: 'body cut short',
      };
  }
}

/** Damages the 12-byte wire frame around a body. */
function mutateFrame(framed: Uint8Array, plan: FuzzPlan): { data: Uint8Array; what: string } {
  const out = framed.slice();
  const view = new DataView(out.buffer);
  switch (plan.op % 8) {
    case 0:
      out[plan.field % 4]! ^= 0x20;
      return { data: out, what: 'magic' };
    case 1:
      out[4] = 2 + (plan.field % 250);
      return { data: out, what: `version ${out[4]}` };
    case 2: {
      const kinds = [0, 1, 2, 3, 4, 255].filter((k) => k !== framed[5]);
      out[5] = kinds[plan.field % kinds.length]!;
      return { data: out, what: `kind ${out[5]}` };
    }
    case 3:
      out[6 + (plan.field % 2)] = 1 + (plan.field % 255);
      return { data: out, what: 'reserved bytes' };
    case 4: {
      const declared = view.getUint32(8, false);
      const lengths = [declared + 1, declared - 1, 0, 0xffffffff, 64 * 1024 * 1024 + 1];
      view.setUint32(8, lengths[plan.field % lengths.length]! >>> 0, false);
      return { data: out, what: `declared length ${view.getUint32(8, false)}` };
    }
    case 5:
      return { data: framed.slice(0, plan.field % Math.max(1, framed.length)), what: 'frame truncated' };
    case 6:
      return { data: appendBytes(framed, new Uint8Array(1 + (plan.field % 16))), what: 'trailing bytes' };
    default:
      return { data: new Uint8Array(0), what: 'empty message' };
  }
}

// ---- control messages ---------------------------------------------------------------------------

function mutateControl(t: Template, plan: FuzzPlan, ctx: MutationContext): Mutant | undefined {
  const type = controlTypeOf(t.kind);
  const bodyType = BODY_TYPES[type];
  const env = ENVELOPE.decode(t.data.subarray(12)) as unknown as Msg;
  /** Signs the body under the domain of the envelope's type; false when that type names none. */
  const resign = (e: Msg): boolean => {
    const envType = typeof e['type'] === 'string' ? (e['type'] as string) : type;
    try {
      e['signature'] = sign(ctx.signing, controlDomain(envType as 'heartbeat'), e['body'] as Uint8Array);
      return true;
    } catch {
      return false; // a type no signing domain can name: the old signature stays
    }
  };
  const out = (e: Msg, what: string, cls: MutationClass, resigned: boolean): Mutant => ({
    data: frame(FRAME_KIND.control, ENVELOPE.encode(e as unknown as protobuf.Message).finish()),
    class: cls,
    what,
    resigned,
  });
  const others = ctx.history.map((h) => {
    const e = ENVELOPE.decode(h.data.subarray(12)) as unknown as Msg;
    return bodyType.decode(e['body'] as Uint8Array) as unknown as Msg;
  });
  switch (plan.layer) {
    case 'body': {
      const body = bodyType.decode(env['body'] as Uint8Array) as unknown as Msg;
      const m = mutateField(bodyType, body, plan, ctx, others);
      env['body'] = bodyType.encode(body as unknown as protobuf.Message).finish();
      return out(env, m.what, m.class, plan.seal === 'resign' && resign(env));
    }
    case 'wire': {
      const m = mutateWire(bodyType, env['body'] as Uint8Array, plan);
      env['body'] = m.body;
      const resigned = plan.seal === 'resign' && resign(env);
      return out(env, m.what, 'protobuf wire (unknown, repeated or mistyped fields, cut short)', resigned);
    }
    case 'envelope': {
      const envOthers = ctx.history.map((h) => ENVELOPE.decode(h.data.subarray(12)) as unknown as Msg);
      const m = mutateField(ENVELOPE, env, plan, ctx, envOthers);
      const resigned =
        plan.seal === 'resign' && m.path !== 'signature' && env['body'] instanceof Uint8Array && resign(env);
      return out(env, m.what, 'envelope and signature fields', resigned);
    }
    case 'frame': {
      const m = mutateFrame(t.data, plan);
      return {
        data: m.data,
        class: 'wire frame (magic, version, kind, reserved, length, truncated, trailing)',
        what: m.what,
        resigned: false,
      };
    }
    default:
      return undefined;
  }
}

// ---- blocks and manifests -------------------------------------------------------------------------

/** Recomputes what the mutation did not target, then signs the update statement with the sender's key. */
function resignUpdate(kind: 'block' | 'manifest', msg: Msg, ctx: MutationContext, targeted: string): boolean {
  const type = kind === 'block' ? BLOCK : MANIFEST;
  try {
    if (kind === 'block') {
      const ct = msg['ciphertext'];
      const chunk = Number(msg['crcChunkBytes'] ?? 0);
      if (!targeted.startsWith('crc32') && ct instanceof Uint8Array && chunk >= 1 && chunk <= 1 << 30) {
        msg['crc32'] = chunkCrc32s(ct, chunk);
      }
      const b = decodeBlockBody(type.encode(msg as unknown as protobuf.Message).finish());
      const root = merkleRootFromProof(blockLeaf(b, b.ciphertext), b.blockIndex, b.blockCount, b.merklePath);
      if (root === undefined || targeted.startsWith('latticeSignature')) return false;
      msg['latticeSignature'] = sign(ctx.signing, updateSignatureDomain(b), updateStatement(b, root));
      return true;
    }
    const list = (msg['contributorList'] as Msg[] | undefined) ?? [];
    if (!targeted.startsWith('contributorsDigest') && list.length > 0) {
      const typed = decodeManifestBody(type.encode(msg as unknown as protobuf.Message).finish());
      msg['contributorsDigest'] = contributorsDigest(typed.contributorList);
    }
    const m = decodeManifestBody(type.encode(msg as unknown as protobuf.Message).finish());
    if (targeted === 'signature') return false;
    msg['signature'] = sign(ctx.signing, updateSignatureDomain(m), updateStatement(m, m.updateDigest));
    return true;
  } catch {
    return false; // a header that does not decode (a 64-bit value past 2^53): the old signature stays
  }
}

function mutateUpdate(t: Template, plan: FuzzPlan, ctx: MutationContext): Mutant | undefined {
  const kind = encodingOf(t.kind) as 'block' | 'manifest';
  const type = kind === 'block' ? BLOCK : MANIFEST;
  const frameKind = kind === 'block' ? FRAME_KIND.block : FRAME_KIND.manifest;
  const body = t.data.subarray(12);
  const others = ctx.history.map((h) => type.decode(h.data.subarray(12)) as unknown as Msg);
  switch (plan.layer) {
    case 'body':
    case 'envelope': {
      const msg = type.decode(body) as unknown as Msg;
      const m = mutateField(type, msg, plan, ctx, others);
      const resigned = plan.seal === 'resign' && resignUpdate(kind, msg, ctx, m.path);
      return {
        data: frame(frameKind, type.encode(msg as unknown as protobuf.Message).finish()),
        class: m.class,
        what: m.what,
        resigned,
      };
    }
    case 'wire': {
      const m = mutateWire(type, body, plan);
      return {
        data: frame(frameKind, m.body),
        class: 'protobuf wire (unknown, repeated or mistyped fields, cut short)',
        what: m.what,
        resigned: false,
      };
    }
    case 'frame': {
      const m = mutateFrame(t.data, plan);
      return {
        data: m.data,
        class: 'wire frame (magic, version, kind, reserved, length, truncated, trailing)',
        what: m.what,
        resigned: false,
      };
    }
    default:
      return undefined;
  }
}

// ---- snapshots --------------------------------------------------------------------------------

interface SnapshotParts {
  readonly header: Uint8Array;
  readonly signature: Uint8Array;
  readonly sealed: Uint8Array;
}

function snapshotParts(data: Uint8Array): SnapshotParts {
  const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
  const headerLength = view.getUint32(8, false);
  const at = 12 + headerLength;
  const sigLength = view.getUint32(at, false);
  return {
    header: data.subarray(12, at),
    signature: data.subarray(at + 4, at + 4 + sigLength),
    sealed: data.subarray(at + 4 + sigLength),
  };
}

function snapshotBytes(p: SnapshotParts, prefix?: Uint8Array): Uint8Array {
  const head = prefix?.slice() ?? new Uint8Array(12);
  if (prefix === undefined) {
    head.set(new TextEncoder().encode('COHS'), 0);
    head[4] = 1;
  }
  new DataView(head.buffer).setUint32(8, p.header.length, false);
  const sigLength = new Uint8Array(4);
  new DataView(sigLength.buffer).setUint32(0, p.signature.length, false);
  return Uint8Array.from(Buffer.concat([head, p.header, sigLength, p.signature, p.sealed]));
}

const SNAPSHOT_FIELDS: readonly (keyof SnapshotHeader)[] = [
  'federation',
  'commitHash',
  'height',
  'round',
  'kind',
  'modelHash',
  'stateHash',
  'logSequence',
  'parameterCount',
  'signer',
  'signerKeyId',
  'signatureAlgorithm',
  'nonce',
  'ciphertextLength',
  'ciphertextDigest',
];

function mutateSnapshot(t: Template, plan: FuzzPlan, ctx: MutationContext): Mutant | undefined {
  const parts = snapshotParts(t.data);
  const resign = (header: Uint8Array) =>
    plan.seal === 'resign' ? sign(ctx.signing, SNAPSHOT_SIGNING_DOMAIN, header) : parts.signature;
  switch (plan.layer) {
    case 'body': {
      // One field of the canonical header, re-encoded (the writer refuses what it cannot write:
      // then the field's bytes are changed in place instead).
      const { header } = decodeSnapshotHeader(parts.header);
      const name = SNAPSHOT_FIELDS[plan.field % SNAPSHOT_FIELDS.length]!;
      const old = header[name];
      let value: unknown;
      let cls: MutationClass;
      let what: string;
      if (old instanceof Uint8Array) {
        const other = ctx.history.length > 0 ? snapshotHeaderOf(ctx.history.at(-1)!)?.[name] : undefined;
        value = bytesAfter(plan.bytes, old, other instanceof Uint8Array ? other : undefined);
        cls = 'byte fields (truncated, extended, flipped, emptied, random, another round’s)';
        what = `${name}: ${plan.bytes.t}`;
      } else if (typeof old === 'number') {
        value = plan.number === 'u64max' ? 2 ** 64 - 1 : plan.number;
        cls = 'numbers at edges';
        what = `${name}: ${String(plan.number)}`;
      } else {
        const choices =
          name === 'kind'
            ? ['genesis', 'round', 'rollback', 'statistics']
            : name === 'signatureAlgorithm'
              ? ['falcon-512', 'ml-dsa-65']
              : [stringOf(plan.string, ctx)];
        value = choices.filter((c) => c !== old)[plan.op % Math.max(1, choices.length - 1)] ?? 'x';
        cls = 'strings (other members’ ids, empty, long, odd characters)';
        what = `${name}: ${JSON.stringify(String(value).slice(0, 40))}`;
      }
      const changed = { ...header, [name]: value } as SnapshotHeader;
      let bytes: Uint8Array;
      try {
        const { ciphertextDigest, ...fields } = changed;
        bytes = appendCiphertextDigest(encodeSnapshotHeaderFields(fields), ciphertextDigest);
      } catch {
        bytes = bytesAfter({ t: 'flip', at: plan.field, bit: plan.op % 8 }, parts.header, undefined);
        what = `${what} (unwritable: header byte flipped instead)`;
      }
      return {
        data: snapshotBytes({ header: bytes, signature: resign(bytes), sealed: parts.sealed }),
        class: cls,
        what,
        resigned: plan.seal === 'resign',
      };
    }
    case 'envelope': {
      // The signature, or the sealed model (its digest repaired when re-signing).
      if (plan.op % 2 === 0) {
        const signature = bytesAfter(plan.bytes, parts.signature, undefined);
        return {
          data: snapshotBytes({ ...parts, signature }),
          class: 'envelope and signature fields',
          what: `signature: ${plan.bytes.t}`,
          resigned: false,
        };
      }
      const sealed = bytesAfter(plan.bytes, parts.sealed, undefined);
      let header = parts.header;
      if (plan.seal === 'resign') {
        const decoded = decodeSnapshotHeader(parts.header);
        const { ciphertextDigest: _old, ...fields } = decoded.header;
        try {
          header = appendCiphertextDigest(
            encodeSnapshotHeaderFields({ ...fields, ciphertextLength: sealed.length }),
            sha256(sealed),
          );
        } catch {
          header = parts.header;
        }
      }
      return {
        data: snapshotBytes({ header, signature: resign(header), sealed }),
        class: 'byte fields (truncated, extended, flipped, emptied, random, another round’s)',
        what: `sealed model: ${plan.bytes.t}`,
        resigned: plan.seal === 'resign',
      };
    }
    case 'frame': {
      const out = t.data.slice();
      const view = new DataView(out.buffer);
      const op = plan.op % 6;
      if (op === 0) out[plan.field % 4]! ^= 0x20;
      else if (op === 1) out[4] = 2 + (plan.field % 250);
      else if (op === 2) out[5 + (plan.field % 3)] = 1;
      else if (op === 3) view.setUint32(8, [0, 4097, 0xffffffff][plan.field % 3]!, false);
      else if (op === 4) {
        view.setUint32(12 + parts.header.length, [0, 8193, 0xffffffff][plan.field % 3]!, false);
      } else return { ...frameOnly(t.data.slice(0, plan.field % t.data.length), 'truncated') };
      return frameOnly(out, ['magic', 'version', 'reserved', 'header length', 'signature length'][op]!);
    }
    case 'wire':
      return {
        data: appendBytes(t.data, new Uint8Array(1 + (plan.field % 64))),
        class: 'wire frame (magic, version, kind, reserved, length, truncated, trailing)',
        what: 'trailing bytes',
        resigned: false,
      };
    default:
      return undefined;
  }
}

function frameOnly(data: Uint8Array, what: string): Mutant {
  return {
    data,
    class: 'wire frame (magic, version, kind, reserved, length, truncated, trailing)',
    what,
    resigned: false,
  };
}

function snapshotHeaderOf(t: Template): SnapshotHeader | undefined {
  try {
    return decodeSnapshotHeader(snapshotParts(t.data).header).header;
  } catch {
    return undefined;
  }
}

// ---- transport, NATS headers, reply subject, subject ------------------------------------------------

const CRC_HEX = (data: Uint8Array) =>
  (Number.parseInt(Buffer.from(sha256(data).subarray(0, 4)).toString('hex'), 16) >>> 0)
    .toString(16)
    .padStart(8, '0');

function transportMutant(t: Template, plan: FuzzPlan, honestCrc: string): Mutant {
  const v = plan.header.variant;
  const n = t.data.length;
  const set: Record<string, string> = {};
  const extra: [string, string][] = [];
  let what: string;
  let cls: MutationClass = 'transport headers (`Cohort-Id`, `Cohort-Chunk`, `Cohort-Length`, `Cohort-Crc`)';
  switch (plan.header.which) {
    case 'id': {
      const ids = ['', 'a'.repeat(65), 'has space', 'dot.ted', 'é', 'fuzz-reused-id'];
      set['Cohort-Id'] = ids[v % ids.length]!;
      what = `Cohort-Id ${JSON.stringify(set['Cohort-Id'].slice(0, 20))}`;
      break;
    }
    case 'chunk': {
      // 0/2 and 0/3 declare more chunks than the message's size allows for its first one.
      const chunks = ['1/1', '0/0', 'x/1', '0/1/1', '-1/1', '0/999999999', '0/2', '0/3'];
      set['Cohort-Chunk'] = chunks[v % chunks.length]!;
      what = `Cohort-Chunk ${set['Cohort-Chunk']}`;
      break;
    }
    case 'length': {
      const lengths = [String(n - 1), String(n + 1), '0', '999999999999999', '-1', 'NaN', `+${n}`];
      set['Cohort-Length'] = lengths[v % lengths.length]!;
      what = `Cohort-Length ${JSON.stringify(set['Cohort-Length'])} for ${n} bytes`;
      break;
    }
    case 'crc': {
      // Upper case is malformed whatever the honest CRC: one without hex letters gets a 'G'.
      const upper =
        honestCrc.toUpperCase() === honestCrc ? `${honestCrc.slice(0, 7)}G` : honestCrc.toUpperCase();
      const crcs = [CRC_HEX(t.data), upper, honestCrc.slice(1), '', 'zzzzzzzz'];
      set['Cohort-Crc'] = crcs[v % crcs.length]!;
      if (set['Cohort-Crc'] === honestCrc) set['Cohort-Crc'] = '00000000';
      what = `Cohort-Crc ${JSON.stringify(set['Cohort-Crc'])}`;
      break;
    }
    default: {
      cls =
        'NATS headers (`Nats-Msg-Id`, `Nats-Rollup`, `Nats-Expected-*`, spoofed `Cohort-Error`, repeated)';
      const headers: [string, string][] = [
        ['Nats-Msg-Id', 'fuzz-dup'],
        ['Nats-Rollup', 'all'],
        ['Nats-Expected-Last-Sequence', '1'],
        ['Nats-Expected-Stream', 'COHORT_X'],
        ['Cohort-Error', 'BLOCK_BAD_SIGNATURE spoofed'],
        ['Cohort-Id', 'second-id'],
        ['Cohort-Chunk', '0/1'],
        ['X-Fuzz', 'y'.repeat(4000)],
      ];
      extra.push(headers[v % headers.length]!);
      what = `extra header ${extra[0]![0]}`;
    }
  }
  return { data: t.data, class: cls, what, resigned: false, headers: { set, extra } };
}

function replyMutant(t: Template, plan: FuzzPlan, ctx: MutationContext): Mutant {
  const F = ctx.federation;
  const other = ctx.members.filter((m) => m !== t.sender);
  const targets = [
    `_INBOX.${F}.${other[plan.field % other.length]}.fuzz`,
    `_INBOX.${F}.${t.sender}x.fuzz`,
    `$JS.API.STREAM.DELETE.${ctx.logStream}`,
    `$JS.API.STREAM.PURGE.${ctx.contributionsStream}`,
    `cohort.${F}.log`,
    `cohort.${F}.decision`,
    `cohort.${F}.round.open`,
    `_INBOX.${F}`,
  ];
  const reply = targets[plan.op % targets.length]!;
  return {
    data: t.data,
    class: 'reply subject (another inbox, JetStream API, service subjects)',
    what: `reply to ${reply}`,
    resigned: false,
    reply,
  };
}

function subjectMutant(t: Template, plan: FuzzPlan, ctx: MutationContext): Mutant {
  const F = ctx.federation;
  const tokens = t.subject.split('.');
  const other = ctx.members.filter((m) => m !== t.sender);
  const someone = other[plan.field % other.length]!;
  const kinds = ['heartbeat', 'vote', 'switched', 'snapshot', 'partial'];
  const choices = [
    // The same kind under another member's name (its last token).
    [...tokens.slice(0, -1), someone].join('.'),
    // Another kind of the sender's own subjects.
    `cohort.${F}.${kinds[plan.op % kinds.length]}.${t.sender}`,
    // An update or partial addressed elsewhere.
    `cohort.${F}.update.${someone}.${t.sender}`,
    `cohort.${F}.subpartial.${someone}.${t.sender}`,
    `cohort.${F}.round.open`,
  ];
  const subject = choices[plan.op % choices.length]!;
  return {
    data: t.data,
    class: 'subject (another member’s, another kind’s)',
    what: `sent on ${subject}`,
    resigned: false,
    subject,
  };
}

/**
 * The mutant `plan` makes of `template`. Never the template's own bytes on its own subject with
 * its honest headers: a change that leaves the message as it was becomes a one-bit flip of it.
 */
export function mutate(template: Template, plan: FuzzPlan, ctx: MutationContext, honestCrc: string): Mutant {
  let m: Mutant | undefined;
  switch (plan.layer) {
    case 'transport':
      return transportMutant(template, plan, honestCrc);
    case 'reply':
      return replyMutant(template, plan, ctx);
    case 'subject':
      return subjectMutant(template, plan, ctx);
    default: {
      const enc = encodingOf(template.kind);
      try {
        m =
          enc === 'control'
            ? mutateControl(template, plan, ctx)
            : enc === 'snapshot'
              ? mutateSnapshot(template, plan, ctx)
              : mutateUpdate(template, plan, ctx);
      } catch (err) {
        // A mutation this module could not encode: the plan becomes a flip of the body's bytes.
        m = {
          data: bytesAfter({ t: 'flip', at: plan.field, bit: plan.op % 8 }, template.data, undefined),
          class: 'byte fields (truncated, extended, flipped, emptied, random, another round’s)',
          what: `flipped (the mutation could not be encoded: ${(err as Error).message.slice(0, 80)})`,
          resigned: false,
          substituted: true,
        };
      }
    }
  }
  if (m !== undefined && equal(m.data, template.data)) {
    const at = 12 + (plan.field % Math.max(1, template.data.length - 12));
    m = {
      ...m,
      data: bytesAfter({ t: 'flip', at, bit: plan.op % 8 }, template.data, undefined),
      what: `${m.what} (a no-op: a byte flipped instead)`,
      resigned: false,
      substituted: true,
    };
  }
  return m!;
}
