#!/usr/bin/env bash
# make fuzz: tests/fuzz/run.sh BUILD SECONDS TARGET...: replays the regression inputs through
# every target, then fuzzes each target SECONDS from the seeds; a crash stops with its input
# (copy it to tests/fuzz/regressions/ once fixed).
set -euo pipefail
build=$1 seconds=$2
shift 2
here=$(cd "$(dirname "$0")" && pwd)
export ASAN_OPTIONS=detect_leaks=0:allocator_may_return_null=1 UBSAN_OPTIONS=print_stacktrace=1
for t in "$@"; do
	regress=("$here"/regressions/*)
	if [[ -e ${regress[0]} ]]; then
		"$build/fuzz-$t" "${regress[@]}" >/dev/null 2>"$build/fuzz-$t.replay.log" ||
			{ tail -40 "$build/fuzz-$t.replay.log"; echo "fuzz: $t fails on a regression input" >&2; exit 1; }
	fi
	mkdir -p "$build/corpus-$t"
	echo "fuzz: $t for ${seconds}s"
	"$build/fuzz-$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
		-artifact_prefix="$build/crash-$t-" "$build/corpus-$t" "$here/seeds" 2>"$build/fuzz-$t.log" ||
		{ tail -40 "$build/fuzz-$t.log"; echo "fuzz: $t found a crash: $build/crash-$t-*" >&2; exit 1; }
	grep -E '^#[0-9]+.*DONE' "$build/fuzz-$t.log" | tail -1
done
