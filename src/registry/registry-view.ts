import type { PublicSigningKey } from '../../crypto/signature/index.ts';
import type { RegistryChangeBody } from './registry-change.ts';
import type { MemberRegistry, RegistryRole } from './registry-codec.ts';
import { RegistryError } from './registry-error.ts';

/** A member's keys from one round on. */
export interface KeyEpoch {
  readonly fromRound: number;
  readonly signingKey: PublicSigningKey;
  /** A site's raw ML-KEM-768 key for this epoch (the previous one when a rotation kept it). */
  readonly kemKey: Uint8Array | undefined;
}

/** What the view knows of one member. */
export interface MemberKeys {
  readonly id: string;
  readonly role: RegistryRole;
  /** Oldest first; `fromRound` strictly increasing. */
  readonly epochs: readonly KeyEpoch[];
  readonly nkey: string | undefined;
  /** The round from which it is refused, when revoked. */
  readonly revokedFrom: number | undefined;
}

/** A change folded into the view, and the log entry that held it (0 when not from a log). */
export interface AppliedRegistryChange {
  readonly change: RegistryChangeBody;
  readonly sequence: number;
}

interface MutableMember {
  id: string;
  role: RegistryRole;
  epochs: KeyEpoch[];
  nkey: string | undefined;
  revokedFrom: number | undefined;
}

/**
 * The registry as of the log: the pinned registry with every logged enroll, rotate and revoke
 * folded in. A member's key for round r is the key of its latest enrollment or rotation whose
 * `fromRound` ≤ r; a member revoked from round r has no key for any round ≥ r. `round` is the
 * round the member's log view is at (the open round, else the one after the last decided), set by
 * whoever folds the log ({@link setRound}); {@link current} answers for it, or with the latest
 * keys while it is unknown.
 */
export class RegistryView {
  readonly federation: string;
  /** The officer key that signs changes (undefined for a view without a signed registry). */
  readonly officerKey: PublicSigningKey | undefined;
  readonly #members = new Map<string, MutableMember>();
  readonly #changes: AppliedRegistryChange[] = [];
  #round: number | undefined;

  private constructor(federation: string, officerKey: PublicSigningKey | undefined) {
    this.federation = federation;
    this.officerKey = officerKey;
  }

