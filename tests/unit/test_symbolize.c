/* Symbolizer tests: small programs are compiled at run time (PIE and not, -O0 and -O2 with an
 * inlined function, C++, a shared library), run to print their own return addresses, lines and
 * load biases, and those addresses are looked up. Plus the broken cases: stripped, missing,
 * non-ELF and mismatched files. */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <elfutils/libdwelf.h>
#include <elfutils/libdwfl.h>
#include <link.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "symbolize.h"

/* The fixtures print "<tag> <address> <line>..." and "bias <tag> <bias>"; they find each
 * object's bias with dl_iterate_phdr from an address inside it. Return addresses come from
 * noipa leaves, each called on the line that also records __LINE__. */
#define FIXTURE_BIAS_CODE							\
	"#include <link.h>\n"							\
	"#include <stdint.h>\n"							\
	"#include <stdio.h>\n"							\
	"static int phdr_cb(struct dl_phdr_info *info, size_t size, void *data)\n" \
	"{\n"									\
	"	uintptr_t addr = (uintptr_t)((void **)data)[0];\n"		\
	"	(void)size;\n"							\
	"	for (int i = 0; i < info->dlpi_phnum; i++) {\n"			\
	"		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];\n"		\
	"		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;\n"	\
	"		if (ph->p_type == PT_LOAD && addr >= lo && addr < lo + ph->p_memsz) {\n" \
	"			printf(\"bias %s %#lx\\n\", (const char *)((void **)data)[1],\n" \
	"			       (unsigned long)info->dlpi_addr);\n"	\
	"			return 1;\n"					\
	"		}\n"							\
	"	}\n"								\
	"	return 0;\n"							\
	"}\n"									\
	"static void print_bias(const char *tag, void *addr)\n"			\
	"{\n"									\
	"	void *data[2] = { addr, (void *)tag };\n"			\
	"	dl_iterate_phdr(phdr_cb, data);\n"				\
	"}\n"

static const char fixture_c[] =
	"#define _GNU_SOURCE\n"
	FIXTURE_BIAS_CODE
	"void *lib_where(int *line);\n"
	"static volatile int sink;\n"
	"int line_a, line_inl, line_outer;\n"
	"__attribute__((noipa)) void *leaf(void)\n"
	"{\n"
	"	sink++;\n"
	"	return __builtin_return_address(0);\n"
	"}\n"
	"__attribute__((noipa)) void *func_a(void)\n"
	"{\n"
	"	void *r = leaf(); line_a = __LINE__;\n"
	"	sink++;\n"
	"	return r;\n"
	"}\n"
	"static inline __attribute__((always_inline)) void *inl(void)\n"
	"{\n"
	"	void *r = leaf(); line_inl = __LINE__;\n"
	"	sink++;\n"
	"	return r;\n"
	"}\n"
	"__attribute__((noipa)) void *outer(void)\n"
	"{\n"
	"	void *r = inl(); line_outer = __LINE__;\n"
	"	sink += 2;\n"
	"	return r;\n"
	"}\n"
	"int main(void)\n"
	"{\n"
	"	int lib_line = 0;\n"
	"	void *a = func_a();\n"
	"	void *o = outer();\n"
	"	void *l = lib_where(&lib_line);\n"
	"	printf(\"a %p %d\\n\", a, line_a);\n"
	"	printf(\"inl %p %d %d\\n\", o, line_inl, line_outer);\n"
	"	printf(\"lib %p %d\\n\", l, lib_line);\n"
	"	printf(\"fn %p\\n\", (void *)func_a);\n"
	"	print_bias(\"main\", a);\n"
	"	print_bias(\"lib\", l);\n"
	"	return 0;\n"
	"}\n";

static const char fixture_lib[] =
	"static volatile int sink;\n"
	"__attribute__((noipa)) static void *lib_leaf(void)\n"
	"{\n"
	"	sink++;\n"
	"	return __builtin_return_address(0);\n"
	"}\n"
	"void *lib_where(int *line)\n"
	"{\n"
	"	void *r = lib_leaf(); *line = __LINE__;\n"
	"	sink++;\n"
	"	return r;\n"
	"}\n";

