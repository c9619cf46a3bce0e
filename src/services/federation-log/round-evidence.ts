import { bytesEqual } from '../../../crypto/digest/index.ts';
import type { PublicSigningKey } from '../../../crypto/signature/index.ts';
import {
  BlockVerifier,
  type Contributor,
  type ControlBodies,
  type DecisionBody,
  decodeManifestBody,
  FRAME_KIND,
  openControl,
  type PartialRecordBody,
  RoundTree,
  readControl,
  type UpdateManifest,
  unframe,
  type VoteBatchBody,
  type VoteRecordBody,
} from '../../protocol/index.ts';
import type { LogEntry } from './log-entry.ts';

/**
 * Stable codes of the evidence rules (partial and vote records and what a decision must agree
 * with); the audit reports each under this code. A history refusal carries it in
 * `details.rule`, and the sequence of the record at fault in `details.at`.
 */
export type EvidenceRule =
  | 'PARTIAL_INVALID'
  | 'VOTE_INVALID'
  | 'VOTE_MODEL_MISMATCH'
  | 'CONTRIBUTION_MISSING'
  | 'CONTRIBUTION_DUPLICATE'
  | 'CONTRIBUTION_MISMATCH'
  | 'DECISION_INVALID';

/** A broken evidence rule: which, at which record, why. */
export class EvidenceViolation extends Error {
  readonly rule: EvidenceRule;
  /** Log sequence of the record at fault. */
  readonly at: number;

  constructor(rule: EvidenceRule, at: number, message: string) {
    super(message);
    this.rule = rule;
    this.at = at;
  }
}

/** A partial aggregate the log recorded, decoded (its signatures checked when keys were known). */
export interface LoggedPartial {
  readonly entry: LogEntry;
  readonly aggregator: string;
  /** The aggregator's manifest, decoded. */
  readonly manifest: UpdateManifest;
  /** The sites it lists (its `contributorList`). */
  readonly sites: readonly Contributor[];
  /** Each listed site's own manifest, decoded, in list order. */
  readonly siteManifests: readonly UpdateManifest[];
}

/** A vote the log recorded, decoded (its signature checked when keys were known). */
export interface LoggedVote {
  /** The entry that holds it: its own vote record, or a batch of votes. */
  readonly entry: LogEntry;
  readonly member: string;
  readonly vote: ControlBodies['vote'];
}

/** Who may sign what: member keys in force and roles (absent: structure only, no signature checked). */
export interface EvidenceKeys {
  key(id: string): PublicSigningKey | undefined;
  role(id: string): string | undefined;
}

const ALGORITHMS = ['falcon-512', 'ml-dsa-65'] as const;

/**
 * The evidence one open round has gathered in the log: its partial records (appended as the
 * coordinator accepted each partial, before PREPARE) and its votes (vote records or batches,
 * appended before the decision). Checks each record as it is applied, and a decision against all of them. In a round
 * whose tree is deeper than one level (RoundOpen's `parents`), only the coordinator's children's
 * partials are logged, each listing the sites anywhere below it with their own signed manifests.
 */
export class RoundEvidence {
  readonly open: ControlBodies['round-open'];
  readonly partials: LoggedPartial[] = [];
  readonly votes = new Map<string, LoggedVote>();
  /** Site → the partial entry that lists it. */
  readonly #listed = new Map<string, LoggedPartial>();
  readonly #assigned: ReadonlyMap<string, { aggregator: string; examples: number }>;
  /** The round's aggregation tree, or why RoundOpen's `parents` do not form one. */
  readonly #tree: RoundTree | string;

