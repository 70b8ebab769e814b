#!/usr/bin/env bash
# bench/table.sh (`make bench-table`): the published table (README, "Measured"). One run, side
# by side: each workload plainly, under libprof, heaptrack, valgrind memcheck, strace -c and
# perf record; then `prof report` throughput and peak memory on a synthetic trace. Writes
# Markdown to build/bench/table.md. Environment:
#   TABLE_ROUNDS  runs per cell, the median is shown (default 1: one run, noisy)
#   TABLE_SCALE   workload size factor (default 1: each plain run is about 0.2-1 s)
#   TABLE_EVENTS  events in the analyzer's trace (default 50000000; about 2 GB in TMPDIR)
#   BUILD         build directory (default build)
# shellcheck source=bench/lib.sh
. "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/lib.sh"
# No -e: a tool that fails or is missing gives n/a in its cell.
set +e
export PATH=/usr/bin:/bin:$PATH  # Debian's python3, not a wrapper script found first
ROUNDS=${TABLE_ROUNDS:-1}
SCALE=${TABLE_SCALE:-1}
EVENTS=${TABLE_EVENTS:-50000000}
lib=$root/$BUILD/libprof.so
prof=$root/$BUILD/prof
out=$root/$BUILD/bench
mkdir -p "$out"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/prof-table.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
[[ -f $lib && -x $prof ]] || die "run make first"
scripts/install-deps --bench >/dev/null || echo "bench/table: some tools missing, their cells say n/a" >&2

for b in alloc_bench lock_bench io_bench cpu_bench; do
	cc -O2 -g -pthread -Wall -Wextra -o "$tmp/$b" "bench/$b.c" || exit 1
done
cc -O2 -g -std=gnu11 -Wall -Wextra -Ishared bench/tracegen_big.c -o "$tmp/tracegen_big" || exit 1

# Seconds (wall, median of ROUNDS) of one command line under a tool; "n/a" if the tool is
# missing or fails, "> 600" past the limit.
run_under() { # tool, command...
	local tool=$1 t0 t1 times=() i rc
	shift
	case $tool in
	plain) ;;
	libprof) set -- env LD_PRELOAD="$lib" PROF_OUTPUT="$tmp/run/prof.%p.trace" "$@" ;;
	heaptrack) command -v heaptrack >/dev/null || { echo n/a; return; }
		set -- heaptrack -o "$tmp/run/ht" "$@" ;;
	memcheck) command -v valgrind >/dev/null || { echo n/a; return; }
		set -- valgrind --tool=memcheck -q --error-exitcode=0 "$@" ;;
	strace) command -v strace >/dev/null || { echo n/a; return; }
		set -- strace -f -c -o "$tmp/run/strace.txt" "$@" ;;
	perf) command -v perf >/dev/null || { echo n/a; return; }
		set -- perf record -q -g -o "$tmp/run/perf.data" "$@" ;;
	esac
	for ((i = 0; i < ROUNDS; i++)); do
		# A fresh working directory each round: sqlite3's database must not exist yet.
		rm -rf "$tmp/run" "$tmp/work" && mkdir "$tmp/run" "$tmp/work"
		t0=$(date +%s%N)
		(cd "$tmp/work" && timeout 600 "$@") >/dev/null 2>&1 </dev/null
		rc=$?
		t1=$(date +%s%N)
		((rc == 124)) && { echo "> 600"; return; }
		((rc == 0)) || { echo n/a; return; }
		times+=($(((t1 - t0) / 1000000)))
	done
	printf '%s\n' "${times[@]}" | sort -n | awk '{a[NR]=$1} END {printf "%.2f\n", a[int((NR+1)/2)]/1000}'
}

tools=(plain libprof heaptrack memcheck strace perf)
s=$SCALE
workloads=(
	"alloc|allocations (alloc_bench, 2 threads)|$tmp/alloc_bench 2 $((200000 * s))"
	"locks|contended mutex (lock_bench, 2 threads)|$tmp/lock_bench contended 2 $((4000000 * s))"
	"io|512-byte writes (io_bench)|$tmp/io_bench write data $((200000 * s))"
	"cpu|CPU-bound, 2 threads (cpu_bench)|$tmp/cpu_bench 2 $((100000 * s))"
	"sqlite|sqlite3: $((100000 * s)) inserts, an index, a query|sqlite3 db.sqlite \"create table t(a,b); with recursive c(x) as (select 1 union all select x+1 from c where x<$((100000 * s))) insert into t select x, x*7 % 1000 from c; create index i on t(b); select count(*) from t where b < 10;\""
	"python|python3: JSON round trip of 200k objects|python3 -c \"import json; d=[{'i': i, 's': str(i)} for i in range($((200000 * s)))]; print(len(json.loads(json.dumps(d))))\""
)
md=$out/table.md
{
	echo "| workload | uninstrumented | libprof | heaptrack | valgrind memcheck | strace -c | perf record -g |"
	echo "|---|---|---|---|---|---|---|"
} >"$md"
for w in "${workloads[@]}"; do
	IFS='|' read -r key title cmd <<<"$w"
	row="| $title |"
	base=
	for tool in "${tools[@]}"; do
		secs=$(eval "run_under $tool $cmd")
		if [[ $tool == plain ]]; then
			base=$secs
			row+=" $secs s |"
		elif [[ $secs =~ ^[0-9.]+$ && $base =~ ^[0-9.]+$ ]]; then
			row+=" $secs s ($(awk -v a="$secs" -v b="$base" 'BEGIN {printf "%.1f", (b > 0 ? a / b : 0)}')x) |"
		else
			row+=" $secs |"
		fi
		echo "bench/table: $key $tool $secs" >&2
	done
	echo "$row" >>"$md"
done

# The analyzer: prof report on a synthetic heap trace of EVENTS events.
"$tmp/tracegen_big" heap "$EVENTS" "$tmp/big.trace" >/dev/null || { echo "tracegen_big failed" >&2; exit 1; }
size=$(stat -c %s "$tmp/big.trace")
t0=$(date +%s%N)
/usr/bin/time -o "$tmp/time" -f '%M' "$prof" report "$tmp/big.trace" >/dev/null 2>&1
t1=$(date +%s%N)
secs=$(awk -v n=$((t1 - t0)) 'BEGIN {printf "%.1f", n / 1e9}')
rss=$(awk '{printf "%.0f", $1 / 1024}' "$tmp/time")
rate=$(awk -v e="$EVENTS" -v s="$secs" 'BEGIN {printf "%.1f", e / s / 1e6}')
{
	echo
	echo "prof report on a synthetic heap trace of $EVENTS events ($((size / 1048576)) MiB,"
	echo "bench/tracegen_big.c): $secs s, $rate M events/s, peak RSS $rss MiB."
} >>"$md"
cat "$md"