static const char fixture_cxx[] =
	FIXTURE_BIAS_CODE
	"static volatile int sink;\n"
	"static int line_m;\n"
	"__attribute__((noipa)) static void *leaf()\n"
	"{\n"
	"	sink++;\n"
	"	return __builtin_return_address(0);\n"
	"}\n"
	"namespace ns {\n"
	"class Klass {\n"
	"public:\n"
	"	void *method(int x);\n"
	"};\n"
	"__attribute__((noipa)) void *Klass::method(int x)\n"
	"{\n"
	"	void *r = leaf(); line_m = __LINE__;\n"
	"	sink += x;\n"
	"	return r;\n"
	"}\n"
	"}\n"
	"int main()\n"
	"{\n"
	"	ns::Klass k;\n"
	"	void *r = k.method(1);\n"
	"	printf(\"m %p %d\\n\", r, line_m);\n"
	"	print_bias(\"main\", r);\n"
	"	return 0;\n"
	"}\n";

/* What a fixture run printed. */
struct run {
	uint64_t a, inl, lib, fn, m;
	int line_a, line_inl, line_outer, line_lib, line_m;
	uint64_t main_bias, lib_bias;
	int have_lib_bias;
};

static char tmpdir[64];

static void setup(void)
{
	strcpy(tmpdir, "/tmp/sym-test-XXXXXX");
	cr_assert_not_null(mkdtemp(tmpdir));
}

static void teardown(void)
{
	char cmd[128];

	if (!tmpdir[0])
		return;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	cr_expect_eq(system(cmd), 0);
	tmpdir[0] = '\0';
}

TestSuite(symbolize, .init = setup, .fini = teardown);

static const char *tmp_path(char *buf, size_t size, const char *name)
{
	snprintf(buf, size, "%s/%s", tmpdir, name);
	return buf;
}

static void write_file(const char *name, const char *text)
{
	char path[256];
	FILE *f = fopen(tmp_path(path, sizeof(path), name), "w");

	cr_assert_not_null(f, "cannot create %s", path);
	fputs(text, f);
	cr_assert_eq(fclose(f), 0);
}

/* Runs a shell command in tmpdir; fails the test when it fails. */
static void sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void sh(const char *fmt, ...)
{
	char cmd[2048];
	va_list ap;
	int n = snprintf(cmd, sizeof(cmd), "cd '%s' && ", tmpdir);

	va_start(ap, fmt);
	vsnprintf(cmd + n, sizeof(cmd) - n, fmt, ap);
	va_end(ap);
	cr_assert_eq(system(cmd), 0, "command failed: %s", cmd);
}

/* Builds libsymlib.so and the C fixture as `exe` with extra compiler flags. */
static void build_c(const char *exe, const char *flags)
{
	write_file("sym_fix.c", fixture_c);
	write_file("sym_lib.c", fixture_lib);
	sh("cc -g -O0 -fPIC -shared -o libsymlib.so sym_lib.c");
	sh("cc -g %s -fno-optimize-sibling-calls -o %s sym_fix.c -L. -lsymlib "
	   "-Wl,-rpath,'%s'", flags, exe, tmpdir);
}

static void run_fixture(const char *exe, struct run *r)
{
	char cmd[512], line[256], tag[16];
	FILE *p;

	memset(r, 0, sizeof(*r));
	snprintf(cmd, sizeof(cmd), "'%s/%s'", tmpdir, exe);
	p = popen(cmd, "r");
	cr_assert_not_null(p);
	while (fgets(line, sizeof(line), p)) {
		unsigned long long v;

		if (sscanf(line, "bias %15s %llx", tag, &v) == 2) {
			if (strcmp(tag, "main") == 0) {
				r->main_bias = v;
			} else {
				r->lib_bias = v;
				r->have_lib_bias = 1;
			}
		} else if (sscanf(line, "a %llx %d", &v, &r->line_a) == 2) {
			r->a = v;
		} else if (sscanf(line, "inl %llx %d %d", &v, &r->line_inl, &r->line_outer) == 3) {
			r->inl = v;
		} else if (sscanf(line, "lib %llx %d", &v, &r->line_lib) == 2) {
			r->lib = v;
		} else if (sscanf(line, "fn %llx", &v) == 1) {
			r->fn = v;
		} else if (sscanf(line, "m %llx %d", &v, &r->line_m) == 2) {
			r->m = v;
		}
	}
	cr_assert_eq(pclose(p), 0, "%s failed", exe);
}

