#!/usr/bin/env bash
# Installs Node 22 and 24 (the npm package `node`, which ships the binaries) for the tests that
# run the installed fabric on the Node lines users have (test/support/runtimes.ts). Outside the
# repository, so neither the lock file nor node_modules/.bin/node changes: `npm test` keeps
# running on the machine's Node. Idempotent: a line already there is left alone.
set -euo pipefail
dir="${FABRIC_TEST_NODES:-$HOME/.cache/agent-fabric/test-nodes}"
for line in 22 24; do
  if [ -x "$dir/$line/node_modules/node/bin/node" ]; then continue; fi
  mkdir -p "$dir/$line"
  printf '{ "name": "fabric-test-node-%s", "private": true }\n' "$line" > "$dir/$line/package.json"
  npm install --prefix "$dir/$line" --no-audit --no-fund --no-package-lock "node@$line" >/dev/null
  echo "installed $("$dir/$line/node_modules/node/bin/node" --version) in $dir/$line"
done
