import type { CkksContext } from '../../../crypto/ckks/index.ts';
import { bytesEqual } from '../../../crypto/digest/index.ts';
import type { PublicSigningKey } from '../../../crypto/signature/index.ts';
import type { SignatureAlgorithm } from '../../config/index.ts';
import { BlockRejectedError, CohortError } from '../../errors/index.ts';
import {
  AggregateBuilder,
  type Assignment,
  BlockVerifier,
  type Contributor,
  type CryptoTimingObserver,
  type Encoding,
  FRAME_KIND,
  type RoundContext,
  signatureTimer,
  UpdateInbox,
  type VerifiedManifest,
} from '../../protocol/index.ts';

interface PartialInbox {
  readonly verifier: BlockVerifier;
  /** The aggregator's partial as it arrives (blocks and manifest, one update digest). */
  readonly update: UpdateInbox;
}

/** What {@link PartialIntake.accept} reports about a whole partial. */
export interface AcceptedPartial {
  readonly aggregator: string;
  readonly sites: readonly Contributor[];
  /** The aggregator-signed manifest frame exactly as received (logged as the partial's evidence). */
  readonly manifest: Uint8Array;
}

/**
 * The partial aggregates of one round at the coordinator (docs/round-protocol.md step 4): each
 * assigned aggregator's blocks and manifest are verified with that aggregator's key only (under the
 * partial-aggregate signature domain, at the size RoundOpen pinned), checked to list only sites
 * assigned to it, each listed site backed by its own signed manifest for this round (forwarded by
 * the aggregator: same digest, the weight RoundOpen pinned), and the whole partial is added to the
 * round's sum (a site counted twice is refused by `AggregateBuilder`).
 *
 * A refused block or manifest fails that aggregator's partial for the round: the round goes on
 * with the others instead of waiting for the deadline, and later messages of that partial are
 * refused as `DUPLICATE`-free `ROUND_CLOSED` errors. {@link settled} is true once every assigned
 * aggregator delivered or failed.
 */
export class PartialIntake {
  readonly builder: AggregateBuilder;
  readonly #context: RoundContext;
  readonly #encoding: Encoding;
  readonly #assignment: ReadonlyMap<string, string>;
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
    ckks: CkksContext;
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
  }) {
    this.#context = input.context;
    this.#encoding = input.encoding;
    this.#assignment = new Map(input.assignments.map((a) => [a.site, a.aggregator]));
    this.#weights = new Map(input.assignments.map((a) => [a.site, a.examples]));
    this.#totalParams = input.totalParams;
    this.#maxCiphertextBytes = input.ckks.maxCiphertextBytes;
    this.#aggregators = new Set(this.#assignment.values());
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
      participants: input.assignments.length,
      pinned: { totalParams: this.#totalParams, weightOf: (site) => this.#weights.get(site) },
      onSignatureVerified: signatureTimer(input.timings, 'site-update'),
    });
    this.builder = new AggregateBuilder(input.ckks, undefined, { timings: input.timings });
  }

  /** Aggregators assigned sites this round. */
  get aggregators(): ReadonlySet<string> {
    return this.#aggregators;
  }

  /** Aggregators whose partial failed, with the reason. */
  get failed(): ReadonlyMap<string, string> {
    return this.#failed;
  }

  /** Every assigned aggregator delivered its partial or failed. */
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
        `${aggregator} is not an aggregator of round ${this.#context.round}`,
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
          participants: this.#assignment.size,
          pinned: { totalParams: this.#totalParams },
          onSignatureVerified: signatureTimer(this.#timings, 'partial'),
        }),
        update: new UpdateInbox(),
      };
      this.#inboxes.set(aggregator, inbox);
    }
    const kind = data[5];
    if (kind === FRAME_KIND.block) {
      inbox.update.addBlock(inbox.verifier.verifyBlock(data));
      return undefined;
    }
    if (kind !== FRAME_KIND.manifest) {
      throw new BlockRejectedError('MALFORMED', `frame kind ${String(kind)} on the partial subject`);
    }
    const manifest = inbox.verifier.verifyManifest(data);
    if (manifest.contributorList.length === 0) {
      throw new BlockRejectedError('BAD_HEADER', `the partial of ${aggregator} lists no contributors`);
    }
    const foreign = manifest.contributorList.filter((c) => this.#assignment.get(c.site) !== aggregator);
    if (foreign.length > 0) {
      throw new BlockRejectedError(
        'WRONG_CONTEXT',
        `the partial of ${aggregator} lists ${foreign.map((c) => c.site).join(', ')}, not assigned to it in round ${this.#context.round}`,
      );
    }
    this.#checkSiteManifests(aggregator, manifest);
    inbox.update.addManifest(manifest);
    const update = inbox.update.assemble();
    this.builder.add(update);
    this.#delivered.add(aggregator);
    this.#inboxes.delete(aggregator);
    const accepted: AcceptedPartial = { aggregator, sites: update.sites, manifest: data.slice() };
    this.#accepted.push(accepted);
    return accepted;
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