static const char *base_name(const char *path)
{
	const char *slash = path ? strrchr(path, '/') : NULL;

	return slash ? slash + 1 : path;
}

/* Declares the fixture's main program as module 1 and its library as module 2. */
static struct symbolizer *new_sym(const char *exe, const struct run *r)
{
	struct symbolizer *s = sym_new();
	char path[256];

	cr_assert_not_null(s);
	cr_assert_eq(sym_add_module(s, 1, tmp_path(path, sizeof(path), exe), r->main_bias,
				    r->main_bias + 0x100000, r->main_bias, NULL, 0), 0);
	if (r->have_lib_bias)
		cr_assert_eq(sym_add_module(s, 2, tmp_path(path, sizeof(path), "libsymlib.so"),
					    r->lib_bias, r->lib_bias + 0x100000, r->lib_bias,
					    NULL, 0), 0);
	return s;
}

static void expect_frame(const struct sym_frame *f, const char *function, const char *file,
			 int line, int inlined)
{
	cr_expect_str_eq(f->function ? f->function : "(null)", function);
	cr_expect_str_eq(f->file ? base_name(f->file) : "(null)", file);
	cr_expect_eq(f->line, line, "%s: line %d, expected %d", function, f->line, line);
	cr_expect_eq(f->inlined, inlined, "%s: inlined %d", function, f->inlined);
}

static void check_c_program(const char *exe, int expect_no_bias)
{
	struct sym_frame fr[8];
	struct run r;
	char path[256];
	int n;

	run_fixture(exe, &r);
	cr_assert(r.a && r.lib && r.fn && r.have_lib_bias && r.line_a > 0 && r.line_lib > 0,
		  "fixture output incomplete");
	if (expect_no_bias)
		cr_expect_eq(r.main_bias, 0, "a -no-pie program has bias 0");
	else
		cr_expect_neq(r.main_bias, 0, "a PIE program is relocated");

	struct symbolizer *s = new_sym(exe, &r);

	n = sym_lookup(s, 1, r.a, 1, fr, 8);
	cr_assert_eq(n, 1);
	expect_frame(&fr[0], "func_a", "sym_fix.c", r.line_a, 0);
	cr_expect_str_eq(fr[0].module, tmp_path(path, sizeof(path), exe));
	cr_expect_eq(fr[0].address, r.a);
	cr_expect_eq(fr[0].offset, r.a - r.main_bias);

	/* A function's own address, not a return address. */
	n = sym_lookup(s, 1, r.fn, 0, fr, 8);
	cr_assert_eq(n, 1);
	cr_expect_str_eq(fr[0].function ? fr[0].function : "(null)", "func_a");

	n = sym_lookup(s, 2, r.lib, 1, fr, 8);
	cr_assert_eq(n, 1);
	expect_frame(&fr[0], "lib_where", "sym_lib.c", r.line_lib, 0);
	cr_expect_str_eq(base_name(fr[0].module), "libsymlib.so");
	cr_expect_eq(fr[0].offset, r.lib - r.lib_bias);

	/* Cached: the same interned strings again. */
	struct sym_frame again;

	cr_assert_eq(sym_lookup(s, 2, r.lib, 1, &again, 1), 1);
	cr_expect_eq(again.function, fr[0].function);
	cr_expect_eq(again.file, fr[0].file);

	/* The same file mapped elsewhere (another process): the same answer. */
	const uint64_t moved = r.main_bias + 0x10000000;

	cr_assert_eq(sym_add_module(s, 3, tmp_path(path, sizeof(path), exe), moved,
				    moved + 0x100000, moved, NULL, 0), 0);
	n = sym_lookup(s, 3, r.a - r.main_bias + moved, 1, fr, 8);
	cr_assert_eq(n, 1);
	expect_frame(&fr[0], "func_a", "sym_fix.c", r.line_a, 0);
	cr_expect_eq(fr[0].offset, r.a - r.main_bias);
	sym_free(s);
}

