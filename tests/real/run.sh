#!/usr/bin/env bash
# Real programs under prof-run (issue 16): each case runs once plainly and once profiled, in
# the same directory with the same inputs; stdout, stderr, exit status and the files it leaves
# must be identical, and every prof command must succeed on the traces with the sections the
# program has data for. Heap totals are compared with valgrind's where the case asks for it.
#   tests/real/run.sh [--fast] [CASE...]   (--fast: the few-second subset `make test` runs)
# A case whose program is not installed is skipped (scripts/install-deps --real installs them).
set -u -o pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${PROF_BUILD:-$root/build}
prof=${PROF_ANALYZER:-$build/prof}
run=$root/scripts/prof-run
export PROF_LIB=$build/libprof.so PROF_ANALYZER=$prof
# Fixed dates and identities: git's objects then hash the same in both runs.
export GIT_AUTHOR_DATE='2026-01-01T00:00:00Z' GIT_COMMITTER_DATE='2026-01-01T00:00:00Z' \
	GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@example.com GIT_COMMITTER_NAME=t \
	GIT_COMMITTER_EMAIL=t@example.com GIT_CONFIG_NOSYSTEM=1 HOME=/nonexistent LC_ALL=C

# Debian's programs, not wrappers found first on PATH (pyenv's shims are bash scripts).
export PATH=/usr/bin:/bin:$PATH
fast=0
[[ ${1:-} == --fast ]] && { fast=1; shift; }
tmp=$(mktemp -d /tmp/prof-real.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0 skip=0

have() { command -v "$1" >/dev/null 2>&1; }
say() { printf 'real: %s\n' "$*"; }
bad() { say "FAIL $name: $*"; ok=0; }

# The state a run leaves: every file's path and content hash, minus the case's $ignore
# (a regular expression on paths: files that differ by design, like git's stat cache).
tree_state() {
	(cd "$1" && find . -type f -print0 | sort -z | xargs -0r sha256sum) |
		{ if [[ -n $ignore ]]; then grep -Ev -- "$ignore"; else cat; fi; }
}

# Runs $cmd (a bash command line) in $tmp/w, prepared by $setup, plainly then profiled.
check_case() {
	local d=$tmp/$name
	mkdir -p "$d"
	for mode in plain prof; do
		rm -rf "$tmp/w" && mkdir "$tmp/w"
		(cd "$tmp/w" && eval "$setup") >/dev/null 2>&1 || { bad "setup failed"; return; }
		# Inputs dated alike in both runs (gzip keeps its input's mtime in its output).
		find "$tmp/w" -exec touch -h -d @1700000000 {} +
		if [[ $mode == plain ]]; then
			(cd "$tmp/w" && timeout 120 bash -c "$cmd") >"$d/plain.out" 2>"$d/plain.err" </dev/null
		else
			(cd "$tmp/w" && timeout 120 "$run" --no-report -o "$d/run" -- bash -c "$cmd") \
				>"$d/prof.out" 2>"$d/prof.err" </dev/null
		fi
		echo $? >"$d/$mode.rc"
		tree_state "$tmp/w" >"$d/$mode.files"
	done
	for f in rc out err files; do
		cmp -s "$d/plain.$f" "$d/prof.$f" ||
			bad "$f differs: $(diff "$d/plain.$f" "$d/prof.$f" | head -5 | tr '\n' ' ')"
	done
	check_commands "$d"
}

# Every prof command on the run: exit 0; the report has the sections in $expect.
check_commands() {
	local d=$1 r=$1/run k
	compgen -G "$r/*.trace" >/dev/null || compgen -G "$r/*.trace.zst" >/dev/null ||
		{ bad "no trace written"; return; }
	"$prof" report "$r" >"$d/report.txt" 2>"$d/cmd.err" || bad "prof report failed: $(head -3 "$d/cmd.err")"
	for s in $expect; do
		grep -q -- "^-- $s" "$d/report.txt" || bad "report has no '$s' section"
	done
	"$prof" report --json "$r" >"$d/report.json" 2>>"$d/cmd.err" || bad "prof report --json failed"
	"$prof" leaks "$r" >/dev/null 2>>"$d/cmd.err" || bad "prof leaks failed"
	local kinds formats
	kinds=$("$prof" flame --help | awk '/^kinds:/ {on=1; next} on && /^  [a-z]/ {print $1}')
	formats='chrome speedscope pprof sqlite'
	((fast == 0)) || kinds=alloc formats=chrome  # the subset make test runs: one of each
	for k in $kinds; do
		"$prof" flame --kind "$k" -o "$d/$k.svg" "$r" 2>>"$d/cmd.err" || bad "prof flame --kind $k failed"
	done
	for f in $formats; do
		"$prof" export --format "$f" -o "$d/export.$f" "$r" 2>"$d/export.err" && continue
		# Known (left to issue 14): the SQLite schema keys processes by pid, which an exec
		# chain shares between its traces.
		if [[ $f == sqlite ]] && grep -q 'UNIQUE constraint failed: processes.pid' "$d/export.err"; then
			say "KNOWN $name: export --format sqlite refuses an exec chain (two traces, one pid)"
		else
			bad "prof export --format $f failed: $(head -2 "$d/export.err")"
		fi
	done
	"$prof" html -o "$d/report.html" "$r" 2>>"$d/cmd.err" || bad "prof html failed"
	"$prof" kernels "$r" >/dev/null 2>>"$d/cmd.err" || bad "prof kernels failed"
	"$prof" diff "$r" "$r" >/dev/null 2>>"$d/cmd.err" || bad "prof diff failed"
	if grep -Eiq 'sanitizer|assert|segmentation|internal error' "$d/cmd.err"; then
		bad "analyzer complained: $(grep -Ei 'sanitizer|assert|segmentation|internal' "$d/cmd.err" | head -2)"
	fi
}

# valgrind's "total heap usage" against the profiled run's heap totals (all processes).
check_valgrind() {
	have valgrind || return 0
	local d=$tmp/$name v p
	rm -rf "$tmp/w" && mkdir "$tmp/w"
	(cd "$tmp/w" && eval "$setup") >/dev/null 2>&1
	(cd "$tmp/w" && timeout 300 valgrind --trace-children=no --log-file="$d/vg.log" $valgrind_cmd) \
		>/dev/null 2>&1 </dev/null
	v=$(sed -n 's/.*total heap usage: \([0-9,]*\) allocs, \([0-9,]*\) frees, \([0-9,]*\) bytes allocated.*/\1 \2 \3 0/p' "$d/vg.log" | tr -d ,)
	# The last field: frees of blocks the trace never saw allocated (none, as under valgrind).
	p=$(python3 -c 'import json,sys; h=json.load(open(sys.argv[1]))["processes"][0]["heap"]; print(h["alloc_calls"], h["free_calls"], h["bytes_allocated"], h["unmatched_frees"])' "$d/vg-report.json" 2>/dev/null)
	[[ -n $v ]] || { say "$name: valgrind gave no totals, not compared"; return 0; }
	say "$name: heap allocs/frees/bytes/unmatched frees: valgrind $v, libprof $p"
	[[ $v == "$p" ]] || bad "heap totals differ from valgrind's ($v vs $p)"
}

# ---- the cases ----------------------------------------------------------------------------
# Each: name, the program it needs, fast (1: in make test), setup, command, sections expected.
cases=()
add() { cases+=("$1"); }

declare -A need setups cmds expects fasts ignores vgcmds

def() { # name need fast expect setup cmd [ignore] [valgrind command]
	add "$1"; need[$1]=$2; fasts[$1]=$3; expects[$1]=$4; setups[$1]=$5; cmds[$1]=$6
	ignores[$1]=${7:-}; vgcmds[$1]=${8:-}
}

def gzip gzip 0 'Heap' 'seq 1 200000 >data' 'gzip -k -9 data && gzip -t data.gz && gzip -dc data.gz | md5sum' \
	'' 'gzip -c -9 data'
def xz xz 0 'Heap' 'seq 1 100000 >data' 'xz -k -T2 data && xz -dc data.xz | md5sum'
def zstd zstd 0 'Heap' 'seq 1 200000 >data' 'zstd -q -k -T2 data && zstd -q -dc data.zst | md5sum'
def sqlite3 sqlite3 1 'Heap' '' \
	'sqlite3 db.sqlite "create table t(a,b); with recursive c(x) as (select 1 union all select x+1 from c where x<20000) insert into t select x, x * 7 % 1000 from c; create index i on t(b); select count(*), sum(a) from t where b like \"1%\";"' \
	'' 'sqlite3 :memory: "with recursive c(x) as (select 1 union all select x+1 from c where x<2000) select count(*) from c;"'
def perl perl 0 'Heap' '' \
	'perl -e "my %h; \$h{\$_} = [\$_ x 3] for 1..50000; print scalar(keys %h), qq{\n}; open my \$f, q{>}, q{out.txt} or die; print \$f join(q{,}, sort { \$a <=> \$b } map { \$_ * 2 } 1..1000); close \$f"'
def python_threads python3 0 'Threads' '' \
	'python3 -c "
import threading, multiprocessing as mp, hashlib
def work(i, out): out[i] = hashlib.sha256(str(i).encode() * 10000).hexdigest()[:8]
def sq(x): return x * x
if __name__ == \"__main__\":
    out = {}
    ts = [threading.Thread(target=work, args=(i, out)) for i in range(8)]
    [t.start() for t in ts]; [t.join() for t in ts]
    print(sorted(out.items()))
    with mp.Pool(3) as p: print(sum(p.map(sq, range(1000))))
    ctx = mp.get_context(\"spawn\"); q = ctx.Process(target=print, args=(\"spawned\",)); q.start(); q.join(); print(q.exitcode)
"'
def git git 0 'Heap' 'mkdir src && seq 1 1000 >src/a && echo hi >src/b' \
	'git init -q -b main . && git add src && git commit -q -m first && echo more >>src/b && git commit -q -am second && git log --format="%H %s" && git status --short' \
	'\./\.git/index$'
def make make 0 'Heap' \
	'printf "int f(int);\nint main(void){return f(0);}\n" >main.c; printf "int f(int x){return x;}\n" >f.c; printf "all: prog\nprog: main.o f.o\n\t\$(CC) -o \$@ \$^\n%%.o: %%.c\n\t\$(CC) -O1 -c \$< -o \$@\n" >Makefile' \
	'make -j2 && ./prog && echo built'
def cxx g++ 0 'Threads' \
	'cat >x.cpp <<"CPP"
#include <cstdio>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>
static std::mutex m;
static long total;
static void work(int i) {
	for (int k = 0; k < 2000; k++) {
		try {
			if (k % 7 == 0) throw std::runtime_error("e" + std::to_string(k));
			std::vector<std::string> v(4, std::string(40, char(65 + i)));
			std::lock_guard<std::mutex> g(m);
			total += (long)v.size();
		} catch (const std::exception &e) {
			std::lock_guard<std::mutex> g(m);
			total += 1;
		}
	}
}
int main() {
	std::vector<std::thread> ts;
	for (int i = 0; i < 8; i++) ts.emplace_back(work, i);
	for (auto &t : ts) t.join();
	std::printf("%ld\n", total);
	try { throw 42; } catch (int x) { return x - 42 + 3; }
}
CPP
g++ -O1 -pthread x.cpp -o x' './x'
def node node 0 'Heap' '' \
	'node -e "const fs=require(\"fs\"); let a=[]; for (let i=0;i<200000;i++) a.push({i, s:String(i)}); fs.writeFileSync(\"out.json\", JSON.stringify(a.slice(0,100))); setTimeout(()=>console.log(a.length), 20)"'
def java java 0 'Threads' \
	'cat >T.java <<"JAVA"
public class T {
	public static void main(String[] a) throws Exception {
		Thread[] ts = new Thread[4];
		final long[] r = new long[4];
		for (int i = 0; i < 4; i++) { final int k = i; ts[i] = new Thread(() -> { long s = 0; for (int j = 0; j < 2000000; j++) s += j % (k + 2); r[k] = s; }); ts[i].start(); }
		for (Thread t : ts) t.join();
		int npe = 0;
		for (int i = 0; i < 1000; i++) { try { Object o = null; o.hashCode(); } catch (NullPointerException e) { npe++; } }
		System.out.println(r[0] + r[1] + r[2] + r[3] + " " + npe);
	}
}
JAVA' 'java -Xmx128m T.java'
def http python3 0 'Threads' '' \
	'python3 -c "
import http.server, threading, urllib.request, concurrent.futures as cf
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        b = (self.path * 50).encode(); self.send_response(200); self.send_header(\"Content-Length\", str(len(b))); self.end_headers(); self.wfile.write(b)
    def log_message(self, *a): pass
s = http.server.ThreadingHTTPServer((\"127.0.0.1\", 0), H)
threading.Thread(target=s.serve_forever, daemon=True).start()
u = \"http://127.0.0.1:%d/\" % s.server_address[1]
with cf.ThreadPoolExecutor(8) as ex: n = sum(len(urllib.request.urlopen(u + str(i)).read()) for i in range(0))+sum(ex.map(lambda i: len(urllib.request.urlopen(u + str(i)).read()), range(200)))
s.shutdown(); print(n)
"'
def spawn_tree python3 0 'Heap' '' \
	'python3 -c "
import os, subprocess, sys
pid = os.fork()
if pid == 0:
    os.execvp(\"sh\", [\"sh\", \"-c\", \"echo child; ls / >/dev/null; exit 3\"])
_, st = os.waitpid(pid, 0); print(\"fork+exec\", os.waitstatus_to_exitcode(st))
p = os.posix_spawnp(\"true\", [\"true\"], os.environ); _, st = os.waitpid(p, 0); print(\"spawn\", st)
print(subprocess.run([\"sh\", \"-c\", \"seq 3 | sort -r | head -1\"], capture_output=True, text=True).stdout.strip())
sys.stdout.flush(); os._exit(5)
"'

def sh_tree sh 1 'Heap' 'printf "b\na\n" >in' \
	'sh -c "sort in >sorted; (cat sorted | tr a-z A-Z) & wait; env sh -c \"exit 3\"; echo \$?; exec cat sorted"'

# A browser: a launcher script, a zygote that forks its renderers, its own allocator (said on
# stderr, which the command drops, as Chromium's own chatter); scripts/install-deps --browser.
def chromium chromium 0 'Threads' \
	'printf "<body><script>let a=[];for(let i=0;i<100000;i++)a.push({i});document.body.textContent=\"n=\"+a.length</script>" >p.html' \
	'chromium --headless --disable-gpu --no-sandbox --user-data-dir=./profile --dump-dom "file://$PWD/p.html" 2>/dev/null' \
	'^\S+ +\./profile/'

need[java]=java need[node]=node need[cxx]=g++

# ---- run ------------------------------------------------------------------------------------
want=("$@")
for name in "${cases[@]}"; do
	if ((${#want[@]})) && [[ " ${want[*]} " != *" $name "* ]]; then continue; fi
	((fast == 0 || fasts[$name])) || continue
	if ! have "${need[$name]}"; then
		say "SKIP $name: ${need[$name]} not installed (scripts/install-deps --real)"
		((skip++)); continue
	fi
	ok=1 setup=${setups[$name]} cmd=${cmds[$name]} expect=${expects[$name]} ignore=${ignores[$name]}
	t0=$(date +%s.%N)
	check_case
	if [[ -n ${vgcmds[$name]} ]] && ((fast == 0)); then
		valgrind_cmd=${vgcmds[$name]}
		(cd "$tmp/w" && "$run" --no-report -o "$tmp/$name/vg-run" -- $valgrind_cmd) >/dev/null 2>&1 </dev/null
		"$prof" report --json "$tmp/$name/vg-run" >"$tmp/$name/vg-report.json" 2>/dev/null
		check_valgrind
	fi
	if ((ok)); then
		((pass++)); say "ok   $name ($(printf '%.1f' "$(echo "$(date +%s.%N) - $t0" | bc)") s)"
	else
		((fail++)); cp -r "$tmp/$name" "${TMPDIR:-/tmp}/prof-real-failed-$name" 2>/dev/null
		say "     (files kept in ${TMPDIR:-/tmp}/prof-real-failed-$name)"
	fi
done
say "$pass passed, $fail failed, $skip skipped"
((fail == 0))
