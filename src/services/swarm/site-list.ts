import { InvalidArgumentError } from '../../errors/index.ts';

/** Most members one list may name (a range `site-1..site-100000` is refused before it is expanded). */
export const MAX_SWARM_MEMBERS = 100_000;

const RANGE = /^([A-Za-z0-9_-]*?)(\d+)\.\.([A-Za-z0-9_-]*?)(\d+)$/;

/**
 * The member ids of a `--sites` list: comma-separated ids and ranges `site-1..site-256` (same
 * prefix on both ends, first ≤ last; the numbers are written without padding), in order, each once.
 *
 * @throws InvalidArgumentError naming the item when a range is malformed or the list is empty, holds
 *   a duplicate, or names more than {@link MAX_SWARM_MEMBERS} members.
 */
export function parseSiteList(list: string): string[] {
  if (typeof list !== 'string') throw new InvalidArgumentError('the site list must be a string');
  const out: string[] = [];
  const seen = new Set<string>();
  const add = (id: string) => {
    if (seen.has(id)) throw new InvalidArgumentError(`the site list names ${id} twice`);
    seen.add(id);
    out.push(id);
  };
  for (const raw of list.split(',')) {
    const item = raw.trim();
    if (item === '') continue;
    const range = RANGE.exec(item);
    if (range === null) {
      if (item.includes('..'))
        throw new InvalidArgumentError(`site range "${item}" must read like site-1..site-64`);
      add(item);
      continue;
    }
    const [, prefix, first, lastPrefix, last] = range as unknown as [string, string, string, string, string];
    const from = Number(first);
    const to = Number(last);
    if (prefix !== lastPrefix || from > to) {
      throw new InvalidArgumentError(
        `site range "${item}" must have the same prefix on both ends and its first number ≤ its last`,
      );
    }
    if (out.length + (to - from + 1) > MAX_SWARM_MEMBERS) {
      throw new InvalidArgumentError(`the site list names more than ${MAX_SWARM_MEMBERS} members`);
    }
    for (let i = from; i <= to; i++) add(`${prefix}${i}`);
  }
  if (out.length === 0) throw new InvalidArgumentError('the site list names no site');
  if (out.length > MAX_SWARM_MEMBERS) {
    throw new InvalidArgumentError(`the site list names more than ${MAX_SWARM_MEMBERS} members`);
  }
  return out;
}
