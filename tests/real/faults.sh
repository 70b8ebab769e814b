#!/usr/bin/env bash
# Faults under libprof (issue 16): many threads, fork storms, exec chains, a program that
# closes every descriptor or lowers RLIMIT_NOFILE, SIGKILL at random moments. The program must
# behave as without the profiler (same output and status) and the analyzer must read what was
# written up to the fault. (abort, SIGSEGV, _exit, a full disk and an unwritable directory are
# in tests/e2e/test_lifecycle.c.)   tests/real/faults.sh [--fast]
set -u -o pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
build=${PROF_BUILD:-$root/build}
prof=${PROF_ANALYZER:-$build/prof}
hammer=$build/progs/hammer
export PROF_LIB=$build/libprof.so PROF_ANALYZER=$prof
fast=0
[[ ${1:-} == --fast ]] && fast=1
tmp=$(mktemp -d /tmp/prof-faults.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail=0
say() { printf 'faults: %s\n' "$*"; }
bad() { say "FAIL $*"; fail=1; }

# Same stdout and status with and without the profiler; the traces read back; prints the
# run directory's process count.
same() { # name, command...
	local name=$1 d=$tmp/$1
	shift
	mkdir -p "$d"
	"$@" >"$d/plain.out" 2>&1
	local plain=$?
	"$root/scripts/prof-run" --no-report -o "$d/run" -- "$@" >"$d/prof.out" 2>&1
	local profiled=$?
	[[ $plain == "$profiled" ]] || bad "$name: status $plain unprofiled, $profiled profiled"
	cmp -s "$d/plain.out" "$d/prof.out" || bad "$name: output differs: $(diff "$d/plain.out" "$d/prof.out" | head -4 | tr '\n' ' ')"
	"$prof" report --json "$d/run" >"$d/report.json" 2>"$d/report.err" || bad "$name: prof report: $(head -2 "$d/report.err")"
	"$prof" leaks "$d/run" >/dev/null 2>&1 || bad "$name: prof leaks failed"
	"$prof" flame --kind lock -o /dev/null "$d/run" 2>/dev/null || bad "$name: prof flame failed"
}

json() { # file, python expression on the report `r`
	python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print($2)" "$1"
}

threads=64 forks=300 kills=40
((fast == 0)) || threads=16 forks=20 kills=3

same threads "$hammer" threads $threads
n=$(json "$tmp/threads/report.json" 'sum(len(p["threads"]) for p in r["processes"])')
((n == threads + 1)) || bad "threads: $n threads in the report, $((threads + 1)) ran"
n=$(json "$tmp/threads/report.json" 'r["processes"][0]["heap"]["alloc_calls"]')
((n >= threads * 20000)) || bad "threads: $n allocations recorded, $((threads * 20000)) made"

same forks "$hammer" forks $forks
n=$(ls "$tmp/forks/run" | wc -l)
((n == forks + 1)) || bad "forks: $n traces, $((forks + 1)) processes"

same exec_chain bash -c 'exec bash -c "exec /bin/echo chained"'
n=$(json "$tmp/exec_chain/report.json" 'len(r["processes"])')
((n == 3)) || bad "exec chain: $n processes in the report, 3 images ran"

same closeall "$hammer" closeall
same nofile "$hammer" nofile 16

# SIGKILL at a random moment: whatever was written is read back, never an error.
for ((i = 0; i < kills; i++)); do
	d=$tmp/kill$i
	mkdir -p "$d"
	LD_PRELOAD=$PROF_LIB PROF_OUTPUT=$d/prof.%p.trace "$hammer" loop &
	pid=$!
	sleep "0.$(printf '%03d' $((RANDOM % 400 + 5)))"
	kill -KILL $pid
	wait $pid 2>/dev/null
	if ls "$d"/*.trace >/dev/null 2>&1; then
		"$prof" report --json "$d" >"$d/r.json" 2>"$d/err" || bad "kill $i: prof report: $(head -2 "$d/err")"
		"$prof" flame --kind alloc -o /dev/null "$d" 2>/dev/null || bad "kill $i: prof flame failed"
		c=$(json "$d/r.json" 'r["processes"][0]["complete"]')
		[[ $c == False ]] || bad "kill $i: a killed process's trace says complete"
	fi
done

((fail == 0)) && say "all passed (threads $threads, forks $forks, $kills random SIGKILLs)"
((fail == 0))
