import { createHash, type Hash } from 'node:crypto';
import { bytesEqual } from '../../crypto/digest/index.ts';
import { type PublicSigningKey, type SigningKeyPair, sign, verify } from '../../crypto/signature/index.ts';
import { InvalidArgumentError } from '../errors/index.ts';
import { federationSubjects } from '../transport/index.ts';
import { type Commit, decodeCommit, encodeCommit } from '../versions/index.ts';
import { AuditError } from './audit-error.ts';
import type { StoredEntry } from './audit-source.ts';

/** The first 12 bytes of a bundle: ASCII `COHORT-AUDIT`. */
export const AUDIT_BUNDLE_MAGIC: Uint8Array = new TextEncoder().encode('COHORT-AUDIT');
/**
 * The format version this build writes (u32 big-endian after the magic): 4 is version 3 sealed by
 * its exporter (a `seal` item before the trailer: the exporter's signature over the SHA-256 of every
 * byte before it). Version 3 holds the stored contributions of the contributions stream (items 7–10,
 * named `round-<r>/<attempt>/<aggregator>/<site>`), its registry and genesis always, and its
 * objects and contributions in increasing name order. Versions 1 (no contributions) and 3 are
 * still read, unsealed (the audit says so); version 2 (contributions of the updates object store,
 * which this build no longer reads) is not.
 */
export const AUDIT_BUNDLE_VERSION = 4;
/** Versions this build reads. */
const READABLE_VERSIONS: ReadonlySet<number> = new Set([1, 3, 4]);
/** The first version whose bundles are sealed by their exporter. */
const SEALED_VERSION = 4;
/** The signature domain of a bundle's seal (`signingMessage`). */
export const BUNDLE_SEAL_DOMAIN = 'audit-bundle';

/** Item types of a bundle (one byte each). */
export const BUNDLE_ITEM = Object.freeze({
  meta: 1,
  registry: 2,
  genesis: 3,
  entry: 4,
  object: 5,
  absent: 6,
  contribution: 7,
  contributionAbsent: 8,
  /** Version 3: a contribution one of whose frames was written more than once (data: the first messages). */
  contributionOverwritten: 9,
  /** Version 3: a contribution the store holds in a form no contribution has (data: why, UTF-8). */
  contributionUnreadable: 10,
  /** Version 4: the exporter's signature (name: its member id) over the SHA-256 of every byte before this item. */
  seal: 0xfe,
  trailer: 0xff,
} as const);

/** The one name each single item of a bundle has. */
const FIXED_NAMES: Readonly<Record<number, string>> = {
  [BUNDLE_ITEM.meta]: 'meta',
  [BUNDLE_ITEM.registry]: 'registry.bin',
  [BUNDLE_ITEM.genesis]: 'genesis',
};

/** Longest item name, in UTF-8 bytes. */
const MAX_NAME_BYTES = 1024;
const HEADER_BYTES = AUDIT_BUNDLE_MAGIC.length + 4;
const SEQUENCE_RE = /^[1-9][0-9]{0,15}$/;

/** The bundle's `meta` item (UTF-8 JSON): what was exported, from where, by whom, when. */
export interface AuditBundleMeta {
  readonly format: 'cohort-audit-bundle';
  readonly version: number;
  readonly federation: string;
  /** The log stream's name. */
  readonly stream: string;
  /** The member whose credentials read the log. */
  readonly member: string | null;
  /** The exporter's clock (ms since the epoch). */
  readonly exportedUnixMs: number;
  /** The log's last sequence when exported (the stream's state). */
  readonly lastSequence: number;
  /** `included`: every aggregate a COMMIT names is in the bundle (or marked absent); `skipped`: none is. */
  readonly aggregates: 'included' | 'skipped';
  /**
   * Version 3: `included`: every contribution a partial record lists is in the bundle (or marked
   * absent, overwritten or unreadable); `skipped`: none is (the exporter could not read the
   * contributions stream, or was asked not to). Absent in version 1 (read as `skipped`).
   */
  readonly contributions?: 'included' | 'skipped';
}

