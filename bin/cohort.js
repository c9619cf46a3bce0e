#!/usr/bin/env node
// Cohort command-line entry. Plain ESM JavaScript so that a too-old Node fails here with a
// clear message instead of a syntax error in the TypeScript sources, which Node >= 22.18
// runs directly (type stripping, no build step).
const [major = 0, minor = 0] = process.versions.node.split('.').map(Number);
if (major < 22 || (major === 22 && minor < 18)) {
  process.stderr.write(
    `cohort: Node.js >= 22.18 is required (this is ${process.version}).\n` +
      'From the repository root, `bash .ci/setup` (as root) installs Node 22 as /usr/local/bin/node;\n' +
      '`. .ci/node22.sh` puts it on PATH for this shell only. Then retry.\n',
  );
  process.exit(1);
}
await import('../src/cli/main.ts');
