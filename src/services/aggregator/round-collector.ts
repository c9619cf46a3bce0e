import type { LaneContext } from '../../../crypto/lanes/index.ts';
import type { SignatureAlgorithm } from '../../../crypto/signature/index.ts';
import { BlockRejectedError, type BlockRejectReason, CohortError } from '../../errors/index.ts';
import {
  type Aggregate,
  AggregateBuilder,
  BlockVerifier,
  type ControlBodies,
  type CryptoTimingObserver,
  codecEncoding,
  type KeyLookup,
  type RejectionCounters,
  type RoundContext,
  RoundTree,
  signatureTimer,
  UpdateInbox,
} from '../../protocol/index.ts';
// The parent's side of a partial is the same at every level of the tree, the coordinator's included.
import { encodeContribution, PartialIntake } from '../../round/index.ts';

/** The RoundOpen body an aggregator works from. */
export type RoundOpenBody = ControlBodies['round-open'];

/** Result of accepting one block or manifest. */
export type AcceptOutcome = 'stored' | 'repeat' | 'added';

/** Where each assigned site of a round stands. */
export type SiteOutcome = 'added' | 'failed';

/**
 * One round at one aggregator: the RoundOpen's context and aggregation tree, a `BlockVerifier` for
 * it, the assigned sites, their partial uploads, the partials of its child aggregators when the
 * tree makes it a parent (a `PartialIntake` over the same sum), and the running homomorphic sum.
 * Every refusal throws a `BlockRejectedError` (or, for a child's partial already refused or late,
 * a `CohortError`) that has already been counted in `counters`.
 */
export class RoundCollector {
  /** Each site whose update is in the sum: its digest and weight. */
  readonly #added = new Map<string, { readonly digest: Uint8Array; readonly weight: number }>();
  readonly open: RoundOpenBody;
  readonly context: RoundContext;
  readonly assigned: ReadonlySet<string>;
  /** The round's aggregation tree (RoundOpen's `parents`; one level without them). */
  readonly tree: RoundTree;
  /** Where this aggregator sends its partial: a parent aggregator, or `''` for the coordinator. */
  readonly parent: string;
  /** When this aggregator sends its partial at the latest (ms since the epoch). */
  readonly deadlineUnixMs: number;
  /** Child aggregators whose partials it sums this round (none at one level). */
  readonly children: readonly string[];
  readonly #partials: PartialIntake | undefined;
  /** Manifests of the sites inside the children's partials, forwarded up with the sum. */
  readonly #forwarded = new Map<string, Uint8Array>();
  readonly #verifier: BlockVerifier;
  readonly #counters: RejectionCounters;
  readonly #builder: AggregateBuilder;
  readonly #inbox = new Map<string, UpdateInbox>();
  /** Each site's framed manifest, kept to forward with the partial (the parent checks each). */
  readonly #manifests = new Map<string, Uint8Array>();
  /** Each site's framed blocks by index, as received, until its update is summed. */
  readonly #blockFrames = new Map<string, Map<number, Uint8Array>>();
  /** Summed sites' contributions (manifest and blocks as received), until taken for storage. */
  readonly #contributions = new Map<string, Uint8Array>();
  readonly #weights: ReadonlyMap<string, number>;
  readonly #settled = new Map<string, SiteOutcome>();
  #closed = false;
  #disposed = false;

