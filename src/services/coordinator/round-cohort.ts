import type { Assignment } from '../../protocol/index.ts';
import { assignBounded, createRing } from '../../tree/index.ts';
import type { RoundHost } from './round-host.ts';
import { cappedWeights } from './weight-cap.ts';

/**
 * Waits until a round can open: at least one eligible site (live, at the head, not excluded)
 * and, for a training round, one live aggregator; and until the sites expected to switch to the
 * last commit did (or `switchWaitMs` passed), so they are at the head when the round opens.
 * Readmits excluded sites that qualify. Returns the eligible sites (under threshold keys, those of
 * the key epoch's roster), or undefined when stopped.
 */
export async function waitForSites(
  host: RoundHost,
  round: number,
  aggregators: boolean,
): Promise<string[] | undefined> {
  const head = host.log.history.head;
  const headRef = { hash: head.commit.hash, height: head.commit.height };
  const settleBy = host.now() + (host.options.switchWaitMs ?? 2000);
  const lastRound = head.commit.round;
  const ready = await host.until(() => {
    for (const site of host.membership.readmitQualified(headRef, round))
      host.emit({ type: 'readmitted', member: site });
    for (const aggregator of host.membership.readmitAggregators(round))
      host.emit({ type: 'readmitted', member: aggregator });
    if (aggregators && host.membership.usableAggregators().length === 0) return false;
    if (host.membership.eligibleSites(headRef).length === 0) return false;
    // A site whose heartbeat already reports the head has switched, even without a `switched` to
    // this coordinator (it switched before a restart, which re-announces the last decision).
    return (
      host.now() >= settleBy ||
      host.switches.allSwitched(
        lastRound,
        (s) => host.membership.isLive(s) && !host.membership.atHead(s, headRef),
      )
    );
  }, Number.POSITIVE_INFINITY);
  if (!ready) return undefined;
  // Threshold keys: a site outside the epoch's roster (enrolled since, not re-shared yet) could
  // not be decrypted; it contributes from the epoch that includes it.
  const epoch = host.threshold;
  const inEpoch = (id: string) => epoch === undefined || epoch.roster.sites.some((s) => s.id === id);
  return host.membership.eligibleSites(headRef).filter(inEpoch);
}

/**
 * The sites of the next training round, each with its aggregator and pinned weight (sorted by
 * site): the eligible sites ({@link waitForSites}) less those the circuit breaker leaves out
 * (from level 1) and the suspects sitting this round out, at most `codec.maxContributors`, placed
 * on the ring of usable aggregators. Undefined when stopped, or frozen by the breaker.
 */
export async function trainingCohort(host: RoundHost, round: number): Promise<Assignment[] | undefined> {
  const { ctx } = host;
  const cfg = ctx.config;
  let sites = await waitForSites(host, round, true);
  if (sites === undefined) return undefined;
  // The circuit breaker (docs/round-protocol.md): from level 1, sites that failed lately sit out.
  const cohort = host.breaker.cohort(sites, cfg.round.minContributors);
  if (cohort.short) {
    const why = `leaving out the failing sites would leave fewer than round.minContributors (${cfg.round.minContributors})`;
    host.breakerChanged(host.breaker.escalate(round, why, host.now()));
    if (host.breaker.level === 3) return undefined; // frozen: this round does not open
  } else if (cohort.leftOut.length > 0) {
    ctx.log.info({ round, leftOut: cohort.leftOut }, 'circuit breaker leaves failing sites out');
  }
  sites = [...cohort.sites];
  // Sites suspected of spoiling earlier aggregates take part by halves until one is isolated.
  const suspected = host.suspects.suspects;
  const taking = host.suspects.cohort(sites, round, cfg.round.minContributors);
  if (suspected.length > 0) {
    const sitting = suspected.filter((s) => !taking.includes(s));
    ctx.log.info({ round, suspects: suspected, sitting }, 'suspected sites take part by halves');
  }
  sites = taking;
  // An aggregator found at fault sits out (its sites go to the others on the ring).
  const aggregators = host.membership.usableAggregators();
  if (sites.length > cfg.codec.maxContributors) {
    ctx.log.warn(
      { round, sites: sites.length, maxContributors: cfg.codec.maxContributors },
      'more eligible sites than codec.maxContributors; the rest sit this round out',
    );
    sites = sites.slice(0, cfg.codec.maxContributors);
  }
  const capacity = aggregatorCapacity(host);
  const ring = createRing(aggregators.map((id) => ({ id, capacity: capacity.get(id) ?? 1 })));
  const assignment = assignBounded(ring, sites, cfg.round.epsilon);
  // Each site's weight is pinned here, capped at a multiple of the round's median: its update must
  // declare exactly this many examples.
  const weights = cappedWeights(
    new Map(sites.map((s) => [s, host.membership.view(s)?.examples ?? 0])),
    cfg.round.weightCapFactor,
  );
  return [...assignment]
    .map(([site, aggregator]) => ({ site, aggregator, examples: weights.get(site) ?? 0 }))
    .sort((a, b) => (a.site < b.site ? -1 : a.site > b.site ? 1 : 0));
}

/** Each configured aggregator's capacity (its share of the ring and of the tree's fan-in). */
export function aggregatorCapacity(host: RoundHost): Map<string, number> {
  return new Map(host.ctx.config.members!.aggregators.map((a) => [a.id, a.capacity]));
}
