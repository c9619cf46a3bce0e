import { resolve } from 'node:path';
import type { AuditReport } from '../audit/index.ts';
import type { CohortConfig } from '../config/index.ts';
import {
  assertModelStore,
  exportMetadata,
  FederationTimeline,
  requireStoredModel,
  syncTimeline,
} from '../history/index.ts';
import { federationGenesis, modelSpecFor } from '../round/index.ts';
import type { CoordinatorHandle } from '../services/coordinator/index.ts';
import { type FederationLogReader, openLogReader } from '../services/federation-log/index.ts';
import type { MemberContext } from '../services/index.ts';
import { bytesToHex, encodeSafetensors, modelTensors } from '../versions/index.ts';
import type {
  AdminDeps,
  AdminHistory,
  AdminMetrics,
  AdminStream,
  AuditBundleRequest,
  VerifyLogOptions,
} from './admin-deps.ts';

/** What {@link coordinatorAdminDeps} wires together. */
export interface CoordinatorDepsInput {
  /** The running coordinator. */
  readonly handle: CoordinatorHandle;
  /** The coordinator's member (its NATS connection and key lookups read the log). */
  readonly member: MemberContext;
  readonly config: CohortConfig;
  /** A site's model store on this host (`admin.modelStore`), for model export. */
  readonly modelStore?: string;
  /** `GET /metrics` (src/metrics). */
  readonly metrics?: AdminMetrics;
  /** `GET /v1/audit/bundle` (src/audit; run outside the coordinator's event loop). */
  readonly exportAuditBundle?: (request: AuditBundleRequest) => Promise<AdminStream>;
  /** `GET /v1/audit/verify` (src/audit; run outside the coordinator's event loop). */
  readonly verifyLog?: (options: VerifyLogOptions) => Promise<AuditReport>;
}

/**
 * The timeline of the federation log as `cohort versions` reads it (`syncTimeline`: signatures,
 * chain, history rules), opened on first use and brought up to date before every read.
 */
export function logHistorySource(member: MemberContext, config: CohortConfig): AdminHistory {
  let opened: Promise<{ reader: FederationLogReader; timeline: FederationTimeline }> | undefined;
  let queue: Promise<unknown> = Promise.resolve();
  const open = () => {
    opened ??= openLogReader(member.transport.connection, {
      federation: config.federation.id,
      coordinator: member.members.coordinator,
      keys: member.keys,
    }).then((reader) => ({
      reader,
      timeline: new FederationTimeline(federationGenesis(config).commit, reader.stream),
    }));
    opened.catch(() => {
      opened = undefined; // try again on the next request
    });
    return opened;
  };
  return {
    timeline() {
      const run = queue.then(async () => {
        const { reader, timeline } = await open();
        await syncTimeline(reader, timeline);
        return timeline;
      });
      queue = run.catch(() => undefined);
      return run;
    },
    async entryTime(sequence) {
      const { reader } = await open();
      return (await reader.get(sequence)).record.unixMs;
    },
  };
}

/**
 * The admin API's deps over a running coordinator (`cohort coordinator` with `admin`
 * configured): its handle for reads and actions, the log for history, and the optional slots.
 */
export function coordinatorAdminDeps(input: CoordinatorDepsInput): AdminDeps {
  const { handle, config } = input;
  const store = input.modelStore === undefined ? undefined : resolve(input.modelStore);
  return {
    federation: config.federation.id,
    aggregation: { mode: config.federation.mode, rule: config.federation.aggregation?.name ?? null },
    coordinator: {
      stats: () => handle.stats(),
      members: () => handle.members(),
      runs: () => handle.runs(),
      startRun: (settings, by) => handle.startRun(settings, by),
      stopRun: (id, by) => handle.stopRun(id, by),
      abortRound: (round, reason) => handle.abortRound(round, reason),
      async queueRollback(target, reason) {
        // The queue refuses a bad target at once; the rollback round itself comes later.
        let refused: { err: unknown } | undefined;
        handle.rollback(target, reason).catch((err: unknown) => {
          refused ??= { err };
        });
        await new Promise((r) => setImmediate(r));
        if (refused !== undefined) throw refused.err;
      },
      submitRegistryChange: (request) => handle.submitRegistryChange(request),
      appendAdminAction: (action) => handle.appendAdminAction(action),
    },
    history: logHistorySource(input.member, config),
    ...(store === undefined
      ? {}
      : {
          exportModel: async (commit, timeline) => {
            assertModelStore(store);
            const parameters = requireStoredModel(store, commit, timeline);
            const spec = modelSpecFor(config);
            const bytes = encodeSafetensors(
              modelTensors(spec, parameters),
              exportMetadata(config, spec, commit),
            );
            return {
              contentType: 'application/octet-stream',
              fileName: `${config.federation.id}-${commit.commit.height}-${bytesToHex(commit.commit.hash).slice(0, 12)}.safetensors`,
              bytes,
            };
          },
        }),
    ...(input.metrics === undefined ? {} : { metrics: input.metrics }),
    ...(input.exportAuditBundle === undefined ? {} : { exportAuditBundle: input.exportAuditBundle }),
    ...(input.verifyLog === undefined ? {} : { verifyLog: input.verifyLog }),
  };
}
