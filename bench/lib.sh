# shellcheck shell=bash
# bench/lib.sh: what every bench script begins with, sourced first. Strict mode, the C
# locale, the repository root as $root and working directory, BUILD (default build), and
# the helpers: die (its prefix, $me, is bench/NAME for bench/NAME.sh), is_positive,
# positive, unset_prof_env, median and median_low.
set -euo pipefail
export LC_ALL=C

# Before the cd: the script's path may be relative.
me=bench/$(basename "$(readlink -f "${BASH_SOURCE[1]}")" .sh)
die() { echo "$me: $*" >&2; exit 1; }

root=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)
cd "$root"

BUILD=${BUILD:-build}

# is_positive VALUE...: whether every VALUE is a positive integer (no sign, no leading 0).
is_positive() {
	local v
	for v; do [[ $v =~ ^[1-9][0-9]*$ ]] || return 1; done
}
# positive NAME VALUE: dies unless VALUE, the setting NAME, is a positive integer.
positive() { is_positive "$2" || die "$1 must be a positive number, not '$2'"; }

# Nothing of the caller's profiling setup may leak into the runs; a script names its own
# extra variables.
# shellcheck disable=SC2120  # the arguments are optional
unset_prof_env() { unset LD_PRELOAD PROF_OUTPUT PROF_EVENTS PROF_STACK_DEPTH PROF_CPU_HZ PROF_DEBUG "$@"; }

# median [FILE...]: the median of the numbers, one a line, in FILEs or on stdin; of an even
# count, the mean of the middle two.
# shellcheck disable=SC2120  # the files are optional
median() { sort -g "$@" | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2];
	else printf "%.6g\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
# median_low [FILE...]: the same, but of an even count the lower middle one: always one of
# the numbers, so an integer stays an integer.
# shellcheck disable=SC2120  # the files are optional
median_low() { sort -g "$@" | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

# built_lib: $lib, this build's libprof.so, which must exist.
built_lib() {
	lib=$root/$BUILD/libprof.so
	[[ -f $lib ]] || die "$lib not found (run make first)"
}

# work_dir NAME: $out, $BUILD/bench/NAME, made; the traces it runs leave in $out/traces are
# emptied at exit (fresh_traces).
work_dir() {
	out=$root/$BUILD/bench/$1
	mkdir -p "$out"
	trap 'fresh_traces' EXIT
}

# fresh_traces: $out/traces, made empty for the next run. The last run's files are emptied
# (their blocks freed) and moved to $BUILD/bench/.emptied, not deleted: on an ext4 without a
# journal (this project's VM), a file created within some 30 s of deletions in its inode group
# first skips past each deleted inode (ext4's recently_deleted()), and after the 300 traces of a
# subshell loop were deleted, creating each of the next run's cost 0.1-0.4 ms more (a third of
# what libprof adds to a subshell), which only the benchmark's own clean-up caused. `make
# bench` deletes .emptied at its end.
fresh_traces() {
	local dead=$root/$BUILD/bench/.emptied
	if [[ -d $out/traces ]]; then
		mkdir -p "$dead"
		find "$out/traces" -type f -exec truncate -s 0 {} +
		mv "$out/traces" "$(mktemp -d "$dead/XXXXXX")/"
	fi
	mkdir -p "$out/traces"
}

# base_lib_from_env: $base_lib, the full path of BENCH_BASE_LIB (another build's libprof.so,
# run beside this one), or empty where it is not set.
base_lib_from_env() {
	base_lib=${BENCH_BASE_LIB:-}
	[[ -z $base_lib ]] && return 0
	[[ -f $base_lib ]] || die "BENCH_BASE_LIB: $base_lib not found"
	base_lib=$(readlink -f "$base_lib")
}