Test(symbolize, pie_O0_and_shared_library)
{
	build_c("fix_pie", "-O0 -fPIE -pie");
	check_c_program("fix_pie", 0);
}

Test(symbolize, no_pie_executable)
{
	build_c("fix_nopie", "-O0 -fno-pie -no-pie");
	check_c_program("fix_nopie", 1);
}

Test(symbolize, inline_chain_O2)
{
	struct sym_frame fr[8];
	struct run r;
	int n;

	build_c("fix_o2", "-O2");
	run_fixture("fix_o2", &r);
	cr_assert(r.inl && r.line_inl > 0 && r.line_outer > r.line_inl);
	struct symbolizer *s = new_sym("fix_o2", &r);

	n = sym_lookup(s, 1, r.inl, 1, fr, 8);
	cr_assert_eq(n, 2, "expected inl inlined into outer, got %d frames", n);
	expect_frame(&fr[0], "inl", "sym_fix.c", r.line_inl, 1);
	expect_frame(&fr[1], "outer", "sym_fix.c", r.line_outer, 0);
	cr_expect_eq(fr[0].address, r.inl);
	cr_expect_eq(fr[1].address, r.inl);

	/* max smaller than the chain: the innermost frames. */
	n = sym_lookup(s, 1, r.inl, 1, fr, 1);
	cr_expect_eq(n, 1);
	cr_expect_str_eq(fr[0].function, "inl");
	cr_expect_eq(sym_lookup(s, 1, r.inl, 1, fr, 0), 0);

	/* The O2 main program also still resolves its out-of-line function. */
	n = sym_lookup(s, 1, r.a, 1, fr, 8);
	cr_assert_eq(n, 1);
	expect_frame(&fr[0], "func_a", "sym_fix.c", r.line_a, 0);
	sym_free(s);
}

Test(symbolize, cxx_qualified_method)
{
	struct sym_frame fr[4];
	struct run r;
	int n;

	write_file("sym_cxx.cpp", fixture_cxx);
	sh("c++ -g -O0 -o fix_cxx sym_cxx.cpp");
	run_fixture("fix_cxx", &r);
	cr_assert(r.m && r.line_m > 0);
	struct symbolizer *s = new_sym("fix_cxx", &r);

	n = sym_lookup(s, 1, r.m, 1, fr, 4);
	cr_assert_eq(n, 1);
	expect_frame(&fr[0], "ns::Klass::method(int)", "sym_cxx.cpp", r.line_m, 0);
	sym_free(s);
}

Test(symbolize, stripped_binaries)
{
	struct sym_frame fr[4];
	struct run r;
	int n;

	build_c("fix", "-O0");
	run_fixture("fix", &r);
	sh("strip --strip-debug -o fix_nodebug fix && strip --strip-all -o fix_stripped fix");

	/* No DWARF: the function from .symtab, no file or line. */
	struct symbolizer *s = new_sym("fix_nodebug", &r);
	n = sym_lookup(s, 1, r.a, 1, fr, 4);
	cr_assert_eq(n, 1);
	expect_frame(&fr[0], "func_a", "(null)", 0, 0);
	cr_expect_eq(fr[0].offset, r.a - r.main_bias);
	sym_free(s);

	/* Nothing but .dynsym: whatever is there (func_a is not exported), and no crash. */
	s = new_sym("fix_stripped", &r);
	n = sym_lookup(s, 1, r.a, 1, fr, 4);
	cr_assert_eq(n, 1);
	cr_expect_null(fr[0].file);
	cr_expect_eq(fr[0].line, 0);
	cr_expect_eq(fr[0].offset, r.a - r.main_bias);
	sym_free(s);
}

