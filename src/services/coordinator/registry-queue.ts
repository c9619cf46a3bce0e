import { CohortError } from '../../errors/index.ts';
import {
  decodeRegistryChangeRecord,
  openRegistryChange,
  type RegistryChangeBody,
  type RegistryChangeRecord,
  RegistryError,
} from '../../registry/index.ts';
import type { LogEntry, LogHistory } from '../federation-log/index.ts';
import type { MemberContext } from '../member-context.ts';
import type { CoordinatorLog } from './coordinator-log.ts';

/** How far a registry change's `issuedUnixMs` may be from the coordinator's clock (replay window). */
export const REGISTRY_REQUEST_WINDOW_MS = 5 * 60_000;

interface Pending {
  readonly record: RegistryChangeRecord;
  readonly change: RegistryChangeBody;
  readonly resolve: (entry: LogEntry) => void;
  readonly reject: (err: unknown) => void;
}

/** The round the next change may apply from: after the open round, else after the last one. */
function nextRound(history: LogHistory): number {
  const open = history.openRound;
  return open === null ? history.lastRound + 1 : open.roundOpen.round + 1;
}

function refused(message: string, change?: RegistryChangeBody): RegistryError {
  return new RegistryError('REGISTRY_CHANGE_REFUSED', message, {
    details: change === undefined ? {} : { member: change.member, kind: change.kind },
  });
}

/**
 * Registry changes waiting for their round (docs/key-ceremony.md). An operator sends an
 * officer-signed change on `cohort.<F>.admin.registry`; the coordinator checks it (the officer's
 * signature under the pinned registry's officer key, the federation, the replay window, the member's
 * role in the configuration, and the registry's rules against the logged registry and the changes
 * already queued) and queues it. Right before round `fromRound` opens it checks it again and
 * appends it to the log (so a logged change always applies from the round after it), then
 * announces the entry on `cohort.<F>.registry` for the members that do not append to the log.
 */
export class RegistryQueue {
  readonly #pending: Pending[] = [];
  #closed = false;
  /** The last round whose changes were appended (it opens next, or is open): too late for it. */
  #armed = 0;

  /** Changes queued and not logged yet. */
  get pending(): readonly RegistryChangeBody[] {
    return this.#pending.map((p) => p.change);
  }

  /**
   * A request (the bytes of a `RegistryChange`): checked and queued; replies at once with JSON
   * `{ queued, kind, member, fromRound }`. The change is logged right before its round (see
   * {@link appendDue}).
   *
   * @throws RegistryError `REGISTRY_INVALID`, `REGISTRY_SIGNATURE_INVALID` or
   *   `REGISTRY_CHANGE_REFUSED`; CohortError `STOPPED`.
   */
  fromRequest(data: Uint8Array, ctx: MemberContext, history: LogHistory, now: number): Uint8Array {
    const change = this.submit(data, ctx, history, now);
    return new TextEncoder().encode(
      JSON.stringify({ queued: true, kind: change.kind, member: change.member, fromRound: change.fromRound }),
    );
  }

  /**
   * The bytes of a `RegistryChange` (from the admin API or a NATS request), checked and queued as
   * {@link fromRequest} does; returns the change. Throws as {@link fromRequest}.
   */
  submit(data: Uint8Array, ctx: MemberContext, history: LogHistory, now: number): RegistryChangeBody {
    return this.#enqueue(decodeRegistryChangeRecord(data), ctx, history, now).change;
  }

  /**
   * Queues an officer-signed change from this process (tests, tools), checked as
   * {@link fromRequest} does; resolves with its log entry once appended.
   */
  request(
    record: RegistryChangeRecord,
    ctx: MemberContext,
    history: LogHistory,
    now: number,
  ): Promise<LogEntry> {
    try {
      return this.#enqueue(record, ctx, history, now).logged;
    } catch (err) {
      return Promise.reject(err);
    }
  }