  /** The view of a verified registry, before any logged change. */
  static fromRegistry(registry: MemberRegistry): RegistryView {
    const view = new RegistryView(registry.federation, registry.officerKey);
    for (const m of registry.members) {
      view.#members.set(m.id, {
        id: m.id,
        role: m.role,
        epochs: [{ fromRound: m.validFromRound, signingKey: m.signingKey, kemKey: m.kemKey }],
        nkey: m.nkey,
        revokedFrom: undefined,
      });
    }
    return view;
  }

  /**
   * A view of bare public keys (the `.pub` folder of older configurations): valid from the start,
   * no officer, so no change can be applied.
   */
  static fromKeys(
    federation: string,
    keys: ReadonlyMap<string, PublicSigningKey>,
    roleOf: (id: string) => RegistryRole | undefined,
  ): RegistryView {
    const view = new RegistryView(federation, undefined);
    for (const [id, key] of keys) {
      const role = roleOf(id);
      if (role === undefined) continue;
      view.#members.set(id, {
        id,
        role,
        epochs: [{ fromRound: 0, signingKey: key, kemKey: undefined }],
        nkey: undefined,
        revokedFrom: undefined,
      });
    }
    return view;
  }

  /** An independent copy (a coordinator checks a request against pending changes on it). */
  clone(): RegistryView {
    const view = new RegistryView(this.federation, this.officerKey);
    for (const [id, m] of this.#members) view.#members.set(id, { ...m, epochs: [...m.epochs] });
    view.#changes.push(...this.#changes);
    view.#round = this.#round;
    return view;
  }

  /** The round the log view is at (undefined: unknown, {@link current} gives the latest keys). */
  get round(): number | undefined {
    return this.#round;
  }

  /** Moves the view to `round` (the open round, or the one after the last decided). */
  setRound(round: number): void {
    this.#round = round;
  }

  /** Changes folded in so far, in log order. */
  get changes(): readonly AppliedRegistryChange[] {
    return this.#changes;
  }

  /** Ids of every member the view knows (revoked ones included), sorted. */
  ids(): string[] {
    return [...this.#members.keys()].sort();
  }

  /** What the view knows of `id`. */
  member(id: string): MemberKeys | undefined {
    return this.#members.get(id);
  }

  role(id: string): RegistryRole | undefined {
    return this.#members.get(id)?.role;
  }

  /** The epoch of `id` valid for `round` (undefined: unknown, not yet enrolled, or revoked). */
  epochFor(id: string, round: number): KeyEpoch | undefined {
    const m = this.#members.get(id);
    if (m === undefined) return undefined;
    if (m.revokedFrom !== undefined && round >= m.revokedFrom) return undefined;
    let found: KeyEpoch | undefined;
    for (const e of m.epochs) if (e.fromRound <= round) found = e;
    return found;
  }

  /** The public signing key of `id` for `round`, if it has one then. */
  keyFor(id: string, round: number): PublicSigningKey | undefined {
    return this.epochFor(id, round)?.signingKey;
  }

  /** The public signing key of `id` for the view's round ({@link round}; latest when unknown). */
  current(id: string): PublicSigningKey | undefined {
    return this.keyFor(id, this.#round ?? Number.MAX_SAFE_INTEGER);
  }

  /** The raw ML-KEM-768 key of site `id` for the view's round. */
  currentKemKey(id: string): Uint8Array | undefined {
    return this.epochFor(id, this.#round ?? Number.MAX_SAFE_INTEGER)?.kemKey;
  }

  /** Whether `id` is revoked at `round` (default: the view's round; any revocation when unknown). */
  isRevoked(id: string, round: number | undefined = this.#round): boolean {
    const from = this.#members.get(id)?.revokedFrom;
    return from !== undefined && (round === undefined || round >= from);
  }

  /**
   * Why `change` cannot apply to this view as the change of round `nextRound` (`exact`: its
   * `fromRound` must be `nextRound`, as in the log; otherwise at least `nextRound`, as a request
   * queued for a later round), or null. The federation must match; an enrollment names a new id
   * and no coordinator; a rotation or revocation names an enrolled, unrevoked member other than the
   * coordinator (whose key signs the log: re-issue the registry to change it), with its role; a
   * rotation brings a new signing key, from a round after its current key's.
   */
  problem(change: RegistryChangeBody, nextRound: number, exact: boolean): string | null {
    const c = change;
    if (c.federation !== this.federation) {
      return `${c.kind} ${c.member} is for federation ${JSON.stringify(c.federation)}, not ${this.federation}`;
    }
    if (exact ? c.fromRound !== nextRound : c.fromRound < nextRound) {
      return `${c.kind} ${c.member} from round ${c.fromRound}: the next round is ${nextRound}${exact ? '' : ' (a change cannot reach into the past)'}`;
    }
    const m = this.#members.get(c.member);
    if (c.kind === 'enroll') {
      if (m !== undefined) {
        return `enroll ${c.member}: already in the registry${m.revokedFrom !== undefined ? ' (revoked: a revoked id is never reused)' : ''}`;
      }
      if (c.role === 'coordinator') return `enroll ${c.member}: the federation has its coordinator`;
      return null;
    }
    if (m === undefined) return `${c.kind} ${c.member}: not in the registry`;
    if (m.revokedFrom !== undefined) return `${c.kind} ${c.member}: revoked from round ${m.revokedFrom}`;
    if (m.role !== c.role) return `${c.kind} ${c.member}: it is a ${m.role}, not a ${c.role}`;
    if (m.role === 'coordinator') {
      return `${c.kind} ${c.member}: the coordinator's key signs the log; issue a new registry instead`;
    }
    if (c.kind === 'rotate') {
      const last = m.epochs[m.epochs.length - 1]!;
      if (c.fromRound <= last.fromRound) {
        return `rotate ${c.member} from round ${c.fromRound}: its current key is valid from round ${last.fromRound}`;
      }
      if (m.epochs.some((e) => e.signingKey.keyId === c.signingKey!.keyId)) {
        return `rotate ${c.member}: key ${c.signingKey!.keyId} was already used`;
      }
    }
    return null;
  }

  /**
   * Folds `change` in (see {@link problem}; `nextRound` and `exact` as there).
   *
   * @throws RegistryError `REGISTRY_CHANGE_REFUSED` naming the problem; the view is unchanged.
   */
  apply(change: RegistryChangeBody, nextRound: number, exact: boolean, sequence = 0): void {
    const problem = this.problem(change, nextRound, exact);
    if (problem !== null) {
      throw new RegistryError('REGISTRY_CHANGE_REFUSED', problem, {
        details: { member: change.member, kind: change.kind },
      });
    }
    const c = change;
    if (c.kind === 'enroll') {
      this.#members.set(c.member, {
        id: c.member,
        role: c.role,
        epochs: [{ fromRound: c.fromRound, signingKey: c.signingKey!, kemKey: c.kemKey }],
        nkey: c.nkey,
        revokedFrom: undefined,
      });
    } else {
      const m = this.#members.get(c.member)!;
      if (c.kind === 'rotate') {
        const last = m.epochs[m.epochs.length - 1]!;
        m.epochs = [
          ...m.epochs,
          { fromRound: c.fromRound, signingKey: c.signingKey!, kemKey: c.kemKey ?? last.kemKey },
        ];
        if (c.nkey !== undefined) m.nkey = c.nkey;
      } else {
        m.revokedFrom = c.fromRound;
      }
    }
    this.#changes.push({ change: c, sequence });
  }
}
