import { AdminApiError } from './admin-error.ts';
import { addRoute, type RouteContext, recordAction } from './route-kit.ts';
import { ABORT_REQUESTED, COUNT_TEXT, closed, REASON, ROUND_DETAIL, TIMED_ROUND } from './schemas.ts';
import { assignmentsJson, decidedRoundJson, loggedRounds, openRoundJson } from './views.ts';

/** Rounds listed by default. */
const DEFAULT_LIMIT = 20;
/** Most rounds one list returns. */
const MAX_LIMIT = 1000;

const ROUND_PARAMS = closed({ round: COUNT_TEXT });

/** RoundOpen times remembered by log sequence (entries never change once written). */
const MAX_CACHED_TIMES = 10_000;

/** Rounds as the log holds them: list, show (timings, contributions), abort the open one. */
export function registerRoundRoutes(ctx: RouteContext): void {
  const { deps } = ctx;
  const times = new Map<number, number>();
  const entryTime = async (sequence: number) => {
    let t = times.get(sequence);
    if (t === undefined) {
      t = await deps.history.entryTime(sequence);
      if (times.size >= MAX_CACHED_TIMES) times.clear();
      times.set(sequence, t);
    }
    return t;
  };
  const timed = async <R extends { openSequence: number; decidedUnixMs: number | null }>(round: R) => {
    const openedUnixMs = await entryTime(round.openSequence);
    return {
      ...round,
      openedUnixMs,
      durationMs: round.decidedUnixMs === null ? null : round.decidedUnixMs - openedUnixMs,
    };
  };
  addRoute(ctx, {
    method: 'GET',
    url: '/v1/rounds',
    scope: 'auditor',
    tag: 'rounds',
    summary:
      'Rounds, newest first: the open one, then decided ones (COMMIT and ABORT), with their timings and federated evaluation',
    querystring: {
      type: 'object',
      additionalProperties: false,
      properties: {
        limit: {
          ...COUNT_TEXT,
          description: `at most this many (default ${DEFAULT_LIMIT}, max ${MAX_LIMIT})`,
        },
      },
    },
    response: { 200: { type: 'array', items: TIMED_ROUND } },
    handler: async (req) => {
      const { limit } = req.query as { limit?: string };
      const n = limit === undefined ? DEFAULT_LIMIT : Number(limit);
      if (n > MAX_LIMIT) {
        throw new AdminApiError('VALIDATION_FAILED', `querystring.limit: at most ${MAX_LIMIT}`);
      }
      const rounds = loggedRounds(await deps.history.timeline(), n);
      const out = [];
      for (const r of rounds) out.push(await timed(r));
      return out;
    },
  });
  addRoute(ctx, {
    method: 'GET',
    url: '/v1/rounds/:round',
    scope: 'auditor',
    tag: 'rounds',
    summary:
      'One round: participants and their aggregators, contributions, voters, when it opened and how long it took',
    params: ROUND_PARAMS,
    response: { 200: ROUND_DETAIL },
    handler: async (req) => {
      const round = Number((req.params as { round: string }).round);
      const timeline = await deps.history.timeline();
      const decided = timeline.history.decisionOf(round);
      const open = timeline.history.openRound;
      if (decided === undefined && open?.roundOpen.round !== round) {
        throw new AdminApiError('ROUND_UNKNOWN', `the log holds no round ${round}`);
      }
      const base = decided === undefined ? openRoundJson(open!) : decidedRoundJson(decided);
      return {
        ...(await timed(base)),
        assignments: assignmentsJson(decided === undefined ? open!.roundOpen : decided.open),
        contributions: (decided?.decision.aggregate?.contributors ?? []).map((c) => ({
          site: c.site,
          digest: Buffer.from(c.digest).toString('hex'),
          weight: c.weight,
        })),
      };
    },
  });
  addRoute(ctx, {
    method: 'POST',
    url: '/v1/rounds/:round/abort',
    scope: 'operator',
    tag: 'rounds',
    summary: 'Abort the open round (named, so a later round is never aborted by mistake); no site is blamed',
    params: ROUND_PARAMS,
    body: { ...closed({ reason: REASON }), required: [] },
    response: { 202: ABORT_REQUESTED },
    handler: async (req, reply) => {
      const round = Number((req.params as { round: string }).round);
      const stats = deps.coordinator.stats();
      if (stats.round !== round || (stats.phase !== 'collecting' && stats.phase !== 'voting')) {
        throw new AdminApiError(
          'ROUND_NOT_OPEN',
          `round ${round} is not open (round ${stats.round}, ${stats.phase})`,
        );
      }
      const given = (req.body as { reason?: string }).reason ?? '';
      const caller = req.adminCaller?.tokenId ?? 'unknown';
      const reason = `aborted by ${caller} (admin API)${given === '' ? '' : `: ${given}`}`;
      const actionSequence = await recordAction(ctx, req, 'rounds.abort', String(round), {
        round,
        reason: given,
      });
      deps.coordinator.abortRound(round, reason);
      return reply.code(202).send({ round, aborting: true, actionSequence });
    },
  });
}