  #enqueue(
    record: RegistryChangeRecord,
    ctx: MemberContext,
    history: LogHistory,
    now: number,
  ): { change: RegistryChangeBody; logged: Promise<LogEntry> } {
    if (this.#closed) throw new CohortError('STOPPED', 'the coordinator has stopped');
    const signed = ctx.signedRegistry;
    const view = history.registry;
    if (signed === undefined || view === undefined) {
      throw refused('this federation has no signed registry (members.registry): registry changes need one');
    }
    const change = openRegistryChange(record, signed.registry.officerKey);
    if (change.federation !== ctx.config.federation.id) {
      throw refused(
        `${change.kind} ${change.member} is for federation ${JSON.stringify(change.federation)}`,
        change,
      );
    }
    if (!(Math.abs(now - change.issuedUnixMs) <= REGISTRY_REQUEST_WINDOW_MS)) {
      throw refused(
        `${change.kind} ${change.member} issued at ${change.issuedUnixMs} is outside the replay window`,
        change,
      );
    }
    const role = configuredRole(ctx, change.member);
    if (role !== change.role) {
      throw refused(
        `${change.kind} ${change.member}: the configuration ${role === undefined ? 'does not list it (add it to members and to nats.conf first)' : `lists it as ${role}, not ${change.role}`}`,
        change,
      );
    }
    const next = Math.max(nextRound(history), this.#armed + 1);
    const scratch = view.clone();
    for (const p of [...this.#pending].sort((a, b) => a.change.fromRound - b.change.fromRound)) {
      scratch.apply(p.change, next, false);
    }
    const problem = scratch.problem(change, next, false);
    if (problem !== null) throw refused(problem, change);
    let resolve!: (entry: LogEntry) => void;
    let reject!: (err: unknown) => void;
    const logged = new Promise<LogEntry>((res, rej) => {
      resolve = res;
      reject = rej;
    });
    logged.catch(() => undefined);
    this.#pending.push({ record, change, resolve, reject });
    return { change, logged };
  }

  /**
   * Before round `round` opens: appends every queued change that applies from it (in request
   * order), each checked again against the log's registry, and announces each entry with
   * `announce`. A change that no longer applies (its round passed, the registry changed under it)
   * is dropped and reported to `onRefused`.
   */
  async appendDue(
    round: number,
    log: CoordinatorLog,
    announce: (entry: LogEntry) => Promise<void>,
    onRefused: (change: RegistryChangeBody, err: Error) => void,
  ): Promise<void> {
    this.#armed = Math.max(this.#armed, round);
    const due = this.#pending.filter((p) => p.change.fromRound <= round);
    if (due.length === 0) return;
    this.#pending.splice(0, this.#pending.length, ...this.#pending.filter((p) => !due.includes(p)));
    for (const p of due) {
      const view = log.history.registry;
      const problem =
        view === undefined
          ? 'this federation has no signed registry'
          : p.change.fromRound < round
            ? `${p.change.kind} ${p.change.member} from round ${p.change.fromRound} missed its round (next round ${round})`
            : view.problem(p.change, round, true);
      if (problem !== null) {
        const err = refused(problem, p.change);
        p.reject(err);
        onRefused(p.change, err);
        continue;
      }
      const entry = await log.append({ registryChange: p.record });
      p.resolve(entry);
      await announce(entry).catch(() => undefined);
    }
  }

  /** Refuses every pending change (the coordinator stopped). */
  close(): void {
    this.#closed = true;
    for (const p of this.#pending.splice(0))
      p.reject(new CohortError('STOPPED', 'the coordinator stopped before the registry change was logged'));
  }
}

/** `id`'s role in the coordinator's configuration. */
function configuredRole(ctx: MemberContext, id: string): string | undefined {
  const m = ctx.members;
  if (id === m.coordinator) return 'coordinator';
  if (m.aggregators.some((a) => a.id === id)) return 'aggregator';
  if (m.sites.some((s) => s.id === id)) return 'site';
  if (m.auditors.some((a) => a.id === id)) return 'auditor';
  return undefined;
}
