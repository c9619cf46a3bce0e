/**
 * The URL of the module `path` (written with its `.ts` name, relative to `base`, the caller's
 * `import.meta.url`) that a Worker, a child process or a dynamic import should load: the `.ts`
 * file itself when the caller runs from its TypeScript source (Node strips the types), its
 * compiled `.js` twin when the caller is compiled JavaScript (an installed package, where Node
 * strips no types under `node_modules`).
 */
export function moduleUrl(path: string, base: string): URL {
  if (!path.endsWith('.ts')) throw new RangeError(`path ${JSON.stringify(path)} must name a .ts module`);
  return new URL(base.endsWith('.js') ? `${path.slice(0, -3)}.js` : path, base);
}
