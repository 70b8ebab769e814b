#!/usr/bin/env bash
# bench/overhead.sh: the goals table of issue 18, in one run. Programs run uninstrumented,
# under libprof (every family), under libprof with PROF_HEAP_SAMPLE=512K, and under heaptrack
# (wall time, ratio to uninstrumented); then per-call costs of locks, cached reads and CUDA
# calls (the fake driver), plainly and under libprof; then bytes per event (bench/tracesize.sh,
# when it exists). BENCH_ROUNDS interleaved rounds, medians. Writes build/bench/overhead.txt.
# Environment:
#   BENCH_ROUNDS  rounds (default 3)     BUILD  build directory (default build)
#   BENCH_NO_HEAPTRACK=1  leave heaptrack out     BENCH_CACHE_OFF=1  add PROF_STACK_CACHE=0
#   BENCH_BASE_LIB=PATH   add a column "base": the programs under another libprof.so (a build
#                         of an earlier commit), side by side with this one in the same rounds
#   BENCH_TIMEOUT=S       a program's run killed after S seconds (default 300), shown as "hung":
#                         heaptrack once hung a bash subshell for good (a lock its fork child
#                         inherited held), and the whole benchmark waited
# shellcheck source=bench/lib.sh
. "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/lib.sh"
ROUNDS=${BENCH_ROUNDS:-3}
TIMEOUT=${BENCH_TIMEOUT:-300}
positive BENCH_ROUNDS "$ROUNDS"
positive BENCH_TIMEOUT "$TIMEOUT"
built_lib
unset_prof_env PROF_STACK_CACHE PROF_HEAP_SAMPLE PROF_HEAP_SAMPLE_SEED PROF_LEAK_CHECK PROF_CUDA_TIMING
work_dir overhead
${CC:-cc} -O2 -g -std=gnu11 -pthread bench/alloc_bench.c -o "$out/alloc_bench"
${CC:-cc} -O2 -g -std=gnu11 -pthread bench/lock_bench.c -o "$out/lock_bench"
${CC:-cc} -O2 -g -std=gnu11 bench/io_bench.c -o "$out/io_bench"
${CXX:-c++} -O2 -g -pthread bench/cxx_bench.cpp -o "$out/cxx_bench"
fake=$root/$BUILD/cuda
have_cuda=0
if [[ -f $fake/libcuda.so.1 ]]; then
	${CC:-cc} -O2 -g bench/cuda_bench.c -o "$out/cuda_bench" -L"$fake" -l:libcuda.so.1 \
		-Wl,-rpath,"$fake" && have_cuda=1
fi
head -c $((1 << 20)) /dev/urandom >"$out/read.dat"
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
# A shell script that forks: 300 subshells, each a process with a trace of its own.
cat > "$out/subshells.sh" <<'SH'
for i in $(seq 300); do x=$(echo "$i"); done
SH
short="env ALLOC_BENCH_DEPTH=2-6"
declare -A cmd=(
	[alloc_short_1t]="$short $out/alloc_bench 1 500000"
	[alloc_short_2t]="$short $out/alloc_bench 2 500000"
	[alloc_deep_1t]="env ALLOC_BENCH_DEPTH=40-80 $out/alloc_bench 1 500000"
	[alloc_forked_1t]="$short ALLOC_BENCH_FORK=1 $out/alloc_bench 1 500000"
	[cxx_4t]="$out/cxx_bench 4"
	[sqlite3]="sqlite3 :memory: -init $out/table.sql .quit"
	[python3_4t]="$(python3 -c "import sys; print(sys.executable)") $out/threads.py"
	[git_log]="git -C $root log -p -n 300"
	[bash_subshells]="bash $out/subshells.sh"
)
names=(alloc_short_1t alloc_short_2t alloc_deep_1t alloc_forked_1t cxx_4t sqlite3 python3_4t git_log bash_subshells)
# JIT runtimes, where installed: their generated code has no unwind info, which costs libunwind
# the most (signal masks, address checks) in each unwind that goes through it.
if command -v node >/dev/null; then
	cat >"$out/maps.js" <<'JS'