/**
 * A decoded audit bundle: what a federation's log held when it was exported, byte for byte. Nothing
 * in it is trusted: `registry` and `genesis` are copies for an auditor who pins them by hash.
 */
export interface AuditBundle {
  readonly meta: AuditBundleMeta;
  /** The member registry file (a `SignedRegistry`), as exported; null when the bundle has none. */
  readonly registry: Uint8Array | null;
  /** The genesis commit, as exported (its hash recomputed when decoded); null when the bundle has none. */
  readonly genesis: Commit | null;
  /** Stored entries in increasing sequence order. */
  readonly entries: readonly StoredEntry[];
  /** Aggregate objects by name: the bytes, or null for an object the store did not hold. */
  readonly objects: ReadonlyMap<string, Uint8Array | null>;
  /**
   * Version 3: stored contributions by name (`contributionName`): their bytes (`encodeContribution`),
   * or null when the store did not hold them.
   */
  readonly contributions?: ReadonlyMap<string, Uint8Array | null>;
  /**
   * Version 3: what else the exporter found of some contributions: `overwritten` (its bytes in
   * `contributions` are the first message of each frame) or `unreadable` (its value there is null).
   */
  readonly contributionNotes?: ReadonlyMap<string, ContributionNote>;
  /** Version 4: the exporter's seal as decoded (its signature unchecked: the audit checks it). */
  readonly seal?: BundleSeal;
}

/**
 * A bundle's seal: its exporter's signature (domain {@link BUNDLE_SEAL_DOMAIN}) over `digest`, the
 * SHA-256 of every byte of the bundle before the seal item. It turns the meta's member, export
 * time and last sequence into the exporter's signed statement: nobody without its key can cut,
 * extend or alter a bundle and seal it again.
 */
export interface BundleSeal {
  /** The member who signed (the meta's `member`). */
  readonly signer: string;
  /** SHA-256 of every byte before the seal item (32 bytes). */
  readonly digest: Uint8Array;
  readonly signature: Uint8Array;
}

/** Who seals a bundle as it is written: a member and its signing key pair. */
export interface BundleSigner {
  readonly member: string;
  readonly key: SigningKeyPair;
}

/** Whether `seal`'s signature verifies under `key`. */
export function bundleSealValid(seal: BundleSeal, key: PublicSigningKey): boolean {
  return verify(key, BUNDLE_SEAL_DOMAIN, seal.digest, seal.signature);
}

/** What an exporter found of a contribution besides its bytes (see {@link AuditBundle.contributionNotes}). */
export type ContributionNote =
  | { readonly kind: 'overwritten' }
  | { readonly kind: 'unreadable'; readonly reason: string };

/** Receives a bundle's bytes in order (a file, an HTTP response). */
export type BundleSink = (chunk: Uint8Array) => void | Promise<void>;

/** Writes a bundle's raw items, in order, to a sink, hashing everything for the trailer. */
class ItemWriter {
  readonly #sink: BundleSink;
  readonly #hash: Hash = createHash('sha256');
  #done = false;
  /** Bytes handed to the sink so far. */
  bytes = 0;

  constructor(sink: BundleSink) {
    this.#sink = sink;
  }

  async #out(chunk: Uint8Array): Promise<void> {
    if (!this.#done) this.#hash.update(chunk);
    this.bytes += chunk.length;
    await this.#sink(chunk);
  }

  async start(version: number): Promise<void> {
    const header = new Uint8Array(HEADER_BYTES);
    header.set(AUDIT_BUNDLE_MAGIC, 0);
    new DataView(header.buffer).setUint32(AUDIT_BUNDLE_MAGIC.length, version, false);
    await this.#out(header);
  }

