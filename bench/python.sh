#!/usr/bin/env bash
# bench/python.sh: the cost of profiling a pure-Python program (bench/py_bench.py: float
# arithmetic, recursion, dicts and strings, sorting, generators, method calls) under libprof
# with Python frames in every stack, next to the same without them (PROF_PYTHON=0), with
# every object a malloc call (PYTHONMALLOC=malloc, what prof-run --python-malloc sets), and
# py-spy where it is installed (Debian 12 does not package it). Interleaved rounds; median
# wall time and CPU time (user + system of the whole run, start-up included) and their
# ratios to the plain run; the table goes to build/bench/python.txt. Environment:
#   BENCH_ROUNDS  interleaved rounds (default 5)
#   BENCH_SCALE   py_bench.py's scale (default 4, about 0.3 s of CPU plain)
#   BENCH_PYTHON  the interpreter (default /usr/bin/python3, else python3)
#   BUILD         build directory (default build)
# shellcheck source=bench/lib.sh
. "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/lib.sh"

ROUNDS=${BENCH_ROUNDS:-5}
SCALE=${BENCH_SCALE:-4}
PY=${BENCH_PYTHON:-/usr/bin/python3}
[[ -x $PY ]] || PY=$(command -v python3)

positive BENCH_ROUNDS "$ROUNDS"
positive BENCH_SCALE "$SCALE"
[[ -f $BUILD/libprof.so ]] || make -s all >/dev/null || die "build failed"
lib=$root/$BUILD/libprof.so

unset_prof_env PROF_PYTHON PYTHONMALLOC

outdir=$root/$BUILD/bench
mkdir -p "$outdir"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/prof-pybench.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

configs=(plain libprof libprof-native libprof-malloc libprof-malloc-native)
if command -v py-spy >/dev/null; then
	configs+=(py-spy)
fi

expected=""
# run CONFIG: "WALL CPU" in seconds; checks the checksum.
run() {
	local out
	TIMEFORMAT='%3R %3U %3S'
	{ time {
		case $1 in
		plain) "$PY" bench/py_bench.py "$SCALE" >"$tmp/out" ;;
		libprof) PROF_OUTPUT="$tmp/prof.%p.trace" LD_PRELOAD=$lib "$PY" bench/py_bench.py "$SCALE" >"$tmp/out" ;;
		libprof-native) PROF_PYTHON=0 PROF_OUTPUT="$tmp/prof.%p.trace" LD_PRELOAD=$lib "$PY" bench/py_bench.py "$SCALE" >"$tmp/out" ;;
		libprof-malloc-native) PROF_PYTHON=0 PYTHONMALLOC=malloc PROF_OUTPUT="$tmp/prof.%p.trace" LD_PRELOAD=$lib "$PY" bench/py_bench.py "$SCALE" >"$tmp/out" ;;
		libprof-malloc) PYTHONMALLOC=malloc PROF_OUTPUT="$tmp/prof.%p.trace" LD_PRELOAD=$lib "$PY" bench/py_bench.py "$SCALE" >"$tmp/out" ;;
		py-spy) py-spy record -r 100 -o "$tmp/spy.txt" -f raw -- "$PY" bench/py_bench.py "$SCALE" >"$tmp/out" 2>/dev/null ;;
		esac
	}; } 2>"$tmp/time"
	out=$(cat "$tmp/out")
	rm -f "$tmp"/prof.*.trace "$tmp/spy.txt"
	[[ -z $expected ]] && expected=$out
	[[ $out == "$expected" ]] || die "$1: output '$out', plain run gave '$expected'"
	read -r wall user sys <"$tmp/time"
	echo "$wall $(echo "$user + $sys" | bc)"
}

declare -A walls cpus
for ((r = 0; r < ROUNDS; r++)); do
	for c in "${configs[@]}"; do
		read -r w u < <(run "$c")
		walls[$c]+=$w$'\n'
		cpus[$c]+=$u$'\n'
	done
done

{
	echo "pure-Python benchmark: $PY bench/py_bench.py $SCALE ($($PY -c 'import sys; print(sys.version.split()[0])')), $ROUNDS interleaved rounds, medians"
	printf '%-22s %10s %8s %10s %8s\n' config wall_s ratio cpu_s ratio
	pw=$(printf %s "${walls[plain]}" | median)
	pc=$(printf %s "${cpus[plain]}" | median)
	for c in "${configs[@]}"; do
		w=$(printf %s "${walls[$c]}" | median)
		u=$(printf %s "${cpus[$c]}" | median)
		printf '%-22s %10.3f %8.2f %10.3f %8.2f\n' "$c" "$w" "$(echo "$w / $pw" | bc -l)" "$u" "$(echo "$u / $pc" | bc -l)"
	done
	echo "libprof: all events, Python frames in every stack; libprof-native: PROF_PYTHON=0;"
	echo "libprof-malloc: PYTHONMALLOC=malloc (prof-run --python-malloc), every object a recorded"
	echo "malloc call; libprof-malloc-native: the same with PROF_PYTHON=0."
	command -v py-spy >/dev/null || echo "py-spy: not installed (Debian 12 does not package it), not compared."
} | tee "$outdir/python.txt"
