#!/usr/bin/env bash
# The static checks `npm test` runs before any test: the type checker on each tsconfig (each
# folder has its own lib and types) and ESLint. tsc, vue-tsc and ESLint each use one core, so the
# checks run side by side in three lanes (on 2 cores this takes about half the time of running
# them one after another, which is what kept CI over its 20 minutes); each lane's output is printed
# whole, under its name, when it ends, and the script fails if any check failed.
#
#   bash scripts/check.sh              type check and lint
#   bash scripts/check.sh typecheck    type check only (npm run typecheck)
set -uo pipefail
cd "$(dirname "$0")/.."

# A lane is a list of commands run one after another; the lanes are about equal in CPU time
# (measured on this project: the test project ~32 s, lint ~37 s, the other four together ~43 s).
typecheck_lanes=(
  "npx tsc -p tsconfig.test.json --noEmit"
  "npx tsc -p tsconfig.shared.json --noEmit && npx tsc -p tsconfig.main.json --noEmit && npx tsc -p tsconfig.preload.json --noEmit && npx vue-tsc -p tsconfig.renderer.json --noEmit"
)
lint_lane="npm run --silent lint"   # the lint script of package.json, so its flags live in one place

case "${1:-all}" in
  all) lanes=("${typecheck_lanes[@]}" "$lint_lane") ;;
  typecheck) lanes=("${typecheck_lanes[@]}") ;;
  *) echo "scripts/check.sh: unknown argument '$1' (use no argument, or 'typecheck')" >&2; exit 2 ;;
esac

logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
pids=()
for i in "${!lanes[@]}"; do
  bash -c "${lanes[$i]}" > "$logs/$i.log" 2>&1 &
  pids+=("$!")
done

failed=0
for i in "${!lanes[@]}"; do
  if wait "${pids[$i]}"; then status=ok; else status=FAILED; failed=1; fi
  echo "── $status: ${lanes[$i]}"
  cat "$logs/$i.log"
done
exit $failed
