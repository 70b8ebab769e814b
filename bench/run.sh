#!/usr/bin/env bash
# bench/run.sh (`make bench`): libprof's recording overhead and analyzer cost against heaptrack
# on bench/alloc_bench.c. See bench/README.md. Environment:
#   BENCH_ROUNDS  interleaved rounds per configuration (default 5; medians are reported)
#   BENCH_OPS     operations per thread (default: alloc_bench's own, about 0.5-1 s)
#   BUILD         build directory (default build)
# shellcheck source=bench/lib.sh
. "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/lib.sh"
# Its messages all begin "bench: ".
me=bench

ROUNDS=${BENCH_ROUNDS:-5}
OPS=${BENCH_OPS:-1000000}
THREADS_LIST=(1 2)
ANALYZE_RUNS=3

positive BENCH_ROUNDS "$ROUNDS"
positive BENCH_OPS "$OPS"

lib=$root/$BUILD/libprof.so
prof=$root/$BUILD/prof
[[ -f $lib ]] || die "$lib not found (run make first)"
[[ -x $prof ]] || die "$prof not found (run make first)"
if ! command -v heaptrack >/dev/null || ! command -v heaptrack_print >/dev/null ||
	[[ ! -x /usr/bin/time ]]; then
	scripts/install-deps --bench || die "heaptrack (or /usr/bin/time) missing and could not be installed"
fi
command -v python3 >/dev/null || die "python3 not found (needed to read prof report --json)"

unset_prof_env

outdir=$root/$BUILD/bench
mkdir -p "$outdir"
bench=$outdir/alloc_bench
${CC:-cc} -O2 -g -std=gnu11 -Wall -Wextra -Werror -pthread bench/alloc_bench.c -o "$bench"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/prof-bench.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
results=$tmp/results  # "key value" lines, formatted at the end
: >"$results"
record() { echo "$*" >>"$results"; }

now_ns() { date +%s%N; }

# run_wall OUTFILE CMD...: runs CMD (stdout to OUTFILE), prints its wall time in seconds.
run_wall() {
	local out=$1 t0 t1 rc=0
	shift
	t0=$(now_ns)
	"$@" >"$out" 2>"$tmp/stderr" || rc=$?
	t1=$(now_ns)
	if ((rc != 0)); then
		tail -n 5 "$tmp/stderr" >&2
		die "exit status $rc from: $*"
	fi
	awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.4f\n", (b - a) / 1e9 }'
}

# The program's result line, which every variant must print unchanged.
result_line() { grep -m1 '^alloc_bench:' "$1" || true; }

heaptrack_file() { # the data file heaptrack wrote for -o $1 (.zst, .gz or none)
	local f
	for f in "$1".zst "$1".gz "$1"; do
		[[ -f $f ]] && { echo "$f"; return 0; }
	done
	die "heaptrack wrote no data file for $1"
}

events_of() { # "EVENTS SITES" of a trace: alloc_calls + free_calls, allocation stacks
	"$prof" report --json "$1" | python3 -c '
import json, sys
h = json.load(sys.stdin)["processes"][0]["heap"]
print(h["alloc_calls"] + h["free_calls"], len(h.get("sites", [])))'
}

# measure_tool TAG CMD...: ANALYZE_RUNS runs of CMD (stdout discarded), records seconds and max RSS.
measure_tool() {
	local tag=$1 i
	shift
	for ((i = 1; i <= ANALYZE_RUNS; i++)); do
		/usr/bin/time -o "$tmp/time" -f '%e %M' "$@" >/dev/null 2>"$tmp/stderr" ||
			{ tail -n 5 "$tmp/stderr" >&2; die "failed: $*"; }
		read -r secs kb <"$tmp/time"
		record "$tag.secs $secs"
		record "$tag.kb $kb"
	done
}