  async item(type: number, name: string, data: Uint8Array): Promise<void> {
    const nameBytes = new TextEncoder().encode(name);
    if (nameBytes.length > MAX_NAME_BYTES) {
      throw new InvalidArgumentError(
        `bundle item name ${JSON.stringify(name)} is over ${MAX_NAME_BYTES} bytes`,
      );
    }
    if (data.length > 0xffff_ffff) {
      throw new InvalidArgumentError(`bundle item ${JSON.stringify(name)} is over 4 GiB`);
    }
    const head = new Uint8Array(1 + 4 + nameBytes.length + 4);
    const view = new DataView(head.buffer);
    head[0] = type;
    view.setUint32(1, nameBytes.length, false);
    head.set(nameBytes, 5);
    view.setUint32(5 + nameBytes.length, data.length, false);
    await this.#out(head);
    if (data.length > 0) await this.#out(data);
  }

  /** The SHA-256 of every byte written so far (the hash goes on). */
  digestSoFar(): Uint8Array {
    return new Uint8Array(this.#hash.copy().digest());
  }

  async finish(): Promise<void> {
    const digest = new Uint8Array(this.#hash.digest());
    this.#done = true; // the trailer is not part of what it hashes
    await this.item(BUNDLE_ITEM.trailer, '', digest);
  }
}

/**
 * Writes a bundle item by item to a sink, as it is produced (an exporter streams a bundle without
 * holding it): `start` (header, meta, registry, genesis), then the entries in increasing sequence,
 * the objects, the contributions (version 3: each in increasing name order), then `finish` (the
 * trailer). Each call checks its place in that order, so a writer never emits a bundle the
 * decoder would refuse for its order.
 */
export class AuditBundleWriter {
  readonly #w: ItemWriter;
  #version = 0;
  #member: string | null = null;
  /** 0 before start, 1 entries, 2 objects, 3 contributions, 4 finished. */
  #stage = 0;
  #lastSequence = 0;
  #lastName = '';

  constructor(sink: BundleSink) {
    if (typeof sink !== 'function')
      throw new InvalidArgumentError('sink must be a function', { details: { name: 'sink' } });
    this.#w = new ItemWriter(sink);
  }

  /** Bytes written so far. */
  get bytes(): number {
    return this.#w.bytes;
  }

  #at(stage: number, what: string): void {
    if (this.#stage === 0 || this.#stage > stage) {
      throw new InvalidArgumentError(`bundle ${what} out of order`, { details: { name: what } });
    }
    if (this.#stage < stage) this.#lastName = '';
    this.#stage = stage;
  }

  #named(name: string, what: string): void {
    if (this.#version >= 3 && name <= this.#lastName) {
      throw new InvalidArgumentError(
        `bundle ${what} ${JSON.stringify(name)} follows ${JSON.stringify(this.#lastName)}: names must increase`,
        { details: { name: what } },
      );
    }
    this.#lastName = name;
  }

  /** The header, meta, and (when not null) the registry and the genesis commit. */
  async start(meta: AuditBundleMeta, registry: Uint8Array | null, genesis: Commit | null): Promise<void> {
    const version = meta.version;
    if (
      this.#stage !== 0 ||
      !READABLE_VERSIONS.has(version) ||
      (version >= 3 && (registry === null || genesis === null))
    ) {
      throw new InvalidArgumentError(`bundle.meta.version ${version} cannot hold this bundle`, {
        details: { name: 'bundle.meta.version' },
      });
    }
    this.#version = version;
    this.#member = meta.member;
    this.#stage = 1;
    await this.#w.start(version);
    await this.#w.item(BUNDLE_ITEM.meta, 'meta', encodeMeta(meta));
    if (registry !== null) await this.#w.item(BUNDLE_ITEM.registry, 'registry.bin', registry);
    if (genesis !== null) await this.#w.item(BUNDLE_ITEM.genesis, 'genesis', encodeCommit(genesis));
  }

  /** One stored entry (sequences strictly increasing). */
  async entry(e: StoredEntry): Promise<void> {
    this.#at(1, 'entry');
    if (e.sequence <= this.#lastSequence) {
      throw new InvalidArgumentError('bundle.entries must be in strictly increasing sequence order', {
        details: { name: 'bundle.entries' },
      });
    }
    this.#lastSequence = e.sequence;
    await this.#w.item(BUNDLE_ITEM.entry, String(e.sequence), e.bytes);
  }

  /** An aggregate object, or its absence (null). */
  async object(name: string, bytes: Uint8Array | null): Promise<void> {
    this.#at(2, 'object');
    this.#named(name, 'object');
    await this.#w.item(
      bytes === null ? BUNDLE_ITEM.absent : BUNDLE_ITEM.object,
      name,
      bytes ?? new Uint8Array(0),
    );
  }

