#!/usr/bin/env bash
# bench/io.sh: libprof's I/O recording overhead against the uninstrumented run and against
# `strace -c -f`, on bench/io_bench.c (4 KiB reads of a cached file, 512-byte writes to a file,
# 4 KiB write+read pairs through a pipe). Interleaved rounds, medians; the table goes to
# stdout and to $BUILD/bench/io.txt. Environment:
#   BENCH_ROUNDS  rounds per configuration (default 5)
#   BENCH_OPS     calls per workload (default 200000)
#   BUILD         build directory (default build)
# shellcheck source=bench/lib.sh
. "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/lib.sh"

ROUNDS=${BENCH_ROUNDS:-5}
OPS=${BENCH_OPS:-200000}  # strace -c -f runs 50-100x slower: keep its rounds short

positive BENCH_ROUNDS "$ROUNDS"
positive BENCH_OPS "$OPS"
lib=$root/$BUILD/libprof.so
prof=$root/$BUILD/prof
[[ -f $lib ]] || die "$lib not found (run make first)"
[[ -x $prof ]] || die "$prof not found (run make first)"
command -v strace >/dev/null || scripts/install-deps --bench || die "strace missing"
command -v python3 >/dev/null || die "python3 not found"

unset_prof_env

outdir=$root/$BUILD/bench
mkdir -p "$outdir"
bench=$outdir/io_bench
${CC:-cc} -O2 -g -std=gnu11 -Wall -Wextra -Werror bench/io_bench.c -o "$bench"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/prof-iobench.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
results=$tmp/results
: >"$results"
record() { echo "$*" >>"$results"; }
now_ns() { date +%s%N; }

# run_wall CMD...: "WALL LOOP": wall seconds of CMD, and seconds of io_bench's own loop (what
# it prints: start-up and exit excluded). Fails loudly.
run_wall() {
	local t0 t1 rc=0
	t0=$(now_ns)
	"$@" >"$tmp/out" 2>"$tmp/err" || rc=$?
	t1=$(now_ns)
	((rc == 0)) || { tail -n 5 "$tmp/err" >&2; die "exit status $rc from: $*"; }
	awk -v a="$t0" -v b="$t1" -v l="$(cat "$tmp/out")" 'BEGIN { printf "%.4f %.4f\n", (b - a) / 1e9, l / 1e9 }'
}
record2() { # KEY "WALL LOOP"
	local k=$1 wall loop
	read -r wall loop <<<"$2"
	record "$k $wall"
	record "loop.$k $loop"
}

data=$tmp/cached.dat
head -c $((4 << 20)) /dev/urandom >"$data"
cat "$data" >/dev/null  # in the page cache from now on

workloads=(read write pipe)
file_of() { case $1 in read) echo "$data" ;; write) echo "$tmp/written.dat" ;; *) echo - ;; esac; }

echo "bench/io: $OPS calls per workload, $ROUNDS interleaved rounds" >&2
for ((r = 1; r <= ROUNDS; r++)); do
	echo "bench/io: round $r/$ROUNDS" >&2
	for w in "${workloads[@]}"; do
		f=$(file_of "$w")
		record2 "base.$w" "$(run_wall "$bench" "$w" "$f" "$OPS")"
		rm -rf "$tmp/lp" && mkdir "$tmp/lp"
		record2 "libprof.$w" "$(run_wall env LD_PRELOAD="$lib" PROF_OUTPUT="$tmp/lp/p.%p.trace" \
			"$bench" "$w" "$f" "$OPS")"
		record2 "strace.$w" "$(run_wall strace -c -f -o "$tmp/strace.txt" "$bench" "$w" "$f" "$OPS")"
	done
done

# The last libprof run's trace must count every call (the pipe workload: 2 per iteration).
calls=$("$prof" report --json "$tmp/lp" | python3 -c '
import json, sys
print(json.load(sys.stdin)["processes"][0]["io"]["totals"]["calls"])')
record "calls.pipe $calls"
record "tracebytes.pipe $(stat -c %s "$tmp"/lp/*.trace)"

python3 - "$results" "$OPS" "$ROUNDS" <<'EOF' | tee "$outdir/io.txt"
import os, platform, statistics, sys
path, ops, rounds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
vals = {}
for line in open(path):
    k, v = line.split()
    vals.setdefault(k, []).append(float(v))
med = lambda k: statistics.median(vals[k])
cpu = "?"
for l in open("/proc/cpuinfo"):
    if l.startswith("model name"):
        cpu = l.split(":", 1)[1].strip()
        break
print(f"libprof I/O benchmark: bench/io_bench.c, {ops} calls per workload")
print(f"machine: {os.cpu_count()} CPUs, {cpu}, Linux {platform.release()}")
print()
print(f"wall seconds, median of {rounds} interleaved rounds; ns/call = (run - base) / calls")
print(f"{'workload':<28} {'base':>7} {'libprof':>8} {'strace-c':>9} {'libprof/base':>13} "
      f"{'strace/base':>12} {'libprof/strace':>15} {'+ns/call':>9}")
names = {"read": "read 4 KiB, cached file", "write": "write 512 B to a file",
         "pipe": "pipe write+read 4 KiB"}
for w in ("read", "write", "pipe"):
    b, l, s = med(f"base.{w}"), med(f"libprof.{w}"), med(f"strace.{w}")
    n = ops * (2 if w == "pipe" else 1)
    print(f"{names[w]:<28} {b:7.3f} {l:8.3f} {s:9.3f} {l/b:12.2f}x {s/b:11.2f}x "
          f"{l/s:14.3f}x {(l-b)*1e9/n:9.0f}")
print()
print(f"the I/O loop alone (io_bench's own clock: start-up and exit excluded), median seconds")
print(f"{'workload':<28} {'base':>7} {'libprof':>8} {'strace-c':>9} {'libprof/base':>13} "
      f"{'strace/base':>12} {'libprof/strace':>15} {'+ns/call':>9}")
for w in ("read", "write", "pipe"):
    b, l, s = med(f"loop.base.{w}"), med(f"loop.libprof.{w}"), med(f"loop.strace.{w}")
    n = ops * (2 if w == "pipe" else 1)
    print(f"{names[w]:<28} {b:7.3f} {l:8.3f} {s:9.3f} {l/b:12.2f}x {s/b:11.2f}x "
          f"{l/s:14.3f}x {(l-b)*1e9/n:9.0f}")
print()
c, tb = vals["calls.pipe"][0], vals["tracebytes.pipe"][0]
print(f"pipe run: {c:.0f} I/O calls recorded (expected >= {2*ops}), trace {tb/1e6:.1f} MB, "
      f"{tb/c:.1f} bytes/call")
EOF
