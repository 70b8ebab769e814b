#!/usr/bin/env bash
# tests/check-bss.sh LIB: fails if LIB's zero-initialized data (.bss and .lbss) reaches 2 MiB,
# its small variables (.bss alone) 32 KiB, or its static TLS 2 KiB (below). Every
# process maps it; a hook can run before our constructors (another library's constructor
# calling malloc or fopen) and touch it, and a mapping that holds an aligned 2 MiB range gets
# a huge page there (THP "always"): 2 MiB zeroed at start. Large tables of a family a process
# may never use are made on first use instead (prof_lazy_map(), preload/prof.h). Arrays of a
# few KiB or more go to .lbss (PROF_BULK, preload/prof.h): every process touches most of
# the small variables' pages, each a page fault (and a copy in every fork child).
set -euo pipefail

if (($# != 1)); then
	echo "usage: tests/check-bss.sh LIB.so" >&2
	exit 2
fi
lib=$1
[[ -f $lib ]] || { echo "check-bss: $lib: no such file" >&2; exit 2; }
command -v size >/dev/null || { echo "check-bss: size not found (binutils)" >&2; exit 2; }

limit=$((2 << 20))
small_limit=$((32 << 10))
bss=$(size -A -d "$lib" | awk '$1 == ".bss" { print $2 }')
lbss=$(size -A -d "$lib" | awk '$1 == ".lbss" { print $2 }')
[[ -n $bss ]] || { echo "check-bss: $lib: no .bss section" >&2; exit 2; }
if ((bss + ${lbss:-0} >= limit)); then
	echo "check-bss: $lib: .bss and .lbss are $((bss + ${lbss:-0})) bytes, 2 MiB or more; the largest:" >&2
	nm -S --size-sort "$lib" | awk '$3 ~ /^[bB]$/' | tail -n 5 >&2
	exit 1
fi
if ((bss >= small_limit)); then
	echo "check-bss: $lib: .bss is $bss bytes, $small_limit or more: an array of a few KiB" \
		"there wants PROF_BULK (preload/prof.h); the largest:" >&2
	lbss_at=$(readelf -SW "$lib" | sed 's/^ *\[ *[0-9]*\]//' | awk '$1 == ".lbss" { print $3 }')
	nm -S --size-sort "$lib" | awk -v at="${lbss_at:-ffffffffffffffff}" \
		'$3 ~ /^[bB]$/ && (length($1) < length(at) || $1 < at)' | tail -n 5 >&2
	exit 1
fi
echo "check-bss: .bss $((bss >> 10)) KiB (under 32 KiB), .lbss $((${lbss:-0} >> 10)) KiB (with it under 2 MiB)"

# Static TLS comes out of every thread's stack, including the 16 KiB a program may give a
# thread (PTHREAD_STACK_MIN, of which glibc's own needs take half): keep ours under 2 KiB.
tls_limit=2048
tls=$(readelf -lW "$lib" | awk '$1 == "TLS" { print $6 }')  # MemSiz, hexadecimal
tls=$((${tls:-0}))
if ((tls >= tls_limit)); then
	echo "check-bss: $lib: static TLS is $tls bytes, $tls_limit or more; the largest:" >&2
	readelf -sW "$lib" | awk '$4 == "TLS"' | sort -k3 -n | tail -n 5 >&2
	exit 1
fi
echo "check-bss: static TLS $tls bytes (under $tls_limit)"