  /**
   * A stored contribution (version 3): its bytes, or null when absent; `note` as in
   * {@link AuditBundle.contributionNotes} (`overwritten` needs bytes, `unreadable` none).
   */
  async contribution(name: string, bytes: Uint8Array | null, note?: ContributionNote): Promise<void> {
    if (this.#version < 3) {
      throw new InvalidArgumentError(`bundle.meta.version ${this.#version} holds no contributions`, {
        details: { name: 'bundle.meta.version' },
      });
    }
    if (note !== undefined && (note.kind === 'overwritten') !== (bytes !== null)) {
      throw new InvalidArgumentError(
        `bundle.contributionNotes names ${JSON.stringify(name)} without its bytes`,
        { details: { name: 'bundle.contributionNotes' } },
      );
    }
    this.#at(3, 'contribution');
    this.#named(name, 'contribution');
    if (note?.kind === 'unreadable') {
      await this.#w.item(BUNDLE_ITEM.contributionUnreadable, name, new TextEncoder().encode(note.reason));
    } else if (note?.kind === 'overwritten') {
      await this.#w.item(BUNDLE_ITEM.contributionOverwritten, name, bytes!);
    } else {
      await this.#w.item(
        bytes === null ? BUNDLE_ITEM.contributionAbsent : BUNDLE_ITEM.contribution,
        name,
        bytes ?? new Uint8Array(0),
      );
    }
  }

  /**
   * The seal (version 4: `signer` signs the SHA-256 of everything written so far, or `seal` is a
   * decoded bundle's own, copied as it was) and the trailer; nothing can be written after it.
   * Version 4 needs one, naming the meta's member; earlier versions take none.
   */
  async finish(seal?: BundleSigner | BundleSeal): Promise<void> {
    this.#at(4, 'trailer');
    const sealed = this.#version >= SEALED_VERSION;
    if (sealed !== (seal !== undefined)) {
      throw new InvalidArgumentError(
        sealed
          ? `a version ${this.#version} bundle must be sealed by its exporter`
          : `a version ${this.#version} bundle holds no seal`,
        { details: { name: 'seal' } },
      );
    }
    if (seal !== undefined) {
      const signer = 'member' in seal ? seal.member : seal.signer;
      if (signer !== this.#member) {
        throw new InvalidArgumentError(
          `the bundle is sealed by ${JSON.stringify(signer)}, its meta names ${JSON.stringify(this.#member)}`,
          { details: { name: 'seal' } },
        );
      }
      const digest = this.#w.digestSoFar();
      if ('signature' in seal && !bytesEqual(seal.digest, digest)) {
        throw new InvalidArgumentError('the seal copied is not over these bytes', {
          details: { name: 'seal' },
        });
      }
      const signature = 'key' in seal ? sign(seal.key, BUNDLE_SEAL_DOMAIN, digest) : seal.signature;
      await this.#w.item(BUNDLE_ITEM.seal, signer, signature);
    }
    await this.#w.finish();
  }
}

/**
 * Writes `bundle` to `sink` in order (the format of {@link encodeAuditBundle}), hashing as it goes
 * for the trailer (see {@link AuditBundleWriter} to write one as it is produced).
 */