echo "bench: alloc_bench, ops/thread=$OPS, $ROUNDS interleaved rounds per thread count" >&2
for threads in "${THREADS_LIST[@]}"; do
	for ((r = 1; r <= ROUNDS; r++)); do
		printf 'bench: threads=%d round %d/%d\n' "$threads" "$r" "$ROUNDS" >&2

		s=$(run_wall "$tmp/out.base" "$bench" "$threads" "$OPS")
		record "base.$threads $s"
		want=$(result_line "$tmp/out.base")
		[[ -n $want ]] || die "alloc_bench printed no result line"

		rm -rf "$tmp/lp" && mkdir "$tmp/lp"
		s=$(run_wall "$tmp/out.lp" env LD_PRELOAD="$lib" PROF_OUTPUT="$tmp/lp/prof.%p.trace" \
			"$bench" "$threads" "$OPS")
		record "libprof.$threads $s"
		cmp -s "$tmp/out.base" "$tmp/out.lp" ||
			die "output differs under libprof: '$(result_line "$tmp/out.lp")' vs '$want'"

		rm -rf "$tmp/ht" && mkdir "$tmp/ht"
		s=$(run_wall "$tmp/out.ht" heaptrack -o "$tmp/ht/ht" "$bench" "$threads" "$OPS")
		record "heaptrack.$threads $s"
		[[ $(result_line "$tmp/out.ht") == "$want" ]] ||
			die "output differs under heaptrack (heaptrack failed?): '$(result_line "$tmp/out.ht")'"
	done

	# Keep the last round's files of this workload for the size and analyzer measurements.
	traces=("$tmp"/lp/*.trace)
	if ((${#traces[@]} != 1)) || [[ ! -f ${traces[0]} ]]; then
		die "expected one trace in $tmp/lp (see PROF_DEBUG=1)"
	fi
	mv "${traces[0]}" "$tmp/lp.$threads.trace"
	hf=$(heaptrack_file "$tmp/ht/ht")
	mv "$hf" "$tmp/ht.$threads.${hf##*.}"
	rm -rf "$tmp/lp" "$tmp/ht"

	read -r ev sites < <(events_of "$tmp/lp.$threads.trace")
	[[ -n ${sites:-} ]] || die "prof report --json failed on the threads=$threads trace"
	record "events.$threads $ev"
	record "sites.$threads $sites"
	record "tracebytes.$threads $(stat -c %s "$tmp/lp.$threads.trace")"
	record "htbytes.$threads $(stat -c %s "$tmp"/ht."$threads".*)"
done

# Analyzer: the largest workload above, then 4x its operations (libprof only).
big=${THREADS_LIST[-1]}
echo "bench: analyzer, threads=$big workload, $ANALYZE_RUNS runs each" >&2
measure_tool "prof" "$prof" report "$tmp/lp.$big.trace"
measure_tool "htprint" heaptrack_print "$(echo "$tmp"/ht."$big".*)"

echo "bench: analyzer, threads=$big and 4x the operations" >&2
mkdir "$tmp/lp4"
s=$(run_wall "$tmp/out.lp4" env LD_PRELOAD="$lib" PROF_OUTPUT="$tmp/lp4/prof.%p.trace" \
	"$bench" "$big" $((OPS * 4)))
record "libprof4x.$big $s"
t4=$(echo "$tmp"/lp4/*.trace)
[[ -f $t4 ]] || die "no trace from the 4x run"
read -r ev4 _ < <(events_of "$t4")
[[ -n ${ev4:-} ]] || die "prof report --json failed on the 4x trace"
record "events4x $ev4"
record "tracebytes4x $(stat -c %s "$t4")"
ANALYZE_RUNS=1 measure_tool "prof4x" "$prof" report "$t4"
rm -rf "$tmp/lp4"

# ---- the table -----------------------------------------------------------------------------
PROF=$prof python3 - "$results" "$OPS" "$ROUNDS" "$big" "$ANALYZE_RUNS" "${THREADS_LIST[@]}" \
	>"$outdir/alloc.txt" <<'EOF'
import statistics, sys, os, platform, subprocess
path, ops, rounds, big, nan = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]
threads = sys.argv[6:]
vals = {}
for line in open(path):
    k, v = line.split()
    vals.setdefault(k, []).append(float(v))
med = lambda k: statistics.median(vals[k])
one = lambda k: vals[k][0]

def cpu():
    try:
        for l in open("/proc/cpuinfo"):
            if l.startswith("model name"):
                return l.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "?"
def ver(cmd):
    try:
        return subprocess.run(cmd, capture_output=True, text=True).stdout.strip().splitlines()[0]
    except Exception:
        return "?"

print(f"libprof benchmark: bench/alloc_bench.c, {ops} operations per thread")
print(f"machine: {os.cpu_count()} CPUs, {cpu()}, Linux {platform.release()}")
print(f"tools: {ver([os.environ.get('PROF', 'build/prof'), '--version'])}; {ver(['heaptrack', '--version'])}")
print()
print(f"Recording: wall seconds, median of {rounds} interleaved rounds")
print(f"{'threads':>7} {'base':>8} {'libprof':>8} {'heaptrack':>9} {'libprof/base':>13} "
      f"{'heaptrack/base':>15} {'libprof/heaptrack':>18}")
for t in threads:
    b, l, h = med(f"base.{t}"), med(f"libprof.{t}"), med(f"heaptrack.{t}")
    print(f"{t:>7} {b:8.3f} {l:8.3f} {h:9.3f} {l/b:12.2f}x {h/b:14.2f}x {l/h:17.2f}x")
print()
print("Trace size (heap events = alloc_calls + free_calls from prof report --json)")
print(f"{'threads':>7} {'events':>10} {'stacks':>7} {'libprof trace':>14} {'bytes/event':>12} "
      f"{'heaptrack file':>15} {'bytes/event':>12}")
for t in threads:
    e, tb, hb = one(f"events.{t}"), one(f"tracebytes.{t}"), one(f"htbytes.{t}")
    print(f"{t:>7} {e:10.0f} {one(f'sites.{t}'):7.0f} {tb/1e6:11.1f} MB {tb/e:12.1f} "
          f"{hb/1e6:12.1f} MB {hb/e:12.2f}")
print("(stacks: distinct allocation stacks, len(heap.sites) in prof report --json)")
print("(heaptrack's file is zstd-compressed and written by a separate interpreter process)")
print()
e = one(f"events.{big}")
print(f"Analyzer on the threads={big} workload ({e:.0f} events), median of {nan}")
print(f"{'command':<50} {'seconds':>8} {'max RSS':>10}")
rows = [("prof report TRACE", "prof"), ("heaptrack_print FILE", "htprint")]
for name, k in rows:
    print(f"{name:<50} {med(k + '.secs'):8.2f} {med(k + '.kb')/1024:7.1f} MB")
print(f"prof report is {med('htprint.secs') / med('prof.secs'):.2f}x as fast as heaptrack_print "
      f"(medians of {nan}; goal 4x)")
e4 = one("events4x")
print(f"{'prof report TRACE, 4x ops (%.0f events, 1 run)' % e4:<50} {one('prof4x.secs'):8.2f} "
      f"{one('prof4x.kb')/1024:7.1f} MB")
r1, r4 = med("prof.kb"), one("prof4x.kb")
print(f"prof report max RSS, 4x ops vs 1x: {r4/r1:.2f}x for {e4/e:.1f}x the events "
      f"(trace {one('tracebytes4x')/1e6:.0f} MB vs {one(f'tracebytes.{big}')/1e6:.0f} MB)")
if r4 / r1 < 1.5:
    print("=> analyzer memory follows live blocks and distinct stacks (the same here), not trace length")
else:
    print("=> analyzer memory GROWS with trace length (live blocks and stacks are the same in both runs)")
EOF
cat "$outdir/alloc.txt"
echo "bench: table written to $BUILD/bench/alloc.txt" >&2