Test(symbolize, separate_debug_file_by_debuglink)
{
	struct sym_frame fr[4];
	struct run r;

	build_c("fix", "-O0");
	run_fixture("fix", &r);
	sh("objcopy --only-keep-debug fix fix.debug && "
	   "objcopy --strip-debug --add-gnu-debuglink=fix.debug fix fix_linked");

	struct symbolizer *s = new_sym("fix_linked", &r);
	cr_assert_eq(sym_lookup(s, 1, r.a, 1, fr, 4), 1);
	expect_frame(&fr[0], "func_a", "sym_fix.c", r.line_a, 0);
	sym_free(s);
}

/* Reads a file's GNU build ID into bits; returns its length (0 if none). */
static size_t read_build_id(const char *path, uint8_t *bits, size_t size)
{
	int fd = open(path, O_RDONLY);
	Elf *elf;
	const void *p;
	ssize_t n;

	cr_assert_geq(fd, 0);
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	cr_assert_not_null(elf);
	n = dwelf_elf_gnu_build_id(elf, &p);
	if (n > 0 && (size_t)n <= size)
		memcpy(bits, p, n);
	else
		n = 0;
	elf_end(elf);
	close(fd);
	return n;
}

Test(symbolize, build_id_checked)
{
	struct sym_frame fr[4];
	struct run r;
	uint8_t id[64], fake[20];
	char path[256];
	size_t len;

	build_c("fix", "-O0");
	run_fixture("fix", &r);
	tmp_path(path, sizeof(path), "fix");
	len = read_build_id(path, id, sizeof(id));
	cr_assert_gt(len, 0, "gcc should emit a build ID");
	memset(fake, 0xab, sizeof(fake));

	struct symbolizer *s = sym_new();
	cr_assert_eq(sym_add_module(s, 1, path, r.main_bias, r.main_bias + 0x100000,
				    r.main_bias, id, len), 0);
	/* The file was replaced by another build: its symbols would be wrong, so none. */
	cr_assert_eq(sym_add_module(s, 2, path, r.main_bias, r.main_bias + 0x100000,
				    r.main_bias, fake, sizeof(fake)), 0);
	cr_assert_eq(sym_lookup(s, 1, r.a, 1, fr, 4), 1);
	expect_frame(&fr[0], "func_a", "sym_fix.c", r.line_a, 0);
	cr_assert_eq(sym_lookup(s, 2, r.a, 1, fr, 4), 1);
	cr_expect_null(fr[0].function);
	cr_expect_null(fr[0].file);
	cr_expect_str_eq(fr[0].module, path);
	cr_expect_eq(fr[0].offset, r.a - r.main_bias);

	/* " (deleted)" as /proc/PID/maps writes it: the file at the path is used only when
	 * its build ID matches the recorded one. */
	char deleted[300];
	snprintf(deleted, sizeof(deleted), "%s (deleted)", path);
	cr_assert_eq(sym_add_module(s, 3, deleted, r.main_bias, r.main_bias + 0x100000,
				    r.main_bias, id, len), 0);
	cr_assert_eq(sym_add_module(s, 4, deleted, r.main_bias, r.main_bias + 0x100000,
				    r.main_bias, NULL, 0), 0);
	cr_assert_eq(sym_lookup(s, 3, r.a, 1, fr, 4), 1);
	cr_expect_str_eq(fr[0].function ? fr[0].function : "(null)", "func_a");
	cr_expect_str_eq(fr[0].module, deleted);
	cr_assert_eq(sym_lookup(s, 4, r.a, 1, fr, 4), 1);
	cr_expect_null(fr[0].function);
	sym_free(s);
}