let m = new Map(), s = 0;
for (let i = 0; i < 2000000; i++) { m.set('k' + (i % 50000), { i, a: [i, i + 1] }); s += m.size; }
const b = []; for (let i = 0; i < 200; i++) b.push(Buffer.alloc(1 << 16));
console.log(s);
JS
	cmd[node_js]="node $out/maps.js"
	names+=(node_js)
fi
if command -v javac >/dev/null && command -v java >/dev/null; then
	cat >"$out/Maps.java" <<'JAVA'
import java.util.HashMap;
public class Maps {
	public static void main(String[] args) {
		HashMap<String, int[]> m = new HashMap<>();
		long s = 0;
		for (int i = 0; i < 3000000; i++) { m.put("k" + (i % 50000), new int[] { i, i + 1 }); s += m.size(); }
		System.out.println(s);
	}
}
JAVA
	if javac -d "$out" "$out/Maps.java" 2>/dev/null; then
		cmd[java]="java -cp $out Maps"
		names+=(java)
	fi
fi
# A compiler, where installed: tens of thousands of distinct call stacks, most seen a few
# times, where the stack cache's recordings cost the most (one file of ours, optimised).
if command -v clang >/dev/null; then
	cmd[clang_O2]="clang -O2 -I$root/analyzer -I$root/shared -c $root/analyzer/cuda.c -o $out/cuda.o"
	names+=(clang_O2)
fi
modes=(none libprof sample512k)
[[ -z ${BENCH_CACHE_OFF:-} ]] || modes+=(cache_off)
base_lib_from_env
[[ -z $base_lib ]] || modes+=(base)
[[ ${BENCH_NO_HEAPTRACK:-} ]] || ! command -v heaptrack >/dev/null || modes+=(heaptrack)
limited() {  # command: run with the time limit (killed, with what it started, at the end)
	timeout -k 10 "$TIMEOUT" "$@"
}
traced() {  # env... command: under libprof ($lib), traces in $out/traces (timeout itself is not)
	limited env PROF_OUTPUT="$out/traces/%p.trace" LD_PRELOAD="$lib" "$@"
}
heaptracked() {  # [env VAR=VALUE...] command: under heaptrack, which must run the program
	# itself: heaptrack running `env` loses the program env executes
	local vars=()
	if [[ $1 == env ]]; then
		shift
		while [[ $1 == *=* ]]; do vars+=("$1"); shift; done
	fi
	limited env "${vars[@]}" heaptrack -o "$out/traces/ht" "$@"
}
run() {  # mode name: prints milliseconds, or "hung" where the time limit killed the run
	local t0 t1 rc=0
	fresh_traces
	t0=$(date +%s%N)
	case $1 in
	none) limited ${cmd[$2]} >/dev/null 2>&1 || rc=$? ;;
	libprof) traced ${cmd[$2]} >/dev/null 2>&1 || rc=$? ;;
	sample512k) PROF_HEAP_SAMPLE=512K traced ${cmd[$2]} >/dev/null 2>&1 || rc=$? ;;
	cache_off) PROF_STACK_CACHE=0 traced ${cmd[$2]} >/dev/null 2>&1 || rc=$? ;;
	base) lib=$base_lib traced ${cmd[$2]} >/dev/null 2>&1 || rc=$? ;;
	heaptrack) heaptracked ${cmd[$2]} >/dev/null 2>&1 || rc=$? ;;
	esac
	t1=$(date +%s%N)
	if ((rc == 124 || rc == 137)); then
		echo "$me: $2 under $1 killed after $TIMEOUT s" >&2
		echo hung
	else
		echo $(((t1 - t0) / 1000000))
	fi
}
# Per call, in ns: "name mode" -> a command printing its ns per call.
percall() {  # name mode
	local v
	fresh_traces
	local pre=()
	[[ $2 == none ]] || pre=(env PROF_OUTPUT=$out/traces/%p.trace LD_PRELOAD=$lib)
	case $1 in
	lock_1t) v=$("${pre[@]}" "$out/lock_bench" uncontended 1 3000000 | sed 's/.*ns_per_pair=//') ;;
	lock_2t) v=$("${pre[@]}" "$out/lock_bench" uncontended 2 3000000 | sed 's/.*ns_per_pair=//') ;;
	read_4k) v=$("${pre[@]}" "$out/io_bench" read "$out/read.dat" 300000)
		 v=$(awk -v t="$v" 'BEGIN { printf "%.1f", t / 300000 }') ;;
	cuda_launch) v=$("${pre[@]}" env FAKE_CUDA_SYNC=1 PROF_EVENTS=cuda PROF_CUDA_TIMING=none \
			 "$out/cuda_bench" launch 100000) ;;
	cuda_launch_events) v=$("${pre[@]}" env FAKE_CUDA_SYNC=1 PROF_EVENTS=cuda \
				PROF_CUDA_TIMING=events "$out/cuda_bench" launch 100000) ;;
	esac
	echo "$v"
}
calls=(lock_1t lock_2t read_4k)
((have_cuda == 0)) || calls+=(cuda_launch cuda_launch_events)
results=$out/times.txt
: >"$results"
for ((r = 0; r < ROUNDS; r++)); do
	echo "bench/overhead: round $((r + 1))/$ROUNDS" >&2
	for name in "${names[@]}"; do
		for mode in "${modes[@]}"; do
			echo "prog $name $mode $(run "$mode" "$name")" >>"$results"
		done
	done
	for name in "${calls[@]}"; do
		for mode in none libprof; do
			echo "call $name $mode $(percall "$name" "$mode")" >>"$results"
		done
	done
