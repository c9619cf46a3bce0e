import { InvalidArgumentError } from '../errors/index.ts';
import type { Assignment, TreeLink } from './control.ts';

/** What a {@link RoundTree} is read from: a RoundOpen's assignments, tree links and deadline. */
export interface RoundTreeSource {
  readonly assignments: readonly Assignment[];
  /** RoundOpen's `parents`; empty or absent for a one-level tree. */
  readonly parents?: readonly TreeLink[] | undefined;
  /** RoundOpen's `deadlineUnixMs`: every aggregator's deadline in a one-level tree. */
  readonly deadlineUnixMs: number;
}

/** The parent name of the coordinator's direct children. */
const ROOT = '';

/**
 * The aggregation tree of one round, as its RoundOpen names it (docs/round-protocol.md,
 * "Aggregation tree"): every aggregator's parent (`''`: the coordinator) and the deadline by which
 * it sends its partial. Without `parents` it is one level: every aggregator of the assignments
 * sends to the coordinator by `deadlineUnixMs`. Anyone holding the RoundOpen (coordinator,
 * aggregators, auditors) reads the same tree.
 *
 * Invariants (checked by {@link RoundTree.of}): every aggregator named by an assignment has a link;
 * each parent is `''` or an aggregator with a link; following parents from any aggregator reaches
 * the coordinator (no cycle); a child's deadline is earlier than its parent's.
 */
export class RoundTree {
  readonly #parent: ReadonlyMap<string, string>;
  readonly #deadline: ReadonlyMap<string, number>;
  /** Parent → its children with at least one assigned site at or below them, sorted. */
  readonly #children: ReadonlyMap<string, readonly string[]>;
  readonly #siteAggregator: ReadonlyMap<string, string>;
  /** Levels of aggregators: 1 when every aggregator sends to the coordinator. */
  readonly levels: number;
  /** The latest deadline of any aggregator (ms since the epoch): the coordinator waits until then. */
  readonly lastDeadlineUnixMs: number;

  private constructor(
    parent: Map<string, string>,
    deadline: Map<string, number>,
    siteAggregator: Map<string, string>,
  ) {
    this.#parent = parent;
    this.#deadline = deadline;
    this.#siteAggregator = siteAggregator;
    const withSites = new Set<string>();
    for (const aggregator of siteAggregator.values()) {
      for (let a: string | undefined = aggregator; a !== undefined && a !== ROOT; a = parent.get(a)) {
        if (withSites.has(a)) break;
        withSites.add(a);
      }
    }
    const children = new Map<string, string[]>();
    for (const [a, p] of parent) {
      if (!withSites.has(a)) continue;
      const list = children.get(p) ?? [];
      list.push(a);
      children.set(p, list);
    }
    for (const list of children.values()) list.sort();
    this.#children = children;
    let levels = 0;
    for (const a of parent.keys()) levels = Math.max(levels, this.depthOf(a));
    this.levels = Math.max(1, levels);
    this.lastDeadlineUnixMs = Math.max(0, ...deadline.values());
  }

