import { bytesEqual } from '../../crypto/digest/index.ts';
import type { LaneContext } from '../../crypto/lanes/index.ts';
import type { PublicSigningKey } from '../../crypto/signature/index.ts';
import type { SignatureAlgorithm } from '../config/index.ts';
import { BlockRejectedError, CohortError } from '../errors/index.ts';
import {
  AggregateBuilder,
  type Assignment,
  BlockVerifier,
  type Contributor,
  type CryptoTimingObserver,
  decodeManifestBody,
  type Encoding,
  FRAME_KIND,
  type RoundContext,
  RoundTree,
  signatureTimer,
  UpdateInbox,
  type UpdateManifest,
  unframe,
  type VerifiedManifest,
} from '../protocol/index.ts';

interface PartialInbox {
  readonly verifier: BlockVerifier;
  /** The aggregator's partial as it arrives (blocks and manifest, one update digest). */
  readonly update: UpdateInbox;
  /** Its block frames as received, by block index (the evidence should the partial be wrong). */
  readonly frames: Map<number, Uint8Array>;
}

/** What {@link PartialIntake.accept} reports about a whole partial. */
export interface AcceptedPartial {
  readonly aggregator: string;
  readonly sites: readonly Contributor[];
  /** The aggregator-signed manifest frame exactly as received (logged as the partial's evidence). */
  readonly manifest: Uint8Array;
  /** Each listed site's own framed manifest, in `sites` order (verified; a parent forwards them up). */
  readonly siteManifests: readonly Uint8Array[];
  /**
   * The partial's ciphertexts as verified (its signed Merkle root covers them): kept until the
   * round is decided, so the coordinator can re-add the listed contributions and compare when the
   * aggregate turns out wrong (`findCulprits`).
   */
  readonly ciphertexts: readonly Uint8Array[];
  /** The partial's block frames as received, in block-index order (signed by the aggregator). */
  readonly blocks: readonly Uint8Array[];
}

/**
 * The partial aggregates one parent of the aggregation tree takes in one round: the coordinator
 * (`parent` `''`, docs/round-protocol.md step 4) or an aggregator with child aggregators (see
 * `RoundTree`). Each child's blocks and manifest are verified with that child's key only (under
 * the partial-aggregate signature domain, at the size RoundOpen pinned), checked to list only sites
 * assigned to the child or to an aggregator below it, each listed site backed by its own signed
 * manifest for this round (forwarded up the tree: same digest, the weight RoundOpen pinned), and the
 * whole partial is added to the sum (a site counted twice is refused by `AggregateBuilder`).
 *
 * A refused block or manifest fails that child's partial for the round: the round goes on
 * with the others instead of waiting for the deadline, and later messages of that partial are
 * refused as `DUPLICATE`-free `ROUND_CLOSED` errors. {@link settled} is true once every child
 * delivered or failed.
 */
export class PartialIntake {
  readonly builder: AggregateBuilder;
  readonly #context: RoundContext;
  readonly #encoding: Encoding;
  readonly #assignment: ReadonlyMap<string, string>;
  readonly #tree: RoundTree;
  readonly #parent: string;
  readonly #weights: ReadonlyMap<string, number>;
  readonly #totalParams: number;
  readonly #maxCiphertextBytes: number;
  readonly #siteVerifier: BlockVerifier;
  readonly #aggregators: ReadonlySet<string>;
  readonly #keys: (id: string) => PublicSigningKey | undefined;
  readonly #ckksParamsId: Uint8Array;
  readonly #allowed: readonly SignatureAlgorithm[];
  readonly #timings: CryptoTimingObserver | undefined;
  readonly #inboxes = new Map<string, PartialInbox>();
  readonly #delivered = new Set<string>();
  readonly #failed = new Map<string, string>();
  readonly #accepted: AcceptedPartial[] = [];
  #closed = false;