Test(symbolize, missing_and_bogus_modules)
{
	struct sym_frame fr[4];
	char path[256];
	const uint64_t bias = 0x7f0000000000ull, addr = bias + 0x1234;
	struct symbolizer *s = sym_new();
	int n;

	cr_assert_not_null(s);
	/* Unknown module id. */
	n = sym_lookup(s, 99, 0x401000, 1, fr, 4);
	cr_assert_eq(n, 1);
	cr_expect_str_eq(fr[0].module, "?");
	cr_expect_null(fr[0].function);
	cr_expect_null(fr[0].file);
	cr_expect_eq(fr[0].line, 0);
	cr_expect_eq(fr[0].address, 0x401000);

	write_file("notelf.so", "this is not an ELF file\n");
	write_file("truncated.so", "\177ELF\002\001\001");
	sh("head -c 200 /bin/sh > cut.so && mkfifo fifo.so && mkdir dir.so");

	const char *const names[] = { "nonexistent.so", "notelf.so", "truncated.so", "cut.so",
				      "fifo.so", "dir.so" };
	for (uint32_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		tmp_path(path, sizeof(path), names[i]);
		cr_assert_eq(sym_add_module(s, i, path, bias, bias + 0x10000, bias, NULL, 0), 0);
		for (int round = 0; round < 2; round++) {
			n = sym_lookup(s, i, addr, 1, fr, 4);
			cr_assert_eq(n, 1, "%s", names[i]);
			cr_expect_str_eq(fr[0].module, path);
			cr_expect_null(fr[0].function, "%s", names[i]);
			cr_expect_null(fr[0].file, "%s", names[i]);
			cr_expect_eq(fr[0].line, 0);
			cr_expect_eq(fr[0].offset, 0x1234);
			cr_expect_eq(fr[0].address, addr);
		}
	}

	/* Never opened: pseudo-files and the main-program placeholder. */
	const char *const pseudo[] = { "[vdso]", "", "linux-vdso.so.1", "[heap]" };
	for (uint32_t i = 0; i < sizeof(pseudo) / sizeof(pseudo[0]); i++) {
		cr_assert_eq(sym_add_module(s, 100 + i, pseudo[i], bias, bias + 0x1000, bias,
					    NULL, 0), 0);
		n = sym_lookup(s, 100 + i, addr, 0, fr, 4);
		cr_assert_eq(n, 1);
		cr_expect_str_eq(fr[0].module, pseudo[i][0] ? pseudo[i] : "?");
		cr_expect_null(fr[0].function);
		cr_expect_eq(fr[0].offset, 0x1234);
	}
	cr_expect_eq(sym_lookup(s, 99, addr, 1, fr, 0), 0);
	sym_free(s);
	sym_free(NULL);
}

Test(symbolize, redeclared_module_id)
{
	struct sym_frame fr[2];
	struct run r;
	char path[256];

	build_c("fix", "-O0");
	run_fixture("fix", &r);
	struct symbolizer *s = new_sym("fix", &r);

	cr_assert_eq(sym_lookup(s, 1, r.a, 1, fr, 2), 1);
	cr_expect_str_eq(fr[0].function, "func_a");
	/* Same id, now a missing file: the cached answer must not survive. */
	tmp_path(path, sizeof(path), "gone");
	cr_assert_eq(sym_add_module(s, 1, path, r.main_bias, r.main_bias + 0x100000,
				    r.main_bias, NULL, 0), 0);
	cr_assert_eq(sym_lookup(s, 1, r.a, 1, fr, 2), 1);
	cr_expect_null(fr[0].function);
	cr_expect_str_eq(fr[0].module, path);
	/* And back (an identical re-declaration is a no-op). */
	tmp_path(path, sizeof(path), "fix");
	cr_assert_eq(sym_add_module(s, 1, path, r.main_bias, r.main_bias + 0x100000,
				    r.main_bias, NULL, 0), 0);
	cr_assert_eq(sym_add_module(s, 1, path, r.main_bias, r.main_bias + 0x100000,
				    r.main_bias, NULL, 0), 0);
	cr_assert_eq(sym_lookup(s, 1, r.a, 1, fr, 2), 1);
	cr_expect_str_eq(fr[0].function, "func_a");
	sym_free(s);
}

