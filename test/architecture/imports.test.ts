// The floor plan, checked from the source: every relative import and re-export of every module is
// read, and the folders must form no cycle, no role (coordinator, aggregator, agent) may import
// another role (what they share is the round's vocabulary, src/round, and the protocol), and the
// pure layers (crypto/, federation/, gpu/) may use nothing of src/ but its error catalogue.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '../..');
const CODE_FOLDERS = ['src', 'crypto', 'federation', 'gpu'];
const ROLES = ['src/services/agent', 'src/services/aggregator', 'src/services/coordinator'];
const PURE = ['crypto', 'federation', 'gpu'];

/** Every `.ts` file under `dir` (repository-relative, `/`-separated). */
function sources(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(join(ROOT, dir))) {
    const path = `${dir}/${name}`;
    if (statSync(join(ROOT, path)).isDirectory()) out.push(...sources(path));
    else if (name.endsWith('.ts') && !name.endsWith('.d.ts')) out.push(path);
  }
  return out;
}

/** One import: the importing file and the file it names (repository-relative). */
interface Edge {
  readonly from: string;
  readonly to: string;
}

// `import … from '…'`, `export … from '…'`, `import '…'`, `import('…')`.
const SPECIFIER = /(?:\bfrom\s*|\bimport\s*\(?\s*)'(\.{1,2}\/[^']+)'/g;

function edgesOf(file: string): Edge[] {
  const text = readFileSync(join(ROOT, file), 'utf8');
  const edges: Edge[] = [];
  for (const m of text.matchAll(SPECIFIER)) {
    const to = relative(ROOT, resolve(ROOT, dirname(file), m[1]!))
      .split(sep)
      .join('/');
    edges.push({ from: file, to });
  }
  return edges;
}

const EDGES: readonly Edge[] = CODE_FOLDERS.flatMap(sources).flatMap(edgesOf);

/** The folder a file belongs to at `depth` path segments (`src/services/agent` at 3). */
function folderOf(file: string, depth: number): string {
  return file.split('/').slice(0, -1).slice(0, depth).join('/');
}

/** Cycles among folders at `depth` (Tarjan's strongly connected components), each with one edge per step. */
function folderCycles(depth: number): string[] {
  const graph = new Map<string, Map<string, Edge>>();
  for (const e of EDGES) {
    const a = folderOf(e.from, depth);
    const b = folderOf(e.to, depth);
    if (a === b || b === '') continue;
    if (!graph.has(a)) graph.set(a, new Map());
    if (!graph.get(a)!.has(b)) graph.get(a)!.set(b, e);
  }
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const cycles: string[] = [];
  let next = 0;
  const visit = (v: string): void => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v)?.keys() ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) !== index.get(v)) return;
    const component: string[] = [];
    let w: string;
    do {
      w = stack.pop()!;
      onStack.delete(w);
      component.push(w);
    } while (w !== v);
    if (component.length < 2) return;
    const inside = new Set(component);
    const steps = component.flatMap((a) =>
      [...(graph.get(a) ?? new Map<string, Edge>())]
        .filter(([b]) => inside.has(b))
        .map(([b, e]) => `${a} → ${b} (${e.from} imports ${e.to})`),
    );
    cycles.push(steps.join('; '));
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return cycles;
}

describe('the floor plan (imports read from the source)', () => {
  it('reads the imports of every module', () => {
    expect(EDGES.length).toBeGreaterThan(1000);
    // The reader sees the imports it must judge: a role's import of the round vocabulary.
    expect(EDGES.some((e) => e.from.startsWith('src/services/agent/') && e.to === 'src/round/index.ts')).toBe(
      true,
    );
  });

  it('no folder imports a folder that imports it back (top-level folders, and every folder)', () => {
    expect(folderCycles(2)).toEqual([]);
    expect(folderCycles(Number.MAX_SAFE_INTEGER)).toEqual([]);
  });

  it('no role imports another role', () => {
    const crossing = EDGES.filter((e) => {
      const from = ROLES.find((r) => e.from.startsWith(`${r}/`));
      const to = ROLES.find((r) => e.to.startsWith(`${r}/`));
      return from !== undefined && to !== undefined && from !== to;
    }).map((e) => `${e.from} imports ${e.to}`);
    expect(crossing).toEqual([]);
  });

  it('crypto/, federation/ and gpu/ use nothing of src/ but its error catalogue', () => {
    const reaching = EDGES.filter(
      (e) =>
        PURE.some((p) => e.from.startsWith(`${p}/`)) &&
        e.to.startsWith('src/') &&
        !e.to.startsWith('src/errors/'),
    ).map((e) => `${e.from} imports ${e.to}`);
    expect(reaching).toEqual([]);
  });

  it('catches a cycle and a role crossing when there is one (the checks can fail)', () => {
    const saved = [...EDGES];
    const fake: Edge[] = [
      { from: 'src/services/agent/x.ts', to: 'src/services/coordinator/y.ts' },
      { from: 'src/services/coordinator/y.ts', to: 'src/services/agent/x.ts' },
    ];
    (EDGES as Edge[]).push(...fake);
    try {
      expect(folderCycles(3).join('\n')).toMatch(/src\/services\/agent → src\/services\/coordinator/);
    } finally {
      (EDGES as Edge[]).splice(0, EDGES.length, ...saved);
    }
  });
});