  constructor(input: {
    ckks: LaneContext;
    context: RoundContext;
    encoding: Encoding;
    /** The RoundOpen's assignments: each site's aggregator and pinned example weight. */
    assignments: readonly Assignment[];
    /** Parameters of every update, pinned in RoundOpen. */
    totalParams: number;
    keys: (id: string) => PublicSigningKey | undefined;
    allowedAlgorithms: readonly SignatureAlgorithm[];
    /** Reports signature verifications (`partial`, `site-update`) and CKKS `load`/`add` of partials. */
    timings?: CryptoTimingObserver;
    /** The round's aggregation tree (`RoundTree.of(open)`); default: one level from `assignments`. */
    tree?: RoundTree;
    /** Whose children's partials this intake takes: `''` (default) the coordinator, else an aggregator. */
    parent?: string;
    /**
     * The sum to add partials to (an aggregator's round sum, holding its own sites too); default a
     * fresh one. The caller disposes it.
     */
    builder?: AggregateBuilder;
  }) {
    this.#context = input.context;
    this.#encoding = input.encoding;
    this.#assignment = new Map(input.assignments.map((a) => [a.site, a.aggregator]));
    this.#tree = input.tree ?? RoundTree.of({ assignments: input.assignments, deadlineUnixMs: 0 });
    this.#parent = input.parent ?? '';
    this.#weights = new Map(input.assignments.map((a) => [a.site, a.examples]));
    this.#totalParams = input.totalParams;
    this.#maxCiphertextBytes = input.ckks.maxCiphertextBytes;
    this.#aggregators = new Set(this.#tree.childrenOf(this.#parent));
    this.#keys = input.keys;
    this.#ckksParamsId = input.ckks.paramsId;
    this.#allowed = input.allowedAlgorithms;
    this.#timings = input.timings;
    // Sites' own manifests, forwarded inside partials: any assigned site's key, its pinned weight.
    this.#siteVerifier = new BlockVerifier({
      context: this.#context,
      ckksParamsId: this.#ckksParamsId,
      encoding: this.#encoding,
      keys: (signer) => (this.#assignment.has(signer) ? this.#keys(signer) : undefined),
      allowedAlgorithms: this.#allowed,
      kind: 'site-update',
      maxCiphertextBytes: this.#maxCiphertextBytes,
      pinned: { totalParams: this.#totalParams, weightOf: (site) => this.#weights.get(site) },
      onSignatureVerified: signatureTimer(input.timings, 'site-update'),
    });
    this.builder = input.builder ?? new AggregateBuilder(input.ckks, undefined, { timings: input.timings });
  }

  /** The children whose partials this intake waits for (aggregators with sites at or below them). */
  get aggregators(): ReadonlySet<string> {
    return this.#aggregators;
  }

  /** Children whose partial is in the sum. */
  get delivered(): ReadonlySet<string> {
    return this.#delivered;
  }

  /** Aggregators whose partial failed, with the reason. */
  get failed(): ReadonlyMap<string, string> {
    return this.#failed;
  }