/* A system library (libc, usually without debug info here): symbol table names. */
Test(symbolize, system_library)
{
	struct sym_frame fr[4];
	struct link_map *map = NULL;
	Dl_info info;
	void *fn = dlsym(RTLD_DEFAULT, "getpid");

	cr_assert_not_null(fn);
	cr_assert(dladdr1(fn, &info, (void **)&map, RTLD_DL_LINKMAP) && map);
	struct symbolizer *s = sym_new();
	cr_assert_eq(sym_add_module(s, 7, info.dli_fname, (uintptr_t)info.dli_fbase,
				    (uintptr_t)info.dli_fbase + 0x100000, map->l_addr, NULL, 0), 0);
	int n = sym_lookup(s, 7, (uintptr_t)fn, 0, fr, 4);
	cr_assert_geq(n, 1);
	cr_expect_not_null(fr[n - 1].function);
	cr_expect(fr[n - 1].function && strstr(fr[n - 1].function, "getpid"), "got %s",
		  fr[n - 1].function);
	cr_expect_str_eq(fr[0].module, info.dli_fname);
	sym_free(s);
}

/* Every address of path, named from its symbol tables alone, as libdwfl's own
 * dwfl_module_addrinfo() names it; at an address with several symbols, either may. */
static void symbols_agree_with_libdwfl(const char *path)
{
	char *debuginfo_path = NULL;
	Dwfl_Callbacks cb = { .find_elf = dwfl_build_id_find_elf,
			      .find_debuginfo = dwfl_standard_find_debuginfo,
			      .debuginfo_path = &debuginfo_path };
	Dwfl *dwfl = dwfl_begin(&cb);
	Dwfl_Module *mod = dwfl_report_offline(dwfl, "fixture", path, -1);
	cr_assert_not_null(mod, "%s", path);
	dwfl_report_end(dwfl, NULL, NULL);
	Dwarf_Addr low, high, dwfl_bias;
	dwfl_module_info(mod, NULL, &low, &high, NULL, NULL, NULL, NULL);
	cr_assert_not_null(dwfl_module_getelf(mod, &dwfl_bias));	/* where libdwfl put it */

	const uint64_t base = 0x10000000;
	struct symbolizer *s = sym_new();
	cr_assert_eq(sym_add_module(s, 1, path, base, base + high, base, NULL, 0), 0);
	size_t named = 0, wrong = 0;
	for (Dwarf_Addr a = low; a < high && wrong < 5; a++) {
		struct sym_frame fr[4];
		GElf_Off off;
		GElf_Sym sym;
		const char *want = dwfl_module_addrinfo(mod, a, &off, &sym, NULL, NULL, NULL);
		int n = sym_lookup(s, 1, base + a - dwfl_bias, 0, fr, 4);
		const char *got = n >= 1 ? fr[n - 1].function : NULL;
		int same = want && got ? !strcmp(want, got) : want == got;

		for (int i = 1; !same && want && got && i < dwfl_module_getsymtab(mod); i++) {
			GElf_Sym other;
			GElf_Addr at;
			const char *name = dwfl_module_getsym_info(mod, i, &other, &at, NULL, NULL,
								   NULL);
			same = name && !strcmp(name, got) && at == a - off;
		}
		named += want != NULL;
		wrong += !same;
		cr_expect(same, "%s at %#llx: libdwfl says %s, we say %s", path,
			  (unsigned long long)a, want ? want : "nothing", got ? got : "nothing");
	}
	cr_expect_gt(named, (high - low) / 8, "%s: only %zu addresses named", path, named);
	sym_free(s);
	dwfl_end(dwfl);
}

/* Functions of every kind a symbol table holds: global, static, weak, aliases, cold parts
 * split from their function, and a sizeless assembly label. */
