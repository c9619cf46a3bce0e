import { MAX_RUN_LABEL, MAX_RUN_ROUNDS } from '../services/coordinator/index.ts';
import { AdminApiError } from './admin-error.ts';
import { addRoute, callerId, type RouteContext, recordAction } from './route-kit.ts';
import { closed, RUN, RUN_DETAIL } from './schemas.ts';
import { runDetailJson, runJson } from './views.ts';

const RUN_PARAMS = closed({ id: { type: 'string', pattern: '^run-[1-9][0-9]{0,8}$' } });

/** Training runs: list, start, show (rounds, contributors, timings), stop. */
export function registerRunRoutes(ctx: RouteContext): void {
  const { deps } = ctx;
  const find = (id: string) => {
    const run = deps.coordinator.runs().find((r) => r.id === id);
    if (run === undefined) throw new AdminApiError('RUN_UNKNOWN', `no run ${id}`);
    return run;
  };
  addRoute(ctx, {
    method: 'GET',
    url: '/v1/runs',
    scope: 'auditor',
    tag: 'runs',
    summary: "Runs of this coordinator process, oldest first (the start-up run is --rounds')",
    response: { 200: { type: 'array', items: RUN } },
    handler: async () => deps.coordinator.runs().map(runJson),
  });
  addRoute(ctx, {
    method: 'POST',
    url: '/v1/runs',
    scope: 'operator',
    tag: 'runs',
    summary: 'Start a run of `rounds` rounds (409 while another runs)',
    body: {
      ...closed({
        rounds: { type: 'integer', minimum: 1, maximum: MAX_RUN_ROUNDS },
        label: { type: 'string', maxLength: MAX_RUN_LABEL },
      }),
      required: ['rounds'],
    },
    response: { 201: RUN },
    handler: async (req, reply) => {
      const body = req.body as { rounds: number; label?: string };
      const active = deps.coordinator.runs().find((r) => r.state === 'running' || r.state === 'stopping');
      if (active !== undefined) {
        throw new AdminApiError('RUN_ACTIVE', `run ${active.id} is ${active.state}; stop it first`);
      }
      await recordAction(ctx, req, 'runs.start', '', { rounds: body.rounds, label: body.label ?? '' });
      const run = deps.coordinator.startRun(
        { rounds: body.rounds, ...(body.label === undefined ? {} : { label: body.label }) },
        callerId(req),
      );
      return reply.code(201).send(runJson(run));
    },
  });
  addRoute(ctx, {
    method: 'GET',
    url: '/v1/runs/:id',
    scope: 'auditor',
    tag: 'runs',
    summary: 'One run: its rounds with their contributors and timings',
    params: RUN_PARAMS,
    response: { 200: RUN_DETAIL },
    handler: async (req) => {
      const run = find((req.params as { id: string }).id);
      return runDetailJson(run, await deps.history.timeline());
    },
  });
  addRoute(ctx, {
    method: 'POST',
    url: '/v1/runs/:id/stop',
    scope: 'operator',
    tag: 'runs',
    summary: 'Stop a run: the round in progress is decided, no other opens',
    params: RUN_PARAMS,
    response: { 202: RUN },
    handler: async (req, reply) => {
      const { id } = req.params as { id: string };
      const run = find(id);
      if (run.state !== 'running' && run.state !== 'stopping') {
        throw new AdminApiError('RUN_NOT_ACTIVE', `run ${id} has ended (${run.state})`);
      }
      await recordAction(ctx, req, 'runs.stop', id, { run: id });
      return reply.code(202).send(runJson(deps.coordinator.stopRun(id, callerId(req))));
    },
  });
}