export async function writeAuditBundle(
  bundle: AuditBundle,
  sink: BundleSink,
  signer?: BundleSigner,
): Promise<void> {
  const version = bundle.meta.version;
  const contributions = bundle.contributions ?? new Map<string, Uint8Array | null>();
  const notes = bundle.contributionNotes ?? new Map<string, ContributionNote>();
  if (!READABLE_VERSIONS.has(version) || (version === 1 && (contributions.size > 0 || notes.size > 0))) {
    throw new InvalidArgumentError(`bundle.meta.version ${version} cannot hold this bundle`, {
      details: { name: 'bundle.meta.version' },
    });
  }
  for (const name of notes.keys()) {
    if (!contributions.has(name)) {
      throw new InvalidArgumentError(
        `bundle.contributionNotes names ${JSON.stringify(name)} without its bytes`,
        {
          details: { name: 'bundle.contributionNotes' },
        },
      );
    }
  }
  // Version 3 writes objects and contributions in increasing name order: one bundle, one encoding.
  const ordered = <T>(map: ReadonlyMap<string, T>): [string, T][] =>
    version >= 3 ? [...map].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)) : [...map];
  const w = new AuditBundleWriter(sink);
  await w.start(bundle.meta, bundle.registry, bundle.genesis);
  for (const e of bundle.entries) await w.entry(e);
  for (const [name, bytes] of ordered(bundle.objects)) await w.object(name, bytes);
  for (const [name, bytes] of ordered(contributions)) await w.contribution(name, bytes, notes.get(name));
  await w.finish(signer ?? bundle.seal);
}

/**
 * The bytes of `bundle` (see docs/log-format.md, "Auditing"): `COHORT-AUDIT` ‖ u32 version, then
 * items `u8 type ‖ u32 name length ‖ name ‖ u32 data length ‖ data` (big-endian): meta, registry,
 * genesis, the entries in increasing sequence, the objects and then the contributions (version 3:
 * each in increasing name order), and a trailer holding the SHA-256 of every byte before it.
 * Entries with equal or decreasing sequences are refused.
 */
export async function encodeAuditBundle(bundle: AuditBundle, signer?: BundleSigner): Promise<Uint8Array> {
  for (let i = 1; i < bundle.entries.length; i++) {
    if (bundle.entries[i]!.sequence <= bundle.entries[i - 1]!.sequence) {
      throw new InvalidArgumentError('bundle.entries must be in strictly increasing sequence order', {
        details: { name: 'bundle.entries' },
      });
    }
  }
  const chunks: Uint8Array[] = [];
  await writeAuditBundle(
    bundle,
    (c) => {
      chunks.push(c);
    },
    signer,
  );
  // A plain Uint8Array (a Buffer's `slice` would be a view, not a copy).
  const out = new Uint8Array(chunks.reduce((n, c) => n + c.length, 0));
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.length;
  }
  return out;
}

function invalid(source: string, problem: string, details: Record<string, unknown> = {}): AuditError {
  return new AuditError('BUNDLE_INVALID', `${source}: ${problem}`, { details: { source, ...details } });
}

/**
 * Decodes an audit bundle, checking its structure only (what it holds is the audit's to verify):
 * magic and version, every item within the file, the trailer's SHA-256 of everything before it,
 * exactly one trailer at the end, the meta first and valid (its stream the federation's log
 * stream), at most one registry and genesis (whose hash must be its fields' hash; version 3: both
 * present), entries named by strictly increasing decimal sequences, object and contribution names
 * unique (version 3: strictly increasing, so a reordered bundle is refused), and nothing the meta
 * says was skipped. The trailer only catches damage in transit: anyone can recompute it, so what a
 * bundle holds is trusted only as far as the audit verifies it.
 *
 * @throws AuditError `BUNDLE_INVALID` naming `source` and the problem.
 */