  /**
   * Reads and checks the tree of a RoundOpen. Throws `INVALID_ARGUMENT` naming the field at fault
   * (`open.parents[i].parent`, …) on a link that repeats an aggregator, names an unknown parent or
   * itself, closes a cycle, gives a child a deadline not before its parent's, or leaves an assigned
   * aggregator out.
   */
  static of(source: RoundTreeSource): RoundTree {
    const links = source.parents ?? [];
    const parent = new Map<string, string>();
    const deadline = new Map<string, number>();
    const siteAggregator = new Map(source.assignments.map((a) => [a.site, a.aggregator]));
    if (links.length === 0) {
      for (const a of siteAggregator.values()) {
        parent.set(a, ROOT);
        deadline.set(a, source.deadlineUnixMs);
      }
      return new RoundTree(parent, deadline, siteAggregator);
    }
    links.forEach((l, i) => {
      if (typeof l.aggregator !== 'string' || l.aggregator === ROOT || parent.has(l.aggregator)) {
        throw invalid(`open.parents[${i}].aggregator`, `names ${JSON.stringify(l.aggregator)} again or none`);
      }
      if (!Number.isSafeInteger(l.deadlineUnixMs) || l.deadlineUnixMs < 0) {
        throw invalid(`open.parents[${i}].deadlineUnixMs`, `is ${l.deadlineUnixMs}`);
      }
      parent.set(l.aggregator, typeof l.parent === 'string' ? l.parent : ROOT);
      deadline.set(l.aggregator, l.deadlineUnixMs);
    });
    links.forEach((l, i) => {
      const p = parent.get(l.aggregator)!;
      if (p === l.aggregator || (p !== ROOT && !parent.has(p))) {
        throw invalid(
          `open.parents[${i}].parent`,
          `${JSON.stringify(p)} is not another aggregator of the tree`,
        );
      }
      if (p !== ROOT && !(deadline.get(l.aggregator)! < deadline.get(p)!)) {
        throw invalid(
          `open.parents[${i}].deadlineUnixMs`,
          `${l.aggregator} must send before its parent ${p} (${deadline.get(l.aggregator)} ≥ ${deadline.get(p)})`,
        );
      }
    });
    // Deadlines grow strictly towards the root, so no cycle can pass the check above; this walk
    // states the invariant outright.
    links.forEach((l, i) => {
      let steps = 0;
      for (let a = parent.get(l.aggregator)!; a !== ROOT; a = parent.get(a)!) {
        if (++steps > links.length)
          throw invalid(`open.parents[${i}].parent`, `${l.aggregator} is in a cycle`);
      }
    });
    source.assignments.forEach((a, i) => {
      if (!parent.has(a.aggregator)) {
        throw invalid(`open.assignments[${i}].aggregator`, `${a.aggregator} has no place in the tree`);
      }
    });
    return new RoundTree(parent, deadline, siteAggregator);
  }

  /** Every aggregator of the tree, sorted. */
  get aggregators(): string[] {
    return [...this.#parent.keys()].sort();
  }

  /** The parent of `aggregator` (`''`: the coordinator), or undefined when it is not in the tree. */
  parentOf(aggregator: string): string | undefined {
    return this.#parent.get(aggregator);
  }

  /**
   * The children of `parent` (`''`: the coordinator's) that have at least one assigned site at or
   * below them, sorted: the partials `parent` waits for. An aggregator with nothing below it sends
   * nothing and is not waited for.
   */
  childrenOf(parent: string): readonly string[] {
    return this.#children.get(parent) ?? [];
  }

  /** When `aggregator` sends its partial at the latest (ms since the epoch); undefined when not in the tree. */
  deadlineOf(aggregator: string): number | undefined {
    return this.#deadline.get(aggregator);
  }

  /** 1 for a child of the coordinator, 2 for its children, …; 0 when not in the tree. */
  depthOf(aggregator: string): number {
    let depth = 0;
    for (let a: string | undefined = aggregator; a !== undefined && a !== ROOT; a = this.#parent.get(a))
      depth++;
    return this.#parent.has(aggregator) ? depth : 0;
  }

  /** The aggregator `site` is assigned to, or undefined when it takes no part. */
  aggregatorOf(site: string): string | undefined {
    return this.#siteAggregator.get(site);
  }

  /**
   * The child of `parent` whose subtree holds `aggregator` (it may be `aggregator` itself), or
   * undefined when `parent` is not above it. `childTowards('', a)` is the coordinator's child
   * whose partial carries `a`'s sites.
   */
  childTowards(parent: string, aggregator: string): string | undefined {
    let a = aggregator;
    for (;;) {
      const p = this.#parent.get(a);
      if (p === undefined) return undefined;
      if (p === parent) return a;
      if (p === ROOT) return undefined;
      a = p;
    }
  }

  /** Whether `site` is assigned to `aggregator` or to an aggregator below it. */
  covers(aggregator: string, site: string): boolean {
    const own = this.#siteAggregator.get(site);
    if (own === undefined) return false;
    if (own === aggregator) return true;
    const parent = this.#parent.get(aggregator);
    return parent !== undefined && this.childTowards(parent, own) === aggregator;
  }
}

function invalid(name: string, why: string): InvalidArgumentError {
  return new InvalidArgumentError(`${name} ${why}`, { details: { name } });
}