  constructor(options: {
    open: RoundOpenBody;
    member: string;
    ckks: LaneContext;
    keys: KeyLookup;
    allowedAlgorithms: readonly SignatureAlgorithm[];
    counters: RejectionCounters;
    /** Reports `site-update` signature verifications and CKKS `load`/`add` of site updates. */
    timings?: CryptoTimingObserver;
  }) {
    const { open } = options;
    // Throws INVALID_ARGUMENT on an impossible tree: the RoundOpen is refused.
    this.tree = RoundTree.of(open);
    this.parent = this.tree.parentOf(options.member) ?? '';
    this.deadlineUnixMs = this.tree.deadlineOf(options.member) ?? open.deadlineUnixMs;
    this.children = this.tree.childrenOf(options.member);
    this.open = open;
    this.context = {
      federation: open.federation,
      round: open.round,
      version: open.version,
      baseCommit: open.baseCommit,
    };
    // Both throw INVALID_ARGUMENT on an impossible RoundOpen (bad base commit, codec values).
    const encoding = codecEncoding(options.ckks, {
      bits: open.bits as 1 | 2 | 4 | 8,
      clip: open.clip,
      maxContributors: open.maxContributors,
      crcChunkBytes: open.crcChunkBytes,
    });
    const mine = open.assignments.filter((a) => a.aggregator === options.member);
    this.#weights = new Map(mine.map((a) => [a.site, a.examples]));
    // Only sites assigned here, with the size and weights RoundOpen pinned.
    this.#verifier = new BlockVerifier({
      context: this.context,
      ckksParamsId: options.ckks.paramsId,
      encoding,
      keys: (signer) => (this.#weights.has(signer) ? options.keys(signer) : undefined),
      allowedAlgorithms: options.allowedAlgorithms,
      counters: options.counters,
      kind: 'site-update',
      maxCiphertextBytes: options.ckks.maxCiphertextBytes,
      pinned: { totalParams: open.totalParams, weightOf: (site) => this.#weights.get(site) },
      onSignatureVerified: signatureTimer(options.timings, 'site-update'),
    });
    this.#counters = options.counters;
    this.assigned = new Set(mine.map((a) => a.site));
    this.#builder = new AggregateBuilder(
      options.ckks,
      { encoding, totalParams: open.totalParams },
      { timings: options.timings },
    );
    this.#partials =
      this.children.length === 0
        ? undefined
        : new PartialIntake({
            ckks: options.ckks,
            context: this.context,
            encoding,
            assignments: open.assignments,
            totalParams: open.totalParams,
            keys: options.keys,
            allowedAlgorithms: options.allowedAlgorithms,
            timings: options.timings,
            tree: this.tree,
            parent: options.member,
            builder: this.#builder,
          });
  }

  /** Longest framed block or manifest a site may send this round (checked before decoding). */
  get maxMessageBytes(): number {
    return Math.max(this.#verifier.maxBlockBytes, this.#verifier.maxManifestBytes);
  }

  get round(): number {
    return this.open.round;
  }

  /** No more input is taken (finished, superseded or stopped). */
  get closed(): boolean {
    return this.#closed;
  }

  /** Sites whose update is in the sum. */
  get contributors(): number {
    return this.#builder.contributors;
  }

  /** Every assigned site has either been added or failed for good, and so has every child's partial. */
  get complete(): boolean {
    for (const site of this.assigned) if (!this.#settled.has(site)) return false;
    return this.#partials === undefined || this.#partials.settled;
  }

  /** Assigned sites with no complete update (the stragglers, when the round closes). */
  missing(): string[] {
    return [...this.assigned].filter((s) => this.#settled.get(s) !== 'added');
  }

  /** Children whose partial is not in the sum (late, or refused), with the reason when refused. */
  missingChildren(): { child: string; why: string }[] {
    return this.#partials?.undelivered('not in by the deadline') ?? [];
  }

  /**
   * One framed block or manifest of `child`'s partial (`subpartial.<me>.<child>`), its header
   * already routed here (round, signer = `child`). Refused unless `child` is a child of this
   * aggregator in this round and the round takes input; then `PartialIntake`'s checks: the child's
   * key only, its listed sites all at or below it, each backed by its own signed manifest with the
   * pinned weight, no site already in the sum. The first refusal fails the child's partial for the
   * round. Returns `'added'` once the whole partial is in the sum, else `'stored'`.
   */
  acceptPartial(child: string, bytes: Uint8Array): 'stored' | 'added' {
    if (this.#partials === undefined || !this.children.includes(child)) {
      this.#refuse(
        'WRONG_CONTEXT',
        `${JSON.stringify(child)} is not a child aggregator of this one in round ${this.round}`,
      );
    }
    if (this.#closed) {
      this.#refuse(
        'WRONG_CONTEXT',
        `round ${this.round} is closed, the partial of ${JSON.stringify(child)} is late`,
      );
    }
    let done: ReturnType<PartialIntake['accept']>;
    try {
      done = this.#partials.accept(child, bytes);
    } catch (err) {
      // A later message of a refused partial is counted as out of context (its round is over for it).
      if (err instanceof BlockRejectedError) this.#counters.increment(err.reason);
      else if (err instanceof CohortError) this.#counters.increment('WRONG_CONTEXT');
      throw err;
    }
    if (done === undefined) return 'stored';
    for (const [i, c] of done.sites.entries()) this.#forwarded.set(c.site, done.siteManifests[i]!);
    return 'added';
  }

  /**
   * Cheap checks before any decoding or signature work, on the (not yet verified) header that
   * `readFrameHeader` read: it names `site` as its signer (`WRONG_SIGNER`), `site` is assigned here
   * this round (`WRONG_CONTEXT`, "not assigned here"), `site` is not already in the sum
   * (`DUPLICATE`) and the round still takes input (`WRONG_CONTEXT`).
   */
  precheck(site: string, headerSigner: string, what: string): void {
    if (headerSigner !== site) {
      this.#refuse(
        'WRONG_SIGNER',
        `${what} on the subject of ${JSON.stringify(site)} is signed by ${JSON.stringify(headerSigner)}`,
      );
    }
    if (!this.assigned.has(site)) {
      this.#refuse(
        'WRONG_CONTEXT',
        `site ${JSON.stringify(site)} is not assigned here in round ${this.round}`,
      );
    }
    if (this.#settled.has(site)) {
      this.#refuse('DUPLICATE', `site ${JSON.stringify(site)} already ${this.#settled.get(site)} this round`);
    }
    if (this.#closed) {
      this.#refuse(
        'WRONG_CONTEXT',
        `round ${this.round} is closed, ${what} of ${JSON.stringify(site)} is late`,
      );
    }
  }

  /** Verifies and stores one framed block of `site`; assembles the update once it is whole. */
  acceptBlock(site: string, bytes: Uint8Array): AcceptOutcome {
    const block = this.#verifier.verifyBlock(bytes);
    if (block.signer !== site)
      this.#refuse('WRONG_SIGNER', `block signed by ${JSON.stringify(block.signer)}`);
    const inbox = this.#inboxOf(site);
    if (this.#counted(() => inbox.addBlock(block)) === 'repeat') return 'repeat';
    let frames = this.#blockFrames.get(site);
    if (frames === undefined) {
      frames = new Map();
      this.#blockFrames.set(site, frames);
    }
    frames.set(block.blockIndex, bytes);
    return this.#tryAdd(site, inbox);
  }

  /** Verifies and stores the framed manifest of `site`; assembles the update once it is whole. */
  acceptManifest(site: string, bytes: Uint8Array): AcceptOutcome {
    const manifest = this.#verifier.verifyManifest(bytes);
    if (manifest.signer !== site) {
      this.#refuse('WRONG_SIGNER', `manifest signed by ${JSON.stringify(manifest.signer)}`);
    }
    if (manifest.contributors !== 1 || manifest.contributorList.length > 0) {
      this.#refuse('BAD_HEADER', `a site update has one contributor and lists none`);
    }
    const inbox = this.#inboxOf(site);
    if (this.#counted(() => inbox.addManifest(manifest)) === 'repeat') return 'repeat';
    this.#manifests.set(site, bytes);
    return this.#tryAdd(site, inbox);
  }

  /**
   * Closes the round and hands back what was summed with each summed site's framed manifest in
   * the same order (null when no update is complete). SEAL memory is freed either way.
   */
  close(): { aggregate: Aggregate; siteManifests: Uint8Array[] } | null {
    this.#closed = true;
    this.#inbox.clear();
    this.#blockFrames.clear();
    this.#partials?.close();
    if (this.#disposed) return null;
    this.#disposed = true;
    try {
      if (this.#builder.contributors === 0) return null;
      const aggregate = this.#builder.finish();
      // Its own sites' manifests as received, its children's sites' as they forwarded them.
      const manifestOf = (site: string) => this.#manifests.get(site) ?? this.#forwarded.get(site)!;
      return { aggregate, siteManifests: aggregate.sites.map((c) => manifestOf(c.site)) };
    } finally {
      this.#builder.dispose();
      this.#manifests.clear();
      this.#forwarded.clear();
    }
  }

  /** The digest and weight of `site`'s update once it is in the sum (what its receipt states). */
  addedUpdate(site: string): { readonly digest: Uint8Array; readonly weight: number } | undefined {
    return this.#added.get(site);
  }

  /**
   * The contribution of `site` once its update is in the sum: its manifest and blocks exactly as
   * received ({@link encodeContribution}), for the updates store. Handed out once.
   */
  takeContribution(site: string): Uint8Array | undefined {
    const bytes = this.#contributions.get(site);
    this.#contributions.delete(site);
    return bytes;
  }

  /** Closes without a result, freeing SEAL memory (superseded round, stop). */
  dispose(): void {
    this.#closed = true;
    this.#partials?.close();
    this.#forwarded.clear();
    this.#inbox.clear();
    this.#blockFrames.clear();
    this.#contributions.clear();
    if (!this.#disposed) {
      this.#disposed = true;
      this.#builder.dispose();
    }
  }

  #inboxOf(site: string): UpdateInbox {
    let inbox = this.#inbox.get(site);
    if (!inbox) {
      inbox = new UpdateInbox();
      this.#inbox.set(site, inbox);
    }
    return inbox;
  }

  /** Runs `fn`, counting a `BlockRejectedError` it throws. */
  #counted<T>(fn: () => T): T {
    try {
      return fn();
    } catch (err) {
      if (err instanceof BlockRejectedError) this.#counters.increment(err.reason);
      throw err;
    }
  }

  #tryAdd(site: string, inbox: UpdateInbox): AcceptOutcome {
    if (!inbox.whole) return 'stored';
    try {
      const update = inbox.assemble();
      this.#builder.add(update);
      this.#added.set(site, { digest: update.digest, weight: update.exampleWeight });
    } catch (err) {
      // A whole, signed update that cannot be summed (e.g. lane headroom): the site is out.
      this.#settled.set(site, 'failed');
      this.#inbox.delete(site);
      this.#blockFrames.delete(site);
      if (err instanceof BlockRejectedError) this.#counters.increment(err.reason);
      throw err;
    }
    this.#settled.set(site, 'added');
    this.#inbox.delete(site);
    const frames = this.#blockFrames.get(site)!;
    this.#blockFrames.delete(site);
    this.#contributions.set(
      site,
      encodeContribution({
        manifest: this.#manifests.get(site)!,
        blocks: [...frames.keys()].sort((a, b) => a - b).map((i) => frames.get(i)!),
      }),
    );
    return 'added';
  }

  #refuse(reason: BlockRejectReason, message: string): never {
    this.#counters.increment(reason);
    throw new BlockRejectedError(reason, message);
  }
}
