#!/usr/bin/env bash
# Provides Node.js >= 22 on PATH. Source it: `. .ci/node22.sh`.
# Where the machine's node is older, installs the registry's `node@22` package
# (which ships a real binary) into a cache outside the repository and puts it first on PATH.
# Cache: $COHORT_NODE_CACHE or ~/.cache/cohort/node22.
_cohort_node_major() { command -v node >/dev/null 2>&1 && node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0; }
if [ "$(_cohort_node_major)" -lt 22 ]; then
  _cohort_cache="${COHORT_NODE_CACHE:-$HOME/.cache/cohort/node22}"
  if [ ! -x "$_cohort_cache/node_modules/node/bin/node" ]; then
    echo "node22: machine has node $(node --version 2>/dev/null || echo none); installing node@22 into $_cohort_cache" >&2
    mkdir -p "$_cohort_cache"
    # npm itself runs on the old node; the package's binary is what we want.
    (cd "$_cohort_cache" && npm install --no-save --no-audit --no-fund --prefix "$_cohort_cache" node@22 >&2) || {
      echo "node22: failed to install node@22 from the npm registry" >&2; return 1 2>/dev/null || exit 1; }
  fi
  export PATH="$_cohort_cache/node_modules/node/bin:$PATH"
  hash -r
  unset _cohort_cache
fi
if [ "$(_cohort_node_major)" -lt 22 ]; then
  echo "node22: still found node $(node --version) first on PATH; Node >= 22 is required" >&2
  return 1 2>/dev/null || exit 1
fi
unset -f _cohort_node_major
