#!/usr/bin/env bash
# bench/overhead.sh: wall time of programs run uninstrumented, under libprof with the stack
# cache off (PROF_STACK_CACHE=0) and on (the default), and under heaptrack; interleaved
# rounds, medians, and each one's ratio to the uninstrumented run. Environment:
#   BENCH_ROUNDS  rounds (default 5)     BUILD  build directory (default build)
#   BENCH_NO_HEAPTRACK=1  leave heaptrack out
set -euo pipefail
export LC_ALL=C
root=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)
cd "$root"
BUILD=${BUILD:-build}
ROUNDS=${BENCH_ROUNDS:-5}
lib=$root/$BUILD/libprof.so
[[ -f $lib ]] || { echo "overhead: $lib not found (run make first)" >&2; exit 1; }
unset LD_PRELOAD PROF_OUTPUT PROF_EVENTS PROF_STACK_DEPTH PROF_CPU_HZ PROF_DEBUG PROF_STACK_CACHE
out=$root/$BUILD/bench/overhead
mkdir -p "$out"
${CC:-cc} -O2 -g -std=gnu11 -pthread bench/alloc_bench.c -o "$out/alloc_bench"
${CXX:-c++} -O2 -g -pthread bench/cxx_bench.cpp -o "$out/cxx_bench"
cat > "$out/threads.py" <<'PY'
import threading
def work(n):
    d = {}
    for i in range(n):
        d[str(i)] = [i] * (i % 7)
        if i % 3 == 0:
            d.pop(str(i // 2), None)
ts = [threading.Thread(target=work, args=(150000,)) for _ in range(4)]
for t in ts: t.start()
for t in ts: t.join()
PY
cat > "$out/table.sql" <<'SQL'
CREATE TABLE t(a INTEGER, b TEXT);
WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c WHERE x<200000)
  INSERT INTO t SELECT x, hex(randomblob(16)) FROM c;
CREATE INDEX ib ON t(b);
SELECT count(*), sum(length(b)) FROM t WHERE b > '8';
SQL
declare -A cmd=(
	[alloc_1t]="$out/alloc_bench 1"
	[alloc_2t]="$out/alloc_bench 2"
	[cxx_4t]="$out/cxx_bench 4"
	[sqlite3]="sqlite3 :memory: -init $out/table.sql .quit"
	[python3_4t]="$(python3 -c "import sys; print(sys.executable)") $out/threads.py"
	[git_log]="git -C $root log -p -n 300"
)
names=(alloc_1t alloc_2t cxx_4t sqlite3 python3_4t git_log)
modes=(none cache_off libprof)
[[ ${BENCH_NO_HEAPTRACK:-} ]] || ! command -v heaptrack >/dev/null || modes+=(heaptrack)
run() {  # mode name: prints milliseconds
	local t0 t1
	rm -rf "$out/traces" && mkdir -p "$out/traces"
	t0=$(date +%s%N)
	case $1 in
	none) ${cmd[$2]} >/dev/null 2>&1 ;;
	cache_off) PROF_STACK_CACHE=0 PROF_OUTPUT=$out/traces/%p.trace LD_PRELOAD=$lib ${cmd[$2]} >/dev/null 2>&1 ;;
	libprof) PROF_OUTPUT=$out/traces/%p.trace LD_PRELOAD=$lib ${cmd[$2]} >/dev/null 2>&1 ;;
	heaptrack) heaptrack -o "$out/traces/ht" ${cmd[$2]} >/dev/null 2>&1 ;;
	esac
	t1=$(date +%s%N)
	echo $(((t1 - t0) / 1000000))
}
results=$out/times.txt
: >"$results"
for ((r = 0; r < ROUNDS; r++)); do
	for name in "${names[@]}"; do
		for mode in "${modes[@]}"; do
			echo "$name $mode $(run "$mode" "$name")" >>"$results"
		done
	done
done
python3 - "$results" "${modes[*]}" <<'PY'
import sys, statistics, collections
t = collections.defaultdict(list)
for line in open(sys.argv[1]):
    n, m, ms = line.split()
    t[n, m].append(int(ms))
modes = sys.argv[2].split()
print("%-11s" % "program" + "".join("%20s" % m for m in modes))
for n in dict.fromkeys(k[0] for k in t):
    base = statistics.median(t[n, "none"])
    cells = []
    for m in modes:
        med = statistics.median(t[n, m])
        cells.append("%20s" % ("%d ms" % med if m == "none" else "%d ms %5.2fx" % (med, med / base)))
    print("%-11s" % n + "".join(cells))
print("medians of %d interleaved rounds" % len(t[next(iter(t))]))
PY
