#!/usr/bin/env bash
# bench/forks.sh: what libprof adds to each short-lived fork child, the cost that a shell
# script's subshells pay (bench/overhead.sh's bash_subshells). A bash loop of BENCH_CHILDREN
# (default 300) command substitutions, each a fork child with a trace of its own, run
# uninstrumented, under this build's libprof.so and, with BENCH_BASE_LIB=PATH, under another
# build's, in BENCH_ROUNDS (default 7) interleaved rounds. Prints the median wall time and the
# minor page faults (of bash and all its children, from GNU time's rusage), both per child.
# Then a prefork server's pattern in the same rounds (tests/progs/fork_tables.c: a parent
# with 4000 locks and 24 call paths forks 20 children that take the same locks and paths
# and exit): the median wall time, and the faults of the parent's pass over its locks after
# a fork (the worst of the 20). Writes $BUILD/bench/forks.txt.
# shellcheck source=bench/lib.sh
. "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/lib.sh"
ROUNDS=${BENCH_ROUNDS:-7}
CHILDREN=${BENCH_CHILDREN:-300}
positive BENCH_ROUNDS "$ROUNDS"
positive BENCH_CHILDREN "$CHILDREN"
built_lib
base_lib_from_env
unset_prof_env PROF_HEAP_SAMPLE PROF_LEAK_CHECK
[[ -x /usr/bin/time ]] || die "GNU time (/usr/bin/time) is needed: apt-get install time"
work_dir forks
cat >"$out/subshells.sh" <<SH
for i in \$(seq $CHILDREN); do x=\$(echo "\$i"); done
SH
modes=(none libprof)
[[ -z $base_lib ]] || modes+=(base)
for m in "${modes[@]}"; do : >"$out/$m.us"; : >"$out/$m.faults"; : >"$out/$m.pf_us"; : >"$out/$m.pf_faults"; done
${CC:-cc} -O1 -g -pthread tests/progs/fork_tables.c -o "$out/fork_tables"

run() {  # mode: appends its wall time (us) and minor faults
	local pre=()
	case $1 in
	libprof) pre=(env PROF_OUTPUT="$out/traces/%p.trace" LD_PRELOAD="$lib") ;;
	base) pre=(env PROF_OUTPUT="$out/traces/%p.trace" LD_PRELOAD="$base_lib") ;;
	esac
	rm -rf "$out/traces" && mkdir -p "$out/traces"
	local t0 t1 faults
	t0=$(date +%s%N)
	faults=$(/usr/bin/time -f '%R' "${pre[@]}" bash "$out/subshells.sh" 2>&1 >/dev/null | tail -1)
	t1=$(date +%s%N)
	echo $(((t1 - t0) / 1000)) >>"$out/$1.us"
	echo "$faults" >>"$out/$1.faults"
	rm -rf "$out/traces" && mkdir -p "$out/traces"
	t0=$(date +%s%N)
	faults=$("${pre[@]}" "$out/fork_tables" 4000 20 | awk '$1 == "faults_after_fork" { print $2 }')
	t1=$(date +%s%N)
	echo $(((t1 - t0) / 1000)) >>"$out/$1.pf_us"
	echo "$faults" >>"$out/$1.pf_faults"
}

for ((r = 1; r <= ROUNDS; r++)); do
	echo "$me: round $r/$ROUNDS" >&2
	for m in "${modes[@]}"; do run "$m"; done
done

{
	echo "$CHILDREN bash subshells: per child, median of $ROUNDS interleaved rounds"
	printf '%-8s %9s %9s %9s %11s\n' mode us/child added_us ratio faults/child
	none_us=$(median "$out/none.us")
	for m in "${modes[@]}"; do
		us=$(median "$out/$m.us")
		faults=$(median "$out/$m.faults")
		awk -v m="$m" -v us="$us" -v base="$none_us" -v f="$faults" -v n="$CHILDREN" 'BEGIN {
			printf "%-8s %9.0f %9.0f %8.2fx %11.0f\n", m, us / n, (us - base) / n,
				us / base, f / n }'
	done
	echo
	echo "prefork server (fork_tables 4000 20): median of $ROUNDS rounds"
	printf '%-8s %9s %9s %18s\n' mode ms ratio faults_after_fork
	none_us=$(median "$out/none.pf_us")
	for m in "${modes[@]}"; do
		awk -v m="$m" -v us="$(median "$out/$m.pf_us")" -v base="$none_us" \
			-v f="$(median "$out/$m.pf_faults")" 'BEGIN {
			printf "%-8s %9.1f %8.2fx %18.0f\n", m, us / 1000, us / base, f }'
	done
} | tee "$root/$BUILD/bench/forks.txt"
