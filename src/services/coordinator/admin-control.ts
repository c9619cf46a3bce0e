import { CohortError } from '../../errors/index.ts';
import type { AdminActionBody } from '../../protocol/index.ts';
import type { RegistryChangeKind } from '../../registry/index.ts';
import { bytesToHex } from '../../versions/index.ts';
import type { MemberContext } from '../member-context.ts';
import type { CoordinatorLog } from './coordinator-log.ts';
import type { MemberRoleName } from './events.ts';
import type { Membership } from './membership.ts';
import type { RegistryQueue } from './registry-queue.ts';
import { requestRoundAbort } from './round-abort.ts';
import type { ActiveRound } from './round-host.ts';
import type { RunControl, RunInfo, RunSettings } from './run-control.ts';

/** Most characters of an operator's abort reason. */
export const MAX_ABORT_REASON = 256;

/** What the coordinator knows of one configured site or aggregator. */
export interface MemberStatus {
  readonly id: string;
  readonly role: MemberRoleName;
  /** Heartbeating within the liveness window. */
  readonly live: boolean;
  /** A site left out of rounds (voted NO or did not vote; readmitted once it catches up). */
  readonly excluded: boolean;
  /** Revoked in the registry as the log has it. */
  readonly revoked: boolean;
  /** Coordinator clock of its last heartbeat, ms since the epoch; null before any. */
  readonly lastSeenUnixMs: number | null;
  /** The head it last reported (hex) and its height; null before any heartbeat. */
  readonly head: string | null;
  readonly height: number | null;
  /** Its agent state as last reported ('' for aggregators), or null. */
  readonly state: string | null;
}

/** A registry change the coordinator checked and queued (logged right before its round). */
export interface QueuedRegistryChange {
  readonly kind: RegistryChangeKind;
  readonly member: string;
  readonly fromRound: number;
}

/** The coordinator's operator controls (part of `CoordinatorHandle`). */
export interface AdminControls {
  /** Starts a run (see `RunControl.start`). */
  startRun(settings: RunSettings, by: string): RunInfo;
  /** Asks a run to stop (see `RunControl.stop`). */
  stopRun(id: string, by: string): RunInfo;
  /** Runs of this process, oldest first. */
  runs(): RunInfo[];
  /**
   * Decides the open round `round` ABORT with `reason`: the coordinator stops waiting for its
   * partials or votes and logs the ABORT (no site is blamed). Returns at once; the decision
   * follows as a `decision` event.
   *
   * @throws CohortError `ROUND_NOT_OPEN` when `round` is not the round open now.
   */
  abortRound(round: number, reason: string): void;
  /**
   * An officer-signed registry change (the bytes of a `RegistryChange`), checked and queued as
   * one received on `cohort.<F>.admin.registry` (docs/key-ceremony.md); the coordinator holds no
   * officer key.
   *
   * @throws RegistryError `REGISTRY_INVALID`, `REGISTRY_SIGNATURE_INVALID`,
   *   `REGISTRY_CHANGE_REFUSED`; CohortError `STOPPED`, `NOT_STARTED`.
   */
  submitRegistryChange(request: Uint8Array): QueuedRegistryChange;
  /**
   * Appends an admin action to the log (serialized with the coordinator's other appends, signed
   * like them); resolves with its log sequence.
   */
  appendAdminAction(action: AdminActionBody): Promise<number>;
  /** Every configured site and aggregator as the coordinator sees it, sites first, by id. */
  members(): MemberStatus[];
}

/** What {@link adminControls} needs of the coordinator. */
export interface AdminHost {
  readonly ctx: MemberContext;
  /** Throws `NOT_STARTED` until the log is open. */
  readonly log: CoordinatorLog;
  readonly membership: Membership;
  readonly runs: RunControl;
  readonly registryChanges: RegistryQueue;
  readonly current: ActiveRound | undefined;
  readonly now: () => number;
  wake(): void;
}

/** The {@link AdminControls} of the coordinator `c`. */
export function adminControls(c: AdminHost): AdminControls {
  return {
    startRun: (settings, by) => c.runs.start(settings, by),
    stopRun: (id, by) => c.runs.stop(id, by),
    runs: () => c.runs.list(),
    abortRound(round, reason) {
      const state = c.current;
      if (state === undefined || state.phase === 'decided' || state.round !== round) {
        throw new CohortError(
          'ROUND_NOT_OPEN',
          state === undefined || state.phase === 'decided'
            ? `round ${round} is not open (no round is)`
            : `round ${round} is not open (round ${state.round} is)`,
          { details: { round } },
        );
      }
      requestRoundAbort(state, String(reason).slice(0, MAX_ABORT_REASON));
      c.wake();
    },
    submitRegistryChange(request) {
      const change = c.registryChanges.submit(request, c.ctx, c.log.history, c.now());
      return { kind: change.kind, member: change.member, fromRound: change.fromRound };
    },
    appendAdminAction: async (action) => (await c.log.appendAdminAction(action)).sequence,
    members() {
      const ids: [string, MemberRoleName][] = [
        ...[...c.ctx.members.sites].map((s) => [s.id, 'site'] as [string, MemberRoleName]),
        ...[...c.ctx.members.aggregators].map((a) => [a.id, 'aggregator'] as [string, MemberRoleName]),
      ];
      return ids.map(([id, role]) => {
        const view = c.membership.view(id);
        return {
          id,
          role,
          live: c.membership.isLive(id),
          excluded: role === 'site' && c.membership.isExcluded(id),
          revoked: c.ctx.registryView.isRevoked(id),
          lastSeenUnixMs: view?.lastSeen ?? null,
          head: view === undefined || view.head.length === 0 ? null : bytesToHex(view.head),
          height: view === undefined || view.head.length === 0 ? null : view.height,
          state: view?.state ?? null,
        };
      });
    },
  };
}
