import type { FastifyRequest } from 'fastify';
import { sha256 } from '../../crypto/digest/index.ts';
import {
  decodeRegistryChangeBody,
  decodeRegistryChangeRecord,
  REGISTRY_CHANGE_MAX_BYTES,
  type RegistryChangeKind,
} from '../registry/index.ts';
import { bytesToHex } from '../versions/index.ts';
import { AdminApiError } from './admin-error.ts';
import { addRoute, type RouteContext, recordAction } from './route-kit.ts';
import { MEMBER, QUEUED_CHANGE, REGISTRY_CHANGE_BODY, STATUS } from './schemas.ts';
import { breakerJson, loggedRounds, memberJson, runJson } from './views.ts';

const MEMBER_ID = { type: 'string', pattern: '^[A-Za-z0-9_-]{1,64}$' } as const;

/** Rounds the status lists. */
const STATUS_ROUNDS = 5;

/**
 * Checks an officer-signed change has the kind (and member) the route is for, logs the admin
 * action, then hands the exact bytes to the coordinator's registry queue (the API never holds the
 * officer key: docs/key-ceremony.md).
 */
async function submitChange(
  ctx: RouteContext,
  req: FastifyRequest,
  kind: RegistryChangeKind,
  member: string | undefined,
  role: string | undefined,
) {
  const text = (req.body as { change: string }).change;
  const bytes = new Uint8Array(Buffer.from(text, 'base64'));
  if (bytes.length > REGISTRY_CHANGE_MAX_BYTES) {
    throw new AdminApiError('VALIDATION_FAILED', `body.change: more than ${REGISTRY_CHANGE_MAX_BYTES} bytes`);
  }
  const body = decodeRegistryChangeBody(decodeRegistryChangeRecord(bytes).body);
  if (
    body.kind !== kind ||
    (member !== undefined && body.member !== member) ||
    (role !== undefined && body.role !== role)
  ) {
    throw new AdminApiError(
      'REGISTRY_CHANGE_KIND',
      `body.change is a ${body.kind} of ${body.role} ${body.member}; this route takes a ${kind}${role === undefined ? '' : ` of a ${role}`}${member === undefined ? '' : ` of ${member}`}`,
    );
  }
  const actionSequence = await recordAction(ctx, req, `registry.${kind}`, body.member, {
    kind,
    member: body.member,
    role: body.role,
    fromRound: body.fromRound,
    change: bytesToHex(sha256(bytes)),
  });
  const queued = ctx.deps.coordinator.submitRegistryChange(bytes);
  return { queued: true, ...queued, actionSequence };
}

/** Federation status, sites (list, enroll, revoke) and key rotation. */
export function registerFederationRoutes(ctx: RouteContext): void {
  const { deps } = ctx;
  addRoute(ctx, {
    method: 'GET',
    url: '/v1/status',
    scope: 'auditor',
    tag: 'federation',
    summary: 'The federation at a glance: phase, round, head, sites, the active run, the last rounds',
    response: { 200: STATUS },
    handler: async () => {
      const stats = deps.coordinator.stats();
      const members = deps.coordinator.members();
      const timeline = await deps.history.timeline();
      const sites = members.filter((m) => m.role === 'site');
      const run = deps.coordinator.runs().find((r) => r.state === 'running' || r.state === 'stopping');
      return {
        federation: deps.federation,
        phase: stats.phase,
        round: stats.round,
        head: stats.head,
        height: stats.height,
        logSequence: stats.logSequence,
        sites: {
          configured: sites.length,
          live: [...stats.liveSites],
          excluded: [...stats.excluded],
          revoked: sites.filter((s) => s.revoked).map((s) => s.id),
        },
        aggregators: {
          configured: members.length - sites.length,
          live: [...stats.liveAggregators],
        },
        committed: stats.committed,
        aborted: stats.aborted,
        rejected: stats.rejected,
        snapshots: stats.snapshots,
        breaker: breakerJson(stats.breaker),
        run: run === undefined ? null : runJson(run),
        privacy: stats.privacy ?? null,
        aggregation: deps.aggregation ?? null,
        lastRounds: loggedRounds(timeline, STATUS_ROUNDS),
      };
    },
  });
  addRoute(ctx, {
    method: 'GET',
    url: '/v1/sites',
    scope: 'auditor',
    tag: 'sites',
    summary: 'Sites and aggregators: liveness, exclusion, head, last contribution',
    response: { 200: { type: 'array', items: MEMBER } },
    handler: async () => {
      const timeline = await deps.history.timeline();
      return deps.coordinator.members().map((m) => memberJson(m, timeline));
    },
  });
  addRoute(ctx, {
    method: 'POST',
    url: '/v1/sites',
    scope: 'admin',
    tag: 'sites',
    summary: 'Enroll a configured site: queue an officer-signed enroll change (logged before its round)',
    body: REGISTRY_CHANGE_BODY,
    response: { 202: QUEUED_CHANGE },
    handler: async (req, reply) =>
      reply.code(202).send(await submitChange(ctx, req, 'enroll', undefined, 'site')),
  });
  addRoute(ctx, {
    method: 'POST',
    url: '/v1/sites/:id/revoke',
    scope: 'admin',
    tag: 'sites',
    summary: 'Revoke a site: queue an officer-signed revoke change of that site',
    params: { type: 'object', additionalProperties: false, required: ['id'], properties: { id: MEMBER_ID } },
    body: REGISTRY_CHANGE_BODY,
    response: { 202: QUEUED_CHANGE },
    handler: async (req, reply) => {
      const { id } = req.params as { id: string };
      return reply.code(202).send(await submitChange(ctx, req, 'revoke', id, undefined));
    },
  });
  addRoute(ctx, {
    method: 'POST',
    url: '/v1/keys/rotate',
    scope: 'admin',
    tag: 'keys',
    summary: "Rotate a member's keys: queue an officer-signed rotate change",
    sensitive: true,
    body: REGISTRY_CHANGE_BODY,
    response: { 202: QUEUED_CHANGE },
    handler: async (req, reply) =>
      reply.code(202).send(await submitChange(ctx, req, 'rotate', undefined, undefined)),
  });
}
