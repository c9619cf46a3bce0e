import { REGISTRY_CHANGE_MAX_BYTES } from '../../registry/index.ts';
import type { InboundMessage, TransportSubscription } from '../../transport/index.ts';
import type { LogHistory } from '../federation-log/index.ts';
import { type IntakeKind, intakeLimits } from '../intake-limits.ts';
import type { MemberContext } from '../member-context.ts';
import type { MemberIntake } from './member-intake.ts';
import type { RegistryQueue } from './registry-queue.ts';
import type { RollbackQueue } from './rollback-queue.ts';
import type { SnapshotIntake } from './snapshot-intake.ts';

/** What the coordinator's subscriptions hand messages to and report refusals through. */
export interface SubscriptionHost {
  readonly ctx: MemberContext;
  readonly intake: MemberIntake;
  readonly snapshots: SnapshotIntake;
  readonly rollbacks: RollbackQueue;
  readonly registryChanges: RegistryQueue;
  /** Threshold keys: the largest share bundle of the model (undefined: no share subscription). */
  readonly shareMaxBytes: number | undefined;
  /** Threshold keys: the largest deal of a roster of the configured sites (undefined: no epoch subscription). */
  readonly epochMaxBytes: number | undefined;
  /** Threshold keys: a site's deal or ready of the re-sharing in progress (`cohort.F.epoch.<site>`). */
  epoch(site: string, data: Uint8Array): Promise<void>;
  /** The verified log's history (requests are checked against it). */
  history(): LogHistory;
  now(): number;
  /** A message refused by its handler (counted, reported, logged by the host). */
  refused(from: string, subject: string, err: unknown): void;
  /** A message the transport dropped before any handler (`TRANSPORT_<reason>`). */
  countRefusal(reason: string): void;
}

/**
 * Subscribes the coordinator to what members send it: heartbeats, partials, votes, switched and
 * snapshot reports (one wildcard subject per kind, the sender named by the last token), and the
 * operator's rollback and registry requests; each with its kind's size and rate limits
 * (`intakeLimits`; snapshots at the model's largest snapshot, `SnapshotIntake.maxBytes`). A handler's error is a refusal: the host counts and reports it, and the
 * transport answers it.
 */
export function subscribeCoordinator(host: SubscriptionHost): TransportSubscription[] {
  const { ctx } = host;
  const s = ctx.subjects;
  const subscriptions: TransportSubscription[] = [];
  const onDrop = (reason: string) => host.countRefusal(`TRANSPORT_${reason}`);
  const sub = (
    pattern: (token: string) => string,
    kind: IntakeKind,
    handler: (id: string, msg: InboundMessage) => unknown,
    snapshotMaxBytes?: number,
  ) => {
    const prefix = pattern('_').slice(0, -1);
    subscriptions.push(
      ctx.transport.subscribe(
        `${prefix}*`,
        async (msg) => {
          const id = msg.subject.slice(prefix.length);
          try {
            return (await handler(id, msg)) as Uint8Array | undefined;
          } catch (err) {
            host.refused(id, msg.subject, err);
            throw err;
          }
        },
        intakeLimits(ctx, kind, onDrop, snapshotMaxBytes),
      ),
    );
  };
  sub(
    (t) => s.heartbeat(t),
    'heartbeat',
    (id, msg) => host.intake.heartbeat(id, msg.data),
  );
  sub(
    (t) => s.partial(t),
    'partial',
    (id, msg) => host.intake.partial(id, msg.data),
  );
  sub(
    (t) => s.vote(t),
    'vote',
    (id, msg) => host.intake.vote(id, msg.data),
  );
  // Threshold keys: share bundles, capped at the largest a bundle of the model's blocks can be.
  if (host.shareMaxBytes !== undefined) {
    sub(
      (t) => s.share(t),
      'share',
      (id, msg) => host.intake.share(id, msg.data),
      host.shareMaxBytes,
    );
  }
  if (host.epochMaxBytes !== undefined) {
    sub(
      (t) => s.epoch(t),
      'epoch',
      (id, msg) => host.epoch(id, msg.data),
      host.epochMaxBytes,
    );
  }
  sub(
    (t) => s.switched(t),
    'switched',
    (id, msg) => host.intake.switched(id, msg.data),
  );
  // Capped at the model's largest snapshot: a larger offer is dropped on its first chunk
  // (`TRANSPORT_OVERSIZE`), before anything is buffered, reassembled or hashed.
  sub(
    (t) => s.snapshot(t),
    'snapshot',
    (id, msg) => host.snapshots.accept(id, msg.data),
    host.snapshots.maxBytes,
  );
  subscriptions.push(
    ctx.transport.subscribe(
      s.rollbackRequest,
      async (msg) => {
        try {
          return await host.rollbacks.fromRequest(msg.data, ctx, host.history(), host.now());
        } catch (err) {
          host.refused('admin', msg.subject, err);
          throw err;
        }
      },
      intakeLimits(ctx, 'rollback-request', onDrop),
    ),
  );
  subscriptions.push(
    ctx.transport.subscribe(
      s.registryRequest,
      async (msg) => {
        try {
          return host.registryChanges.fromRequest(msg.data, ctx, host.history(), host.now());
        } catch (err) {
          host.refused('admin', msg.subject, err);
          throw err;
        }
      },
      { ...intakeLimits(ctx, 'rollback-request', onDrop), maxMessageBytes: REGISTRY_CHANGE_MAX_BYTES },
    ),
  );
  return subscriptions;
}