done
python3 - "$results" "${modes[*]}" "$ROUNDS" <<'PY' | tee "$out/../overhead.txt"
import sys, statistics, collections
t = collections.defaultdict(list)
hung = collections.Counter()
for line in open(sys.argv[1]):
    kind, n, m, v = line.split()
    if v == "hung":
        hung[kind, n, m] += 1
    else:
        t[kind, n, m].append(float(v))
modes = sys.argv[2].split()
goal = {"libprof": "2.0x", "sample512k": "1.1x"}
print("Programs: wall time, median of %s interleaved rounds (ratio to uninstrumented)" % sys.argv[3])
print("%-15s" % "program" + "".join("%18s" % m for m in modes))
for n in dict.fromkeys(k[1] for k in list(t) + list(hung) if k[0] == "prog"):
    base = statistics.median(t["prog", n, "none"]) if t["prog", n, "none"] else 0
    cells = []
    for m in modes:
        runs = t["prog", n, m]
        if not runs or not base:
            cells.append("%18s" % "hung")
            continue
        med = statistics.median(runs)
        cell = "%d ms" % med if m == "none" else "%d ms %5.2fx" % (med, med / base)
        cells.append("%18s" % (cell + ("*" if hung["prog", n, m] else "")))
    print("%-15s" % n + "".join(cells))
if hung:
    print("hung (killed after BENCH_TIMEOUT seconds): "
          + ", ".join("%s under %s (%d of %s rounds)" % (n, m, c, sys.argv[3])
                      for (k, n, m), c in hung.items())
          + "; a * marks the median of the other rounds")
print("goals: libprof <= 2.0x on the allocation benchmarks and every program; "
      "sample512k <= 1.1x on the allocation benchmarks")
print()
print("Per call (ns), median of %s rounds" % sys.argv[3])
print("%-20s %10s %10s %10s %8s   %s" % ("call", "plain", "libprof", "added", "ratio", "goal"))
goals = {"lock_1t": "1.2x", "lock_2t": "1.2x", "read_4k": "1.1x", "cuda_launch": "+150 ns",
         "cuda_launch_events": "-"}
for n in dict.fromkeys(k[1] for k in t if k[0] == "call"):
    a = statistics.median(t["call", n, "none"])
    b = statistics.median(t["call", n, "libprof"])
    print("%-20s %10.1f %10.1f %10.1f %7.2fx   %s" % (n, a, b, b - a, b / a if a else 0, goals.get(n, "")))
print("lock_*: an uncontended lock/unlock pair (bench/lock_bench.c); read_4k: a cached 4 KiB read;")
print("cuda_*: cuLaunchKernel against the fake driver (FAKE_CUDA_SYNC=1: run in the caller, as a")
print("real driver's queue costs no wake-up), PROF_EVENTS=cuda, with stacks, without and with")
print("event-pair timing")
PY
if [[ -x bench/tracesize.sh ]]; then
	echo
	bench/tracesize.sh
fi
