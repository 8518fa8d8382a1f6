#!/usr/bin/env bash
# fuzz.sh runs every fuzz test of the module (each `func FuzzX(f *testing.F)` in the _test.go
# files of its packages) for a bounded time: FUZZ_BUDGET seconds shared evenly among them, but
# at least FUZZ_MIN_TIME seconds each. Their seed corpora (testdata/fuzz/FuzzX/ beside each)
# also run as plain tests in `make test`. When a fuzz test fails, Go writes the input that made
# it fail to testdata/fuzz/FuzzX/ and prints the command to rerun it: fix the bug and check the
# input in, so that it stays a test. Packages whose tests start an API server are skipped.
#
# Usage: hack/fuzz.sh   (FUZZ_BUDGET=48 and FUZZ_MIN_TIME=5 unless set)
set -euo pipefail
cd "$(dirname "$0")/.."
export GOTOOLCHAIN=${GOTOOLCHAIN:-local}
budget=${FUZZ_BUDGET:-48}
min_time=${FUZZ_MIN_TIME:-5}

targets=()
while read -r pkg dir; do
  # A package whose tests start an API server in TestMain cannot be fuzzed: every fuzz worker
  # runs TestMain too, and `go test -fuzz` then never stops. Its corpus still runs in make test.
  if grep -qs 'apiserver.Main(' "$dir"/*_test.go; then
    if grep -qsE '^func Fuzz[A-Za-z0-9_]*\(f \*testing\.F\)' "$dir"/*_test.go; then
      echo "skipping the fuzz tests of $pkg: its TestMain starts an API server"
    fi
    continue
  fi
  for file in "$dir"/*_test.go; do
    [[ -e $file ]] || continue
    while read -r name; do
      targets+=("$pkg $name")
    done < <(sed -nE 's/^func (Fuzz[A-Za-z0-9_]*)\(f \*testing\.F\).*/\1/p' "$file")
  done
done < <(go list -f '{{.ImportPath}} {{.Dir}}' ./...)

if [[ ${#targets[@]} -eq 0 ]]; then
  echo "no fuzz tests found"
  exit 0
fi
per=$((budget / ${#targets[@]}))
((per >= min_time)) || per=$min_time
echo "fuzzing ${#targets[@]} targets for ${per}s each"
for target in "${targets[@]}"; do
  read -r pkg name <<<"$target"
  echo "--- $name ($pkg)"
  start=$SECONDS
  # Go's fuzzer sometimes reports "context deadline exceeded" at the end of -fuzztime, with no
  # failing input written, when its deadline passes while a worker is still on an input: that
  # is not a finding, so such a run is tried once more; any other failure stands.
  log=$(mktemp)
  if ! go test -run '^$' -fuzz "^${name}\$" -fuzztime "${per}s" -fuzzminimizetime 5s "$pkg" 2>&1 | tee "$log"; then
    if grep -q 'context deadline exceeded' "$log" && ! grep -q 'Failing input written' "$log"; then
      echo "    the fuzzer's deadline, not a finding: once more"
      go test -run '^$' -fuzz "^${name}\$" -fuzztime "${per}s" -fuzzminimizetime 5s "$pkg"
    else
      rm -f "$log"
      exit 1
    fi
  fi
  rm -f "$log"
  echo "    $((SECONDS - start))s with the build"
done
