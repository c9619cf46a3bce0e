/** Natural sites: one per distinct value of a column. */
export interface ColumnPartition {
  /** The distinct values, in order of first appearance; site s is `sites[s]`. */
  readonly sites: string[];
  /** Row indices of each site, ascending. */
  readonly indices: Uint32Array[];
}

/**
 * Partition by a column of the data (e.g. the hospital a record came from): one site per distinct
 * value, ordered by first appearance. Values are compared exactly (no trimming or case folding).
 *
 * @param values - one value per row
 */
export function partitionByColumn(values: readonly string[]): ColumnPartition {
  const siteOf = new Map<string, number>();
  const sites: string[] = [];
  const sizes: number[] = [];
  const rowSite = new Uint32Array(values.length);
  for (let i = 0; i < values.length; i++) {
    const v = values[i]!;
    let s = siteOf.get(v);
    if (s === undefined) {
      s = sites.length;
      siteOf.set(v, s);
      sites.push(v);
      sizes.push(0);
    }
    sizes[s]!++;
    rowSite[i] = s;
  }
  const indices = sizes.map((n) => new Uint32Array(n));
  const fill = new Uint32Array(sites.length);
  for (let i = 0; i < values.length; i++) {
    const s = rowSite[i]!;
    indices[s]![fill[s]!++] = i;
  }
  return { sites, indices };
}