export function decodeAuditBundle(bytes: Uint8Array, source = 'bundle'): AuditBundle {
  if (!(bytes instanceof Uint8Array)) throw new InvalidArgumentError('bytes must be a Uint8Array');
  if (
    bytes.length < HEADER_BYTES ||
    !bytesEqual(bytes.subarray(0, AUDIT_BUNDLE_MAGIC.length), AUDIT_BUNDLE_MAGIC)
  ) {
    throw invalid(source, 'not an audit bundle (no COHORT-AUDIT magic)');
  }
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const version = view.getUint32(AUDIT_BUNDLE_MAGIC.length, false);
  if (!READABLE_VERSIONS.has(version)) {
    throw invalid(
      source,
      `format version ${version}, this build reads ${[...READABLE_VERSIONS].join(' and ')}`,
    );
  }
  const items: { type: number; name: string; data: Uint8Array; start: number }[] = [];
  let at = HEADER_BYTES;
  const decoder = new TextDecoder('utf-8', { fatal: true });
  while (at < bytes.length) {
    const start = at;
    if (at + 5 > bytes.length) throw invalid(source, `item at byte ${start} is truncated`);
    const type = bytes[at]!;
    const nameLength = view.getUint32(at + 1, false);
    if (nameLength > MAX_NAME_BYTES)
      throw invalid(source, `item at byte ${start} has a ${nameLength}-byte name`);
    if (at + 5 + nameLength + 4 > bytes.length) throw invalid(source, `item at byte ${start} is truncated`);
    let name: string;
    try {
      name = decoder.decode(bytes.subarray(at + 5, at + 5 + nameLength));
    } catch {
      throw invalid(source, `item at byte ${start} has a name that is not UTF-8`);
    }
    const dataLength = view.getUint32(at + 5 + nameLength, false);
    const dataStart = at + 9 + nameLength;
    if (dataStart + dataLength > bytes.length)
      throw invalid(source, `item ${JSON.stringify(name)} is truncated`);
    items.push({ type, name, data: bytes.subarray(dataStart, dataStart + dataLength), start });
    at = dataStart + dataLength;
  }
  const trailer = items.pop();
  if (
    trailer === undefined ||
    trailer.type !== BUNDLE_ITEM.trailer ||
    trailer.name !== '' ||
    trailer.data.length !== 32
  ) {
    throw invalid(source, 'does not end with its trailer (truncated?)');
  }
  // One pass over the bytes: the seal covers everything before its item, the trailer everything
  // before the trailer (the seal included).
  const sealed = version >= SEALED_VERSION ? items.pop() : undefined;
  const hash = createHash('sha256');
  let sealDigest: Uint8Array | undefined;
  if (sealed !== undefined) {
    hash.update(bytes.subarray(0, sealed.start));
    sealDigest = new Uint8Array(hash.copy().digest());
    hash.update(bytes.subarray(sealed.start, trailer.start));
  } else {
    hash.update(bytes.subarray(0, trailer.start));
  }
  if (!bytesEqual(hash.digest(), trailer.data)) {
    throw invalid(source, "the trailer's SHA-256 is not that of the bytes before it (corrupted in transit?)");
  }
  let seal: BundleSeal | undefined;
  if (version >= SEALED_VERSION) {
    if (sealed === undefined || sealed.type !== BUNDLE_ITEM.seal || sealed.data.length === 0) {
      throw invalid(source, `a version ${version} bundle must end with its exporter's seal`);
    }
    seal = { signer: sealed.name, digest: sealDigest!, signature: new Uint8Array(sealed.data) };
  }
  const [first, ...rest] = items;
  if (first === undefined || first.type !== BUNDLE_ITEM.meta || first.name !== 'meta')
    throw invalid(source, 'does not start with its meta');
  const meta = decodeMeta(source, first.data, decoder, version);
  if (seal !== undefined && seal.signer !== meta.member) {
    throw invalid(
      source,
      `sealed by ${JSON.stringify(seal.signer)}, but its meta names ${JSON.stringify(meta.member)} as exporter`,
    );
  }
  let registry: Uint8Array | null = null;
  let genesis: Commit | null = null;
  const entries: StoredEntry[] = [];
  const objects = new Map<string, Uint8Array | null>();
  const contributions = new Map<string, Uint8Array | null>();
  const contributionNotes = new Map<string, ContributionNote>();
  // Items come in this order: registry (at most one), genesis (at most one), entries, objects,
  // contributions (version 3).
  const RANK: Record<number, number> = {
    [BUNDLE_ITEM.registry]: 1,
    [BUNDLE_ITEM.genesis]: 2,
    [BUNDLE_ITEM.entry]: 3,
    [BUNDLE_ITEM.object]: 4,
    [BUNDLE_ITEM.absent]: 4,
  };
  if (version >= 3) {
    RANK[BUNDLE_ITEM.contribution] = 5;
    RANK[BUNDLE_ITEM.contributionAbsent] = 5;
    RANK[BUNDLE_ITEM.contributionOverwritten] = 5;
    RANK[BUNDLE_ITEM.contributionUnreadable] = 5;
  }
  let rank = 0;
  let lastName = '';
  for (const item of rest) {
    const r = RANK[item.type];
    if (r === undefined)
      throw invalid(source, `item ${JSON.stringify(item.name)} has unknown type ${item.type}`);
    if (r < rank || (r === rank && r <= 2)) {
      throw invalid(source, `item ${JSON.stringify(item.name)} of type ${item.type} is out of place`);
    }
    if (r !== rank) lastName = '';
    rank = r;
    const fixed = FIXED_NAMES[item.type];
    if (fixed !== undefined && item.name !== fixed) {
      throw invalid(source, `item ${JSON.stringify(item.name)} of type ${item.type} must be named ${fixed}`);
    }
    if (item.type === BUNDLE_ITEM.registry) {
      registry = new Uint8Array(item.data);
    } else if (item.type === BUNDLE_ITEM.genesis) {
      try {
        genesis = decodeCommit(item.data);
      } catch (err) {
        throw invalid(source, `genesis is not a commit: ${(err as Error).message}`);
      }
    } else if (item.type === BUNDLE_ITEM.entry) {
      if (!SEQUENCE_RE.test(item.name) || !Number.isSafeInteger(Number(item.name))) {
        throw invalid(source, `entry name ${JSON.stringify(item.name)} is not a sequence`);
      }
      const sequence = Number(item.name);
      const previous = entries[entries.length - 1]?.sequence ?? 0;
      if (sequence <= previous) {
        throw invalid(source, `entry ${sequence} follows entry ${previous}: entries must increase`);
      }
      if (sequence > meta.lastSequence) {
        throw invalid(
          source,
          `entry ${sequence} is beyond the last sequence ${meta.lastSequence} of its meta`,
        );
      }
      entries.push({ sequence, bytes: new Uint8Array(item.data) });
    } else {
      const contribution = r === 5;
      const into = contribution ? contributions : objects;
      const what = contribution ? 'contribution' : 'object';
      if (into.has(item.name)) throw invalid(source, `holds ${what} ${JSON.stringify(item.name)} twice`);
      if (version >= 3 && item.name <= lastName) {
        throw invalid(
          source,
          `${what} ${JSON.stringify(item.name)} follows ${JSON.stringify(lastName)}: names must increase`,
        );
      }
      lastName = item.name;
      if (contribution ? meta.contributions !== 'included' : meta.aggregates !== 'included') {
        throw invalid(source, `holds ${what} ${JSON.stringify(item.name)}, its meta says they were skipped`);
      }
      const empty = item.type === BUNDLE_ITEM.absent || item.type === BUNDLE_ITEM.contributionAbsent;
      if (empty && item.data.length !== 0) {
        throw invalid(source, `absent ${what} ${JSON.stringify(item.name)} has data`);
      }
      if (item.type === BUNDLE_ITEM.contributionUnreadable) {
        let reason: string;
        try {
          reason = decoder.decode(item.data);
        } catch {
          throw invalid(
            source,
            `unreadable contribution ${JSON.stringify(item.name)}: its reason is not UTF-8`,
          );
        }
        contributionNotes.set(item.name, { kind: 'unreadable', reason });
        into.set(item.name, null);
      } else {
        if (item.type === BUNDLE_ITEM.contributionOverwritten) {
          contributionNotes.set(item.name, { kind: 'overwritten' });
        }
        into.set(item.name, empty ? null : new Uint8Array(item.data));
      }
    }
  }
  if (version >= 3 && (registry === null || genesis === null)) {
    throw invalid(
      source,
      `holds no ${registry === null ? 'registry' : 'genesis'} (version 3 bundles hold both)`,
    );
  }
  const decoded: AuditBundle = Object.freeze({
    meta: Object.freeze(meta),
    registry,
    genesis,
    entries: Object.freeze(entries.map((e) => Object.freeze(e))),
    objects: readOnlyMap(objects),
    contributions: readOnlyMap(contributions),
    contributionNotes: readOnlyMap(contributionNotes),
    ...(seal === undefined ? {} : { seal }),
  });
  DECODED.add(decoded);
  return decoded;
}