  constructor(open: ControlBodies['round-open']) {
    this.open = open;
    this.#assigned = new Map(
      open.assignments.map((a) => [a.site, { aggregator: a.aggregator, examples: a.examples }]),
    );
    let tree: RoundTree | string;
    try {
      tree = RoundTree.of(open);
    } catch (err) {
      tree = (err as Error).message;
    }
    this.#tree = tree;
  }

  /** Whether any partial or vote was recorded. */
  get any(): boolean {
    return this.partials.length > 0 || this.votes.size > 0;
  }

  #context() {
    return {
      federation: this.open.federation,
      round: this.open.round,
      baseCommit: this.open.baseCommit,
      version: this.open.version,
    };
  }

  addPartial(entry: LogEntry, p: PartialRecordBody, keys: EvidenceKeys | undefined): LoggedPartial {
    const at = entry.sequence;
    const bad = (rule: EvidenceRule, why: string) =>
      new EvidenceViolation(rule, at, `partial of round ${p.round}: ${why}`);
    this.#checkAttempt(p.round, p.attempt, (why) => bad('PARTIAL_INVALID', why));
    if (this.votes.size > 0) throw bad('PARTIAL_INVALID', 'logged after a vote (partials precede PREPARE)');
    let manifest: UpdateManifest;
    try {
      manifest = decodeManifestBody(unframe(p.manifest, FRAME_KIND.manifest));
    } catch (err) {
      throw bad('PARTIAL_INVALID', `its manifest does not decode: ${(err as Error).message}`);
    }
    const ctx = this.#context();
    if (
      manifest.federation !== ctx.federation ||
      manifest.round !== ctx.round ||
      manifest.version !== ctx.version ||
      !bytesEqual(manifest.baseCommit, ctx.baseCommit)
    ) {
      throw bad('PARTIAL_INVALID', 'its manifest is for another federation, round or base commit');
    }
    if (manifest.signer !== p.aggregator) {
      throw bad('PARTIAL_INVALID', `names ${p.aggregator}, its manifest is signed by ${manifest.signer}`);
    }
    const tree = this.#tree;
    if (typeof tree === 'string') throw bad('PARTIAL_INVALID', `its RoundOpen names no valid tree: ${tree}`);
    if (this.partials.some((q) => q.aggregator === p.aggregator)) {
      throw bad('PARTIAL_INVALID', `a second partial of ${p.aggregator}`);
    }
    const list = manifest.contributorList;
    if (list.length === 0 || list.length !== manifest.contributors) {
      throw bad('PARTIAL_INVALID', `lists ${list.length} sites for ${manifest.contributors} contributors`);
    }
    const seen = new Set<string>();
    for (const c of list) {
      const earlier = this.#listed.get(c.site);
      if (seen.has(c.site) || earlier !== undefined) {
        throw bad(
          'CONTRIBUTION_DUPLICATE',
          `${p.aggregator} lists ${c.site}${earlier ? `, already listed by ${earlier.aggregator} at entry ${earlier.entry.sequence}` : ' twice'}`,
        );
      }
      seen.add(c.site);
      // Only the coordinator's children send it partials; each lists the sites at or below it.
      const own = this.#assigned.get(c.site)?.aggregator;
      if (own === undefined || tree.childTowards('', own) !== p.aggregator) {
        throw bad(
          'PARTIAL_INVALID',
          `${p.aggregator} lists ${c.site}, not assigned to it or below it in RoundOpen`,
        );
      }
    }
    if (manifest.siteManifests.length !== list.length) {
      throw bad(
        'CONTRIBUTION_MISMATCH',
        `lists ${list.length} sites and carries ${manifest.siteManifests.length} site manifests`,
      );
    }
    const siteManifests = list.map((c, i) => {
      let own: UpdateManifest;
      try {
        own = decodeManifestBody(unframe(manifest.siteManifests[i]!, FRAME_KIND.manifest));
      } catch (err) {
        throw bad(
          'CONTRIBUTION_MISMATCH',
          `the manifest of ${c.site} does not decode: ${(err as Error).message}`,
        );
      }
      const pinned = this.#assigned.get(c.site)!.examples;
      if (own.signer !== c.site) {
        throw bad('CONTRIBUTION_MISMATCH', `lists ${c.site} with the manifest of ${own.signer}`);
      }
      if (!bytesEqual(own.updateDigest, c.digest) || own.exampleWeight !== c.weight || c.weight !== pinned) {
        throw bad(
          'CONTRIBUTION_MISMATCH',
          `lists ${c.site} with another digest or weight than ${c.site} signed (or RoundOpen pinned)`,
        );
      }
      return own;
    });
    if (keys !== undefined) this.#verifyPartial(p, manifest, keys, bad);
    const logged: LoggedPartial = { entry, aggregator: p.aggregator, manifest, sites: list, siteManifests };
    this.partials.push(logged);
    for (const c of list) this.#listed.set(c.site, logged);
    return logged;
  }

  #verifyPartial(
    p: PartialRecordBody,
    manifest: UpdateManifest,
    keys: EvidenceKeys,
    bad: (rule: EvidenceRule, why: string) => EvidenceViolation,
  ): void {
    const common = {
      context: this.#context(),
      ckksParamsId: manifest.encoding.ckksParamsId,
      allowedAlgorithms: ALGORITHMS,
      participants: this.open.assignments.length,
    };
    try {
      new BlockVerifier({
        ...common,
        keys: (id) => (id === p.aggregator && keys.role(id) === 'aggregator' ? keys.key(id) : undefined),
        kind: 'partial',
        pinned: { totalParams: this.open.totalParams },
      }).verifyManifest(p.manifest);
    } catch (err) {
      throw bad(
        'PARTIAL_INVALID',
        `the signature of ${p.aggregator} does not verify: ${(err as Error).message}`,
      );
    }
    const sites = new BlockVerifier({
      ...common,
      keys: (id) => (this.#assigned.has(id) && keys.role(id) === 'site' ? keys.key(id) : undefined),
      kind: 'site-update',
      pinned: { totalParams: this.open.totalParams, weightOf: (s) => this.#assigned.get(s)?.examples },
    });
    manifest.contributorList.forEach((c, i) => {
      try {
        sites.verifyManifest(manifest.siteManifests[i]!);
      } catch (err) {
        throw bad(
          'CONTRIBUTION_MISMATCH',
          `the manifest of ${c.site} does not verify: ${(err as Error).message}`,
        );
      }
    });
  }

  /** A vote record (one vote in its own entry, as coordinators logged votes before batches). */
  addVote(entry: LogEntry, v: VoteRecordBody, keys: EvidenceKeys | undefined): LoggedVote {
    const bad = (why: string) =>
      new EvidenceViolation('VOTE_INVALID', entry.sequence, `vote of round ${v.round}: ${why}`);
    this.#checkAttempt(v.round, v.attempt, bad);
    const logged = this.#checkVote(entry, v.member, v.envelope, v.round, keys, bad);
    this.votes.set(v.member, logged);
    return logged;
  }

  /**
   * A batch of votes in one entry: each vote is checked exactly as {@link addVote} checks a vote
   * record of the batch's round and attempt (a second vote of a member, within the batch or after
   * an earlier record, included). All or nothing: a batch with any refused vote (or none) adds none.
   */
  addVotes(entry: LogEntry, b: VoteBatchBody, keys: EvidenceKeys | undefined): LoggedVote[] {
    const bad = (why: string) =>
      new EvidenceViolation('VOTE_INVALID', entry.sequence, `votes of round ${b.round}: ${why}`);
    this.#checkAttempt(b.round, b.attempt, bad);
    if (b.votes.length === 0) throw bad('the batch holds no vote');
    const batch = new Map<string, LoggedVote>();
    for (const v of b.votes) {
      if (batch.has(v.member)) throw bad(`a second vote of ${v.member}`);
      batch.set(v.member, this.#checkVote(entry, v.member, v.envelope, b.round, keys, bad));
    }
    for (const [member, logged] of batch) this.votes.set(member, logged);
    return [...batch.values()];
  }

  /** One vote's envelope: signed by `member` (a site, when keys are known), for this round and attempt, its first. */
  #checkVote(
    entry: LogEntry,
    member: string,
    envelope: Uint8Array,
    round: number,
    keys: EvidenceKeys | undefined,
    bad: (why: string) => EvidenceViolation,
  ): LoggedVote {
    let vote: ControlBodies['vote'];
    try {
      if (keys === undefined) {
        const read = readControl(envelope, 'vote');
        if (read.signer !== member) throw new Error(`signed by ${read.signer}`);
        vote = read.body;
      } else {
        if (keys.role(member) !== 'site') throw new Error(`${member} is not a site of the registry`);
        vote = openControl(envelope, 'vote', (id) => keys.key(id), { signer: member }).body;
      }
    } catch (err) {
      throw bad(`the envelope of ${member} is refused: ${(err as Error).message}`);
    }
    if (vote.member !== member || vote.federation !== this.open.federation || vote.round !== round) {
      throw bad(`the envelope of ${member} is for another member, federation or round`);
    }
    if (!bytesEqual(vote.attempt, this.open.attempt)) throw bad(`${member} voted on another attempt`);
    if (this.votes.has(member)) throw bad(`a second vote of ${member}`);
    return { entry, member, vote };
  }

  #checkAttempt(round: number, attempt: Uint8Array, bad: (why: string) => EvidenceViolation): void {
    if (round !== this.open.round) throw bad(`round ${this.open.round} is open`);
    if (!bytesEqual(attempt, this.open.attempt)) throw bad('names another attempt of the round');
  }

  /**
   * A decision against this round's evidence. `strict`: the log records evidence (this round or an
   * earlier one did), so every voter needs a logged vote and every contributor a logged partial;
   * otherwise (a log written before evidence was recorded) nothing is required.
   */
  checkDecision(entry: LogEntry, d: DecisionBody, strict: boolean): void {
    if (!strict) return;
    const at = entry.sequence;
    const bad = (rule: EvidenceRule, why: string, where = at) =>
      new EvidenceViolation(rule, where, `${d.commit ? 'COMMIT' : 'ABORT'} of round ${d.round}: ${why}`);
    for (const voter of d.voters) {
      if (!this.votes.has(voter))
        throw bad('DECISION_INVALID', `names voter ${voter}, who has no logged vote`);
    }
    if (!d.commit) return;
    if (d.voters.length === 0) throw bad('DECISION_INVALID', 'names no voter');
    const voters = new Set(d.voters);
    for (const v of this.votes.values()) {
      if (!voters.has(v.member)) {
        throw bad(
          'DECISION_INVALID',
          `leaves out ${v.member}, whose vote is logged at entry ${v.entry.sequence}`,
        );
      }
      // An abstention (not YES, no objection: the voter could not read what it needs) is no NO.
      if (!v.vote.yes && v.vote.abstain === true) continue;
      if (!v.vote.yes) {
        throw bad('DECISION_INVALID', `${v.member} voted NO at entry ${v.entry.sequence}`);
      }
      if (!bytesEqual(v.vote.modelHash, d.modelHash) || !bytesEqual(v.vote.commitHash, d.commitHash)) {
        throw bad(
          'VOTE_MODEL_MISMATCH',
          `the YES of ${v.member} at entry ${v.entry.sequence} names another H(w′) or commit than the decision`,
          v.entry.sequence,
        );
      }
    }
    // Abstentions count among the voters, not for the candidate: a COMMIT needs a strict majority
    // of its voters to have voted YES, as the coordinator's judge does.
    const yes = d.voters.filter((v) => this.votes.get(v)?.vote.yes === true).length;
    if (yes * 2 <= d.voters.length) {
      throw bad('DECISION_INVALID', `${yes} of its ${d.voters.length} voters voted YES: not a majority`);
    }
    if (d.kind === 'rollback') return;
    const named = d.aggregate?.contributors ?? [];
    const seen = new Set<string>();
    for (const c of named) {
      if (seen.has(c.site)) throw bad('CONTRIBUTION_DUPLICATE', `counts ${c.site} twice`);
      seen.add(c.site);
      const listed = this.#listed.get(c.site);
      const own = listed?.sites.find((s) => s.site === c.site);
      if (own === undefined || !bytesEqual(own.digest, c.digest) || own.weight !== c.weight) {
        throw bad(
          'CONTRIBUTION_MISMATCH',
          `names ${c.site}${own === undefined ? ', which no logged partial lists' : ' with another digest or weight than its logged partial'}`,
        );
      }
    }
    for (const [site, partial] of this.#listed) {
      if (!seen.has(site)) {
        throw bad(
          'CONTRIBUTION_MISSING',
          `leaves out ${site}, listed by the partial of ${partial.aggregator} at entry ${partial.entry.sequence}`,
        );
      }
    }
  }
}
