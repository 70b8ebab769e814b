#!/usr/bin/env bash
# tests/bundle.sh TARBALL: unpacks the bundle into an empty directory and profiles a program
# from there, with nothing of the build tree on any path: the bundle alone must do the job.
set -euo pipefail
(($# == 1)) || { echo "usage: tests/bundle.sh TARBALL" >&2; exit 2; }
tarball=$(readlink -f -- "$1")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "bundle test: $*" >&2; exit 1; }

mkdir "$tmp/unpacked" "$tmp/work"
tar -C "$tmp/unpacked" -xzf "$tarball"
bundle=$(echo "$tmp"/unpacked/*/)
bundle=${bundle%/}
[[ -x $bundle/bin/prof && -x $bundle/bin/prof-run && -f $bundle/lib/libprof/libprof.so ]] ||
	fail "bin/prof, bin/prof-run or lib/libprof/libprof.so missing in $bundle"

# Every library beyond glibc resolves inside the bundle, with no help from the environment.
for bin in "$bundle/bin/prof" "$bundle/lib/libprof/libprof.so"; do
	outside=$(env -i ldd "$bin" | grep '=>' | grep -v -F "$bundle/" |
		grep -Ev '/(libc|libm|libdl|libpthread|librt|libresolv)\.so' || true)
	[[ -z $outside ]] || fail "$bin needs libraries from outside the bundle: $outside"
	! env -i ldd "$bin" | grep -q 'not found' || fail "$bin: a library is not found"
done

# A program of its own, profiled from a clean environment in an unrelated directory.
cat >"$tmp/work/prog.c" <<'C'
#include <stdio.h>
#include <stdlib.h>
int main(void)
{
	for (int i = 0; i < 100; i++)
		free(malloc(64));
	void *kept = malloc(4096);
	printf("preload=%s\n", getenv("LD_PRELOAD"));
	return kept ? 3 : 0;
}
C
cc -g -O0 -o "$tmp/work/prog" "$tmp/work/prog.c"
cd "$tmp/work"
set +e
out=$(env -i PATH=/usr/bin:/bin HOME="$tmp" "$bundle/bin/prof-run" -o run -- ./prog 2>"$tmp/err")
rc=$?
set -e
((rc == 3)) || fail "prof-run exited $rc, not the program's 3: $(cat "$tmp/err")"
[[ $out == "preload=$bundle/lib/libprof/libprof.so" ]] || fail "program saw LD_PRELOAD: $out"
grep -q "prof-run: .*run" "$tmp/err" || fail "no summary on stderr: $(cat "$tmp/err")"
json=$(env -i "$bundle/bin/prof" report --json run)
grep -Eq '"alloc_calls": 10[1-2],' <<<"$json" || fail "heap not reported as 101 allocations (+1 for stdout)"
grep -q '"leaked_bytes": 4096' <<<"$json" || fail "the 4096-byte block not reported as leaked"
leaks=$(env -i "$bundle/bin/prof" leaks run)
grep -q 'main (.*prog.c:' <<<"$leaks" || fail "leak stack not symbolized to prog.c: $leaks"
# The GPU check travels in the bundle; without a GPU it checks what needs none and skips the rest.
if command -v python3 >/dev/null; then
	gc=$(env -i PATH=/usr/bin:/bin "$bundle/share/libprof/gpu-check/gpu-check" --work "$tmp/gc" 2>&1) ||
		fail "bundled gpu-check failed: $gc"
	grep -q 'PASS no CUDA loaded without CUDA' <<<"$gc" || fail "bundled gpu-check: $gc"
fi
echo "bundle test: $(basename "$bundle") profiles from $tmp with nothing else: ok"