/** Bundles exactly as {@link decodeAuditBundle} returned them: only their seals cover what they hold. */
const DECODED = new WeakSet<AuditBundle>();

/** `map`, refusing `set`, `delete` and `clear`: a decoded bundle's seal covers its contents. */
function readOnlyMap<V>(map: Map<string, V>): ReadonlyMap<string, V> {
  const refuse = () => {
    throw new InvalidArgumentError('a decoded bundle is read-only: build a new bundle and seal it again');
  };
  for (const method of ['set', 'delete', 'clear'] as const) {
    Object.defineProperty(map, method, { value: refuse });
  }
  return map;
}

/**
 * The seal of `bundle` when `bundle` is the object {@link decodeAuditBundle} returned (frozen, its
 * seal's digest computed over the bytes it was decoded from); null otherwise: a bundle built or
 * copied in memory (`{ ...decoded, meta: … }`) carries no seal that vouches for it.
 */
export function sealOf(bundle: AuditBundle): BundleSeal | null {
  return DECODED.has(bundle) ? (bundle.seal ?? null) : null;
}

/** The meta's JSON with its fields in one order, so a decoded bundle encodes to the same bytes. */
function encodeMeta(meta: AuditBundleMeta): Uint8Array {
  const ordered: AuditBundleMeta = {
    format: meta.format,
    version: meta.version,
    federation: meta.federation,
    stream: meta.stream,
    member: meta.member,
    exportedUnixMs: meta.exportedUnixMs,
    lastSequence: meta.lastSequence,
    aggregates: meta.aggregates,
    ...(meta.contributions === undefined ? {} : { contributions: meta.contributions }),
  };
  return new TextEncoder().encode(JSON.stringify(ordered));
}

