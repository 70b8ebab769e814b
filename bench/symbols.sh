#!/usr/bin/env bash
# bench/symbols.sh (`make bench`): `prof report` on a trace whose stacks run through a library
# of many symbols and no DWARF, as PyTorch's libtorch_cuda.so (about a million symbols) is.
# Each of N functions allocates once, so the trace holds N distinct return addresses, each
# named from the symbol table. Environment:
#   BENCH_SYMBOLS  functions in the library (default 100000)
#   BENCH_RUNS     prof report runs, median reported (default 3)
#   BUILD          build directory (default build)
# shellcheck source=bench/lib.sh
. "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/lib.sh"

N=${BENCH_SYMBOLS:-100000}
RUNS=${BENCH_RUNS:-3}
positive BENCH_SYMBOLS "$N"
positive BENCH_RUNS "$RUNS"
prof=$root/$BUILD/prof
[[ -x $prof ]] || die "$prof not found (run make first)"
unset_prof_env

tmp=$(mktemp -d "${TMPDIR:-/tmp}/prof-bench-symbols.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# Written in assembly: a C compiler takes minutes over 100,000 functions, the assembler
# seconds. Each function has its CFI, so stacks unwind through it as through compiled code.
awk -v n="$N" 'BEGIN {
	print ".text"
	for (i = 0; i < n; i++)
		printf ".globl f%d\n.type f%d,@function\nf%d:\n.cfi_startproc\nsub $8,%%rsp\n" \
		       ".cfi_def_cfa_offset 16\nmov $%d,%%edi\ncall malloc@PLT\nmov %%rax,%%rdi\n" \
		       "add $8,%%rsp\n.cfi_def_cfa_offset 8\njmp free@PLT\n.cfi_endproc\n" \
		       ".size f%d,.-f%d\n", i, i, i, i % 64 + 1, i, i
	printf ".section .data.rel.ro,\"aw\"\n.globl fns\n.type fns,@object\n.size fns,%d\n" \
	       ".align 8\nfns:\n", n * 8
	for (i = 0; i < n; i++)
		printf ".quad f%d\n", i
	printf ".globl nfns\n.type nfns,@object\n.size nfns,4\nnfns: .long %d\n" \
	       ".section .note.GNU-stack,\"\",@progbits\n", n
}' >"$tmp/lib.s"
cat >"$tmp/main.c" <<'C'
extern void (*const fns[])(void);
extern const int nfns;
int main(void) { for (int i = 0; i < nfns; i++) fns[i](); return 0; }
C
${CC:-cc} -shared -o "$tmp/libsyms.so" "$tmp/lib.s"
${CC:-cc} -O1 -o "$tmp/main" "$tmp/main.c" -L"$tmp" -lsyms -Wl,-rpath,"$tmp"

PROF_EVENTS=alloc PROF_CPU_HZ=0 "$root/scripts/prof-run" --no-compress -o "$tmp/run" -- \
	"$tmp/main" 2>/dev/null
for ((i = 0; i < RUNS; i++)); do
	t0=$(date +%s%N)
	"$prof" report "$tmp/run" >"$tmp/report.txt"
	echo $(( ($(date +%s%N) - t0) / 1000000 ))
done >"$tmp/ms"
named=$("$prof" flame --kind alloc --folded "$tmp/run" | grep -oE ';f[0-9]+' | sort -u | wc -l || true)
((named == N)) || die "the flame graph names $named of the $N functions"
mkdir -p "$root/$BUILD/bench"
echo "symbols: prof report, $N stacks through a library of $N symbols (no DWARF): $(median "$tmp/ms") ms (median of $RUNS)" |
	tee "$root/$BUILD/bench/symbols.txt"
