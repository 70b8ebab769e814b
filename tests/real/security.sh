#!/usr/bin/env bash
# Security (issue 16): nothing recorded in set-uid or set-gid processes, run as an
# unprivileged user (skipped where no such user or no set-uid filesystem is at hand); names
# from a trace (terminal escapes, control characters, markup) escaped in every output format.
# Trace files 0600, never through a planted symlink: tests/e2e/test_lifecycle.c.
set -u -o pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
build=${PROF_BUILD:-$root/build}
prof=${PROF_ANALYZER:-$build/prof}
lib=$build/libprof.so
tmp=$(mktemp -d /tmp/prof-security.XXXXXX)
chmod 755 "$tmp"
sys_lib=
cleanup() { rm -rf "$tmp"; [[ -z $sys_lib ]] || rm -f "$sys_lib"; }
trap cleanup EXIT
fail=0
say() { printf 'security: %s\n' "$*"; }
bad() { say "FAIL $*"; fail=1; }

# ---- set-uid / set-gid ----------------------------------------------------------------------
user=nobody
if ((EUID != 0)) || ! id "$user" >/dev/null 2>&1 || ! command -v setpriv >/dev/null; then
	say "SKIP set-uid: needs root to make the copy, the user $user and setpriv"
else
	mkdir -m 777 "$tmp/out"
	cp /usr/bin/id "$tmp/id-plain"
	cp /usr/bin/id "$tmp/id-suid" && chmod 4755 "$tmp/id-suid"
	cp /usr/bin/id "$tmp/id-sgid" && chgrp root "$tmp/id-sgid" && chmod 2755 "$tmp/id-sgid"
	as_user() { setpriv --reuid="$user" --regid="$(id -g "$user")" --clear-groups -- "$@"; }
	# a copy of libprof the other user can read: a checkout may lie under a directory only
	# its owner enters (mktemp -d makes them so)
	user_lib=$tmp/libprof.so
	cp "$lib" "$user_lib" && chmod 755 "$user_lib"
	# glibc preloads a library into a set-uid program only by bare name, from a system
	# directory, and only one that is set-uid itself: such a copy makes libprof load there,
	# so that its own check (AT_SECURE) is what keeps it from recording.
	sys_lib=/usr/lib/x86_64-linux-gnu/libprof-security-test-$$.so
	if cp "$lib" "$sys_lib" 2>/dev/null && chmod 4755 "$sys_lib"; then
		preload=$(basename "$sys_lib")
	else
		sys_lib='' preload=$user_lib
	fi
	if [[ $(as_user "$tmp/id-suid" -u) != 0 ]]; then
		say "SKIP set-uid: $tmp is on a nosuid filesystem"
	else
		as_user env LD_PRELOAD="$user_lib" PROF_OUTPUT="$tmp/out/plain.%p.trace" "$tmp/id-plain" -u >/dev/null
		ls "$tmp"/out/plain.*.trace >/dev/null 2>&1 ||
			bad "set-uid: the control run (not set-uid, same user) wrote no trace"
		for kind in suid sgid; do
			got=$(as_user env LD_PRELOAD="$preload" PROF_OUTPUT="$tmp/out/$kind.%p.trace" "$tmp/id-$kind" -u 2>"$tmp/$kind.err")$(as_user env LD_PRELOAD="$preload" PROF_OUTPUT="$tmp/out/$kind.%p.trace" "$tmp/id-$kind" -g 2>>"$tmp/$kind.err")
			[[ $got == $(as_user "$tmp/id-$kind" -u)$(as_user "$tmp/id-$kind" -g) ]] ||
				bad "$kind: the program behaved differently under LD_PRELOAD ($got)"
			! ls "$tmp"/out/$kind.*.trace >/dev/null 2>&1 || bad "$kind: a trace was written"
		done
		say "set-uid and set-gid copies record nothing (libprof preloaded as ${sys_lib:+a set-uid system library: }${sys_lib:-a path})"
	fi
fi

# ---- hostile names --------------------------------------------------------------------------
d=$tmp/names
mkdir -p "$d/files"
LD_PRELOAD=$lib PROF_OUTPUT=$d/prof.%p.trace "$build/progs/hostile_names" "$d/files" ||
	bad "names: the program failed"
"$prof" report "$d" >"$d/report.txt" 2>&1 || bad "names: prof report failed"
"$prof" leaks "$d" >>"$d/report.txt" 2>&1 || bad "names: prof leaks failed"
"$prof" report --brief "$d" >>"$d/report.txt" 2>&1 || bad "names: prof report --brief failed"
grep -q 'x' "$d/report.txt" || bad "names: report is empty"
# Text: no escape, bell or other control character but newline and tab reaches the terminal.
if LC_ALL=C grep -q $'[\x01-\x08\x0b-\x1f\x7f]' "$d/report.txt"; then
	bad "names: control characters in the text report: $(LC_ALL=C grep -n $'[\x01-\x08\x0b-\x1f\x7f]' "$d/report.txt" | head -2 | cat -v)"
fi
grep -q '^<b>\|^<i>' "$d/report.txt" && bad "names: a name's newline started a line of its own in the text report"
"$prof" report --json "$d" >"$d/report.json" || bad "names: prof report --json failed"
"$prof" flame --kind io -o "$d/io.svg" "$d" 2>/dev/null || "$prof" flame --kind alloc -o "$d/io.svg" "$d" || bad "names: prof flame failed"
"$prof" html -o "$d/report.html" "$d" || bad "names: prof html failed"
"$prof" export --format chrome -o "$d/chrome.json" "$d" || bad "names: export chrome failed"
"$prof" export --format speedscope -o "$d/speedscope.json" "$d" || bad "names: export speedscope failed"
"$prof" export --format sqlite -o "$d/db.sqlite" "$d" || bad "names: export sqlite failed"
python3 - "$d" <<'PY' || bad "names: an output format does not hold the names safely"
import json, sqlite3, sys, xml.etree.ElementTree as ET
d = sys.argv[1]
thread = "\x1b]0;x\x07\n<b>"
r = json.load(open(d + "/report.json"))
names = [t.get("name") for p in r["processes"] for t in p["threads"]]
assert thread in names, ("JSON lost the thread name", names)
for f in ("chrome.json", "speedscope.json"):
    json.load(open(d + "/" + f))
ET.parse(d + "/io.svg")  # well-formed XML: markup in names escaped
html = open(d + "/report.html", encoding="utf-8", errors="replace").read()
assert "\n<b>" not in html, "raw thread name in HTML"
assert "\n<i>&" not in html, "raw file name in HTML"
db = sqlite3.connect(d + "/db.sqlite")
assert db.execute("select count(*) from threads where name = ?", (thread,)).fetchone()[0] == 1, "SQLite changed the name"
PY
((fail == 0)) && say "all passed"
((fail == 0))