function decodeMeta(
  source: string,
  data: Uint8Array,
  decoder: { decode(b: Uint8Array): string },
  version: number,
): AuditBundleMeta {
  let raw: unknown;
  try {
    raw = JSON.parse(decoder.decode(data));
  } catch (err) {
    throw invalid(source, `meta is not JSON: ${(err as Error).message}`);
  }
  const m = raw as Record<string, unknown>;
  const bad = (field: string) => invalid(source, `meta.${field} is missing or invalid`, { field });
  if (typeof m !== 'object' || m === null || Array.isArray(m)) throw invalid(source, 'meta is not an object');
  if (m['format'] !== 'cohort-audit-bundle') throw bad('format');
  if (m['version'] !== version) throw bad('version');
  for (const f of ['federation', 'stream'] as const) {
    if (typeof m[f] !== 'string' || (m[f] as string).length === 0) throw bad(f);
  }
  // The log stream follows from the federation: a bundle naming another is not this federation's.
  let stream: string;
  try {
    stream = federationSubjects(m['federation'] as string).logStream;
  } catch {
    throw bad('federation');
  }
  if (m['stream'] !== stream) throw bad('stream');
  if (m['member'] !== null && typeof m['member'] !== 'string') throw bad('member');
  for (const f of ['exportedUnixMs', 'lastSequence'] as const) {
    if (!Number.isSafeInteger(m[f]) || (m[f] as number) < 0) throw bad(f);
  }
  if (m['aggregates'] !== 'included' && m['aggregates'] !== 'skipped') throw bad('aggregates');
  if (version >= 3 && m['contributions'] !== 'included' && m['contributions'] !== 'skipped') {
    throw bad('contributions');
  }
  return {
    format: 'cohort-audit-bundle',
    version,
    ...(version >= 3 ? { contributions: m['contributions'] as 'included' | 'skipped' } : {}),
    federation: m['federation'] as string,
    stream: m['stream'] as string,
    member: m['member'] as string | null,
    exportedUnixMs: m['exportedUnixMs'] as number,
    lastSequence: m['lastSequence'] as number,
    aggregates: m['aggregates'] as 'included' | 'skipped',
  };
}