  /**
   * Children whose partial is not in the sum, in tree order, each with why: its refusal, or
   * `absent` when none came.
   */
  undelivered(absent: string): { child: string; why: string }[] {
    return [...this.#aggregators]
      .filter((c) => !this.#delivered.has(c))
      .map((child) => ({ child, why: this.#failed.get(child) ?? absent }));
  }

  /** Every child delivered its partial or failed. */
  get settled(): boolean {
    return this.#delivered.size + this.#failed.size >= this.#aggregators.size;
  }

  /** The partials added to the sum, in the order they were accepted. */
  get accepted(): readonly AcceptedPartial[] {
    return this.#accepted;
  }

  /** Stops accepting (the round moved on to PREPARE). */
  close(): void {
    this.#closed = true;
    this.#inboxes.clear();
  }

  /**
   * One framed block or manifest of `aggregator`'s partial. Returns the partial once its manifest
   * completed it, else undefined. Throws (a `CohortError` with the reason) when refused; the first
   * refusal of a message of an assigned aggregator fails its partial for the round.
   */
  accept(aggregator: string, data: Uint8Array): AcceptedPartial | undefined {
    if (this.#closed) {
      throw new CohortError('ROUND_CLOSED', `round ${this.#context.round} no longer collects partials`);
    }
    if (!this.#aggregators.has(aggregator)) {
      throw new BlockRejectedError(
        'WRONG_SIGNER',
        `${aggregator} is not ${this.#parent === '' ? 'an aggregator' : `a child of ${this.#parent}`} in round ${this.#context.round}`,
      );
    }
    if (this.#delivered.has(aggregator)) {
      throw new BlockRejectedError(
        'DUPLICATE',
        `the partial of ${aggregator} for round ${this.#context.round} is already in`,
      );
    }
    const failure = this.#failed.get(aggregator);
    if (failure !== undefined) {
      throw new CohortError(
        'PARTIAL_FAILED',
        `the partial of ${aggregator} for round ${this.#context.round} was refused earlier (${failure})`,
      );
    }
    try {
      return this.#accept(aggregator, data);
    } catch (err) {
      // A frame of an earlier round (a retry that outlived it, e.g. across a coordinator restart) is
      // refused but does not fail this round's partial: the aggregator is struck for a failed one.
      if (isEarlierRound(err, this.#context.round)) throw err;
      const reason =
        err instanceof BlockRejectedError ? err.reason : err instanceof CohortError ? err.code : 'ERROR';
      this.#failed.set(aggregator, `${reason}: ${(err as Error).message}`);
      this.#inboxes.delete(aggregator);
      throw err;
    }
  }

  #accept(aggregator: string, data: Uint8Array): AcceptedPartial | undefined {
    let inbox = this.#inboxes.get(aggregator);
    if (inbox === undefined) {
      const key = this.#keys(aggregator);
      inbox = {
        verifier: new BlockVerifier({
          context: this.#context,
          ckksParamsId: this.#ckksParamsId,
          encoding: this.#encoding,
          // Only this aggregator's key: a partial on its subject signed by anyone else is WRONG_SIGNER.
          keys: (signer) => (signer === aggregator ? key : undefined),
          allowedAlgorithms: this.#allowed,
          kind: 'partial',
          maxCiphertextBytes: this.#maxCiphertextBytes,
          pinned: { totalParams: this.#totalParams },
          onSignatureVerified: signatureTimer(this.#timings, 'partial'),
        }),
        update: new UpdateInbox(),
        frames: new Map(),
      };
      this.#inboxes.set(aggregator, inbox);
    }
    const kind = data[5];
    if (kind === FRAME_KIND.block) {
      const block = inbox.verifier.verifyBlock(data);
      inbox.update.addBlock(block);
      inbox.frames.set(block.blockIndex, data.slice());
      return undefined;
    }
    if (kind !== FRAME_KIND.manifest) {
      throw new BlockRejectedError('MALFORMED', `frame kind ${String(kind)} on the partial subject`);
    }
    if (data.length > inbox.verifier.maxManifestBytes) {
      throw new BlockRejectedError(
        'OVERSIZE',
        `manifest of ${data.length} bytes, at most ${inbox.verifier.maxManifestBytes}`,
      );
    }
    // The list first, from the unverified header (map lookups), then the one signature, then the
    // sites' own signatures: cheapest first.
    this.#checkListed(aggregator, decodeManifestBody(unframe(data, FRAME_KIND.manifest)));
    const manifest = inbox.verifier.verifyManifest(data);
    this.#checkSiteManifests(aggregator, manifest);
    inbox.update.addManifest(manifest);
    const update = inbox.update.assemble();
    this.builder.add(update);
    this.#delivered.add(aggregator);
    this.#inboxes.delete(aggregator);
    const accepted: AcceptedPartial = {
      aggregator,
      sites: update.sites,
      manifest: data.slice(),
      siteManifests: manifest.siteManifests.map((m) => m.slice()),
      ciphertexts: update.ciphertexts,
      blocks: [...inbox.frames.keys()].sort((a, b) => a - b).map((i) => inbox.frames.get(i)!),
    };
    this.#accepted.push(accepted);
    return accepted;
  }

  /** A partial lists at least one site, each assigned to `aggregator` or to an aggregator below it. */
  #checkListed(aggregator: string, manifest: UpdateManifest): void {
    if (manifest.contributorList.length === 0) {
      throw new BlockRejectedError('BAD_HEADER', `the partial of ${aggregator} lists no contributors`);
    }
    const foreign = manifest.contributorList.filter((c) => {
      const own = this.#assignment.get(c.site);
      return own === undefined || this.#tree.childTowards(this.#parent, own) !== aggregator;
    });
    if (foreign.length > 0) {
      throw new BlockRejectedError(
        'WRONG_CONTEXT',
        `the partial of ${aggregator} lists ${foreign.map((c) => c.site).join(', ')}, not assigned to it or below it in round ${this.#context.round}`,
      );
    }
  }

  /**
   * Every site a partial lists must be backed by that site's own signed manifest for this round,
   * forwarded by the aggregator: it names the listed digest and the weight RoundOpen pinned. An
   * aggregator cannot list a site that sent nothing, nor another update than the site signed, nor
   * a weight of its own choosing.
   */
  #checkSiteManifests(aggregator: string, manifest: VerifiedManifest): void {
    const list = manifest.contributorList;
    if (manifest.siteManifests.length !== list.length) {
      throw new BlockRejectedError(
        'BAD_HEADER',
        `the partial of ${aggregator} lists ${list.length} sites and forwards ${manifest.siteManifests.length} site manifests`,
      );
    }
    list.forEach((c, i) => {
      const own = this.#siteVerifier.verifyManifest(manifest.siteManifests[i]!);
      if (own.signer !== c.site) {
        throw new BlockRejectedError(
          'WRONG_SIGNER',
          `the partial of ${aggregator} lists ${c.site} with the manifest of ${own.signer}`,
        );
      }
      if (!bytesEqual(own.updateDigest, c.digest) || own.exampleWeight !== c.weight) {
        throw new BlockRejectedError(
          'DIGEST_MISMATCH',
          `the partial of ${aggregator} lists ${c.site} with another digest or weight than ${c.site} signed`,
        );
      }
    });
  }
}

function isEarlierRound(err: unknown, round: number): boolean {
  if (!(err instanceof BlockRejectedError) || err.reason !== 'WRONG_CONTEXT') return false;
  const of = err.details['round'];
  return typeof of === 'number' && of < round;
}