static const char fixture_many[] =
	"static volatile int sink;\n"
	"#define F(n) __attribute__((noipa)) int g##n(int x) { if (__builtin_expect(x == n, 0)) "
	"{ sink += x * 3; sink ^= n; } return x + n; } "
	"__attribute__((noipa)) static int s##n(int x) { sink += n; return g##n(x); }\n"
	"#define T(n) F(n##0) F(n##1) F(n##2) F(n##3) F(n##4) F(n##5) F(n##6) F(n##7) F(n##8) "
	"F(n##9)\n"
	"T(1) T(2) T(3) T(4) T(5) T(6) T(7) T(8) T(9)\n"
	"int alias_of_g10(int) __attribute__((alias(\"g10\")));\n"
	"__attribute__((weak)) int weak_one(int x) { return x * 7; }\n"
	"__asm__(\".text\\nasm_label:\\n\\tret\\n\");\n"
	"int main(int argc, char **argv) { (void)argv; return s10(argc) + s95(argc) + "
	"weak_one(argc); }\n";

Test(symbolize, symbol_tables_agree_with_libdwfl)
{
	char path[256];

	write_file("sym_many.c", fixture_many);
	sh("cc -O2 -g -o many sym_many.c && strip --strip-debug -o many_nodebug many && "
	   "cc -O2 -g -fPIC -shared -o libmany.so sym_many.c && "
	   "strip --strip-all -o libmany_dynsym.so libmany.so");
	symbols_agree_with_libdwfl(tmp_path(path, sizeof(path), "many_nodebug"));
	symbols_agree_with_libdwfl(tmp_path(path, sizeof(path), "libmany_dynsym.so"));
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Every byte of the main program and the library, twice: no crash whatever the address
 * (padding, PLT, headers, past the end), answers stable once cached. */
Test(symbolize, every_address_and_cache)
{
	struct sym_frame fr[16], fr2[16];
	struct run r;
	const uint64_t span = 0x5000;
	double t0, t1, t2;

	build_c("fix_o2", "-O2");
	run_fixture("fix_o2", &r);
	struct symbolizer *s = new_sym("fix_o2", &r);

	t0 = now();
	for (uint64_t off = 0; off < span; off++) {
		for (uint32_t id = 1; id <= 2; id++) {
			uint64_t bias = id == 1 ? r.main_bias : r.lib_bias;
			int n = sym_lookup(s, id, bias + off, off & 1, fr, 16);

			cr_assert(n >= 1 && n <= 16);
			for (int i = 0; i < n; i++) {
				cr_assert_not_null(fr[i].module);
				cr_assert_eq(fr[i].offset, off);
			}
		}
	}
	t1 = now();
	for (uint64_t off = 0; off < span; off++) {
		for (uint32_t id = 1; id <= 2; id++) {
			uint64_t bias = id == 1 ? r.main_bias : r.lib_bias;
			int n = sym_lookup(s, id, bias + off, off & 1, fr, 16);
			int n2 = sym_lookup(s, id, bias + off, off & 1, fr2, 16);

			cr_assert_eq(n, n2);
			cr_assert_eq(memcmp(fr, fr2, sizeof(fr[0]) * n), 0);
		}
	}
	t2 = now();
	cr_log_info("%llu uncached lookups: %.3fs, %llu cached: %.3fs",
		    (unsigned long long)span * 2, t1 - t0, (unsigned long long)span * 4, t2 - t1);
	sym_free(s);
}

Test(symbolize, demangle)
{
	char *d;

	d = sym_demangle("_ZN2ns5Klass6methodEi");
	cr_assert_not_null(d);
	cr_expect_str_eq(d, "ns::Klass::method(int)");
	free(d);
	d = sym_demangle("_Z3fooi.isra.0");
	cr_assert_not_null(d);
	cr_expect(strncmp(d, "foo(int)", 8) == 0, "%s", d);
	free(d);
	d = sym_demangle("_ZNSt6vectorIiSaIiEE9push_backERKi");
	cr_assert_not_null(d);
	cr_expect_str_eq(d, "std::vector<int, std::allocator<int> >::push_back(int const&)");
	free(d);
	cr_expect_null(sym_demangle("main"));
	cr_expect_null(sym_demangle("malloc"));
	cr_expect_null(sym_demangle("_Z"));
	cr_expect_null(sym_demangle("_Zgarbage!"));
	cr_expect_null(sym_demangle(""));
	cr_expect_null(sym_demangle(NULL));
}
