# libprof: `make` builds build/libprof.so and build/prof; `make demo` profiles the bundled
# example; `make test` runs every test; `make bench` measures overhead against heaptrack.
CC      ?= cc
PREFIX  ?= /usr/local
BUILD   ?= build
VERSION := 0.1.0

WARN    := -Wall -Wextra -Werror
CFLAGS  ?= -O2 -g
override CFLAGS += $(WARN) -std=gnu11 -D_GNU_SOURCE -Ishared -DPROF_VERSION='"$(VERSION)"'

SHARED_SRC   := $(wildcard shared/*.c)
PRELOAD_SRC  := $(wildcard preload/*.c)
ANALYZER_SRC := $(wildcard analyzer/*.c)
ANALYZER_LIB_SRC := $(filter-out analyzer/main.c,$(ANALYZER_SRC))
UNIT_SRC     := $(wildcard tests/unit/*.c)
E2E_SRC      := $(wildcard tests/e2e/*.c)
CORE_SRC     := $(wildcard tests/core/*.c) preload/writer.c preload/stacks.c preload/clock.c \
		preload/python.c $(wildcard preload/python_3*.c)
PROG_SRC     := $(wildcard tests/progs/*.c tests/progs/*.cpp examples/*.c)
PROGS        := $(addprefix $(BUILD)/progs/,$(basename $(notdir $(PROG_SRC)))) $(BUILD)/progs/libplugin.so \
		$(BUILD)/progs/stack_paths_O2 $(BUILD)/progs/many_paths_O2 $(BUILD)/progs/libdeep.so \
		$(BUILD)/progs/stack_layouts_O2

# The preload side: PIC, hidden by default; only hooks are exported (PROF_EXPORT).
PRELOAD_CFLAGS := $(CFLAGS) -fPIC -fvisibility=hidden -Ipreload -ftls-model=initial-exec
# Frame pointers: the stack cache (stacks.c) finds the program's stack pointer at a hooked call
# through them. Not in the sampling signal's path (cpu.c, writer.c), which must fit in what a
# small thread stack has left.
PRELOAD_FP := -fno-omit-frame-pointer
$(BUILD)/pic/preload/cpu.o $(BUILD)/pic/preload/writer.o: PRELOAD_FP :=
PRELOAD_LIBS   := -Wl,--no-undefined -lunwind -ldl -lpthread
ANALYZER_CFLAGS := $(CFLAGS) -Ianalyzer -I$(BUILD)/gen
ANALYZER_LIBS   := -ljansson -ldw -lelf -lprotobuf-c -lsqlite3 -lz -lzstd -lstdc++ -lm -pthread

PRELOAD_OBJ  := $(patsubst %.c,$(BUILD)/pic/%.o,$(PRELOAD_SRC) $(SHARED_SRC))
ANALYZER_OBJ := $(patsubst %.c,$(BUILD)/obj/%.o,$(ANALYZER_LIB_SRC) $(SHARED_SRC)) \
		$(BUILD)/obj/gen/profile.pb-c.o

.PHONY: all deps demo test test-real real-fast fuzz fuzz-alloc unit core tsan e2e asan bench bench-cpu bench-table install clean \
	check-exports bundle test-bundle

all: deps $(BUILD)/libprof.so $(BUILD)/prof

# Installs missing Debian packages (does nothing when all are present).
deps:
	@scripts/install-deps

$(BUILD)/pic/%.o: %.c $(wildcard shared/*.h preload/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(PRELOAD_CFLAGS) $(PRELOAD_FP) -c $< -o $@

$(BUILD)/obj/%.o: %.c $(wildcard shared/*.h analyzer/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(ANALYZER_CFLAGS) -c $< -o $@

# pprof's profile.proto (the part prof writes), compiled by protobuf-c.
$(BUILD)/gen/profile.pb-c.c $(BUILD)/gen/profile.pb-c.h: analyzer/profile.proto
	@mkdir -p $(BUILD)/gen
	protoc-c --c_out=$(BUILD)/gen --proto_path=analyzer $<
$(BUILD)/obj/gen/profile.pb-c.o: $(BUILD)/gen/profile.pb-c.c
	@mkdir -p $(dir $@)
	$(CC) $(ANALYZER_CFLAGS) -Wno-unused-parameter -c $< -o $@
$(BUILD)/obj/analyzer/profiles.o: $(BUILD)/gen/profile.pb-c.h

$(BUILD)/libprof.so: $(PRELOAD_OBJ)
	$(CC) -shared -o $@ $^ $(PRELOAD_LIBS)

$(BUILD)/prof: $(BUILD)/obj/analyzer/main.o $(ANALYZER_OBJ)
	$(CC) $(LDFLAGS) -o $@ $^ $(ANALYZER_LIBS)

# Test programs: no optimisation so leak sites keep their lines; threads for the MT ones.
$(BUILD)/progs/%: tests/progs/%.c tests/progs/clear_stack.h tests/progs/code_range.h \
		tests/progs/alloc_leaf.h
	@mkdir -p $(dir $@)
	$(CC) -g -O0 -fno-omit-frame-pointer -Wall -Wextra -Werror -pthread $< -o $@
# Database clients link their library (the profiler itself never does).
$(BUILD)/progs/db_sqlite: tests/progs/db_sqlite.c
	@mkdir -p $(dir $@)
	$(CC) -g -O0 -Wall -Wextra -Werror $< -o $@ -lsqlite3
$(BUILD)/progs/leak_sqlite: tests/progs/leak_sqlite.c tests/progs/clear_stack.h
	@mkdir -p $(dir $@)
	$(CC) -g -O0 -Wall -Wextra -Werror $< -o $@ -lsqlite3
$(BUILD)/progs/db_pq: tests/progs/db_pq.c
	@mkdir -p $(dir $@)
	$(CC) -g -O0 -Wall -Wextra -Werror -I$(shell pg_config --includedir 2>/dev/null || echo /usr/include/postgresql) $< -o $@ -lpq
# Names that are markup live in the symbol table: no -g, or DWARF's name would be used.
$(BUILD)/progs/see_names: tests/progs/see_names.c
	@mkdir -p $(dir $@)
	$(CC) -O0 -fno-omit-frame-pointer -Wall -Wextra -Werror -pthread $< -o $@
$(BUILD)/progs/libplugin.so: tests/progs/plugin/plugin.c
	@mkdir -p $(dir $@)
	$(CC) -g -O0 -fPIC -shared -Wall -Wextra -Werror $< -o $@
# Statically linked on purpose: prof-run must refuse it.
$(BUILD)/progs/static_prog: tests/progs/static_prog.c
	@mkdir -p $(dir $@)
	$(CC) -O1 -static -Wall -Wextra -Werror $< -o $@
$(BUILD)/progs/libdeep.so: tests/progs/deepbind/deep.c
	@mkdir -p $(dir $@)
	$(CC) -g -O0 -fPIC -shared -Wall -Wextra -Werror $< -o $@
$(BUILD)/progs/%: tests/progs/%.cpp
	@mkdir -p $(dir $@)
	$(CXX) -g -O0 -Wall -Wextra -Werror $< -o $@
# The stack cache's test program again, optimised: frames without frame pointers.
$(BUILD)/progs/stack_paths_O2: tests/progs/stack_paths.cpp
	@mkdir -p $(dir $@)
	$(CXX) -g -O2 -Wall -Wextra -Werror $< -o $@ -lpthread
# Many call paths, optimised (no frame pointers) and with frame pointers.
$(BUILD)/progs/many_paths_O2: tests/progs/many_paths.c tests/progs/alloc_leaf.h
	@mkdir -p $(dir $@)
	$(CC) -g -O2 -Wall -Wextra -Werror -pthread $< -o $@
# Frames of other sizes at one depth, optimised too (rsp-based frames, no frame pointers).
$(BUILD)/progs/stack_layouts_O2: tests/progs/stack_layouts.c
	@mkdir -p $(dir $@)
	$(CC) -g -O2 -Wall -Wextra -Werror $< -o $@
$(BUILD)/progs/many_paths: tests/progs/many_paths.c tests/progs/alloc_leaf.h
	@mkdir -p $(dir $@)
	$(CC) -g -O2 -fno-omit-frame-pointer -Wall -Wextra -Werror -pthread $< -o $@
$(BUILD)/progs/%: examples/%.c
	@mkdir -p $(dir $@)
	$(CC) -g -O1 -Wall -Wextra -Werror -pthread $< -o $@

# MPI programs, where Open MPI's compiler wrapper is (scripts/install-deps --mpi); the e2e
# tests skip without it.
MPICC := $(shell command -v mpicc 2>/dev/null)
MPI_PROGS := $(if $(MPICC),$(BUILD)/progs/mpi_work)
$(BUILD)/progs/mpi_%: tests/mpi/mpi_%.c
	@mkdir -p $(dir $@)
	$(MPICC) -g -O0 -fno-omit-frame-pointer -Wall -Wextra -Werror $< -o $@
e2e: $(MPI_PROGS)

$(BUILD)/test-unit: $(UNIT_SRC) $(ANALYZER_OBJ)
	$(CC) $(ANALYZER_CFLAGS) $(LDFLAGS) -Itests -o $@ $^ -lcriterion $(ANALYZER_LIBS)

# The recording core (writer and stack interning) linked directly, with stubs for the rest
# of libprof; traces are read back with the analyzer's reader. CORE_RUNNER: Criterion, or
# the stand-in of tests/core/ctest.h where Criterion cannot run (ThreadSanitizer).
CORE_RUNNER ?= -lcriterion
$(BUILD)/test-core: $(CORE_SRC) $(wildcard tests/core/*.h) $(ANALYZER_OBJ) $(wildcard preload/*.h shared/*.h)
	$(CC) $(CFLAGS) $(LDFLAGS) -Ipreload -Ianalyzer -Itests/core -o $@ $(CORE_SRC) $(ANALYZER_OBJ) \
		$(filter-out -l%,$(CORE_RUNNER)) $(filter -l%,$(CORE_RUNNER)) -lunwind -lpthread $(ANALYZER_LIBS)

# The e2e tests read pprof exports back with the generated unpacker, sqlite ones with SQLite.
$(BUILD)/test-e2e: $(E2E_SRC) tests/e2e/e2e.h $(BUILD)/gen/profile.pb-c.c
	$(CC) $(CFLAGS) -Itests -I$(BUILD)/gen -Wno-unused-parameter -o $@ $(E2E_SRC) \
		$(BUILD)/gen/profile.pb-c.c -lcriterion -ljansson -lprotobuf-c -lsqlite3 -lz -lm

# Ends with what to look at first (the findings); the rest is written to files.
demo: all $(BUILD)/progs/demo
	scripts/prof-run --force -o $(BUILD)/demo-run -- $(BUILD)/progs/demo
	$(BUILD)/prof report -o $(BUILD)/demo-report.txt $(BUILD)/demo-run
	$(BUILD)/prof leaks -o $(BUILD)/demo-leaks.txt $(BUILD)/demo-run
	$(BUILD)/prof flame --kind alloc -o $(BUILD)/demo-alloc.svg $(BUILD)/demo-run
	@echo
	$(BUILD)/prof report --findings $(BUILD)/demo-run
	@echo "full report: $(BUILD)/demo-report.txt   leaks: $(BUILD)/demo-leaks.txt   flame graph: $(BUILD)/demo-alloc.svg"

# Exported symbols must be hooks only: nothing of libunwind, jansson or our internals. And
# the library's zero-initialized data stays under 2 MiB (tests/check-bss.sh says why).
check-exports: $(BUILD)/libprof.so
	@tests/check-exports.sh $(BUILD)/libprof.so
	@tests/check-bss.sh $(BUILD)/libprof.so

unit: all $(BUILD)/test-unit
	$(BUILD)/test-unit --jobs 2

core: $(BUILD)/test-core
	$(BUILD)/test-core --jobs 2

# The recording core under ThreadSanitizer: every access shared between threads is atomic.
# Criterion does not start under TSan (its arena fails to map), hence the stand-in runner.
tsan:
	$(MAKE) BUILD=build-tsan CFLAGS="-O1 -g -fsanitize=thread -fno-omit-frame-pointer" \
		LDFLAGS="-fsanitize=thread" CORE_RUNNER=-DCORE_SHIM build-tsan/test-core
	TSAN_OPTIONS="halt_on_error=1 exitcode=66" build-tsan/test-core

e2e: all $(BUILD)/test-e2e $(PROGS)
	PROF_BUILD=$(abspath $(BUILD)) $(BUILD)/test-e2e --jobs 2

# The analyzer and its unit tests (reader fuzzing included) under ASan and UBSan. One job:
# with two, Criterion's runner itself now and then leaks 48 bytes (calloc in
# criterion_run_all_tests), which LeakSanitizer reports as a failure of the whole run.
asan: deps
	$(MAKE) BUILD=build-asan \
		CFLAGS="-O1 -g -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer" \
		LDFLAGS="-fsanitize=address,undefined" \
		build-asan/prof build-asan/test-unit
	ASAN_OPTIONS=detect_leaks=1 LSAN_OPTIONS=suppressions=$(abspath tests/lsan.supp) \
		UBSAN_OPTIONS=print_stacktrace=1 build-asan/test-unit --jobs 1
	PROF_BUILD=$(abspath $(BUILD)) PROF_ANALYZER=$(abspath build-asan/prof) $(MAKE) e2e

test: check-exports unit core tsan asan test-bundle real-fast

# Real Debian programs under prof-run, compared with unprofiled runs (tests/real/run.sh):
# make test runs the few-second subset, make test-real all of them.
real-fast: all $(BUILD)/progs/hammer $(BUILD)/progs/hostile_names
	PROF_BUILD=$(abspath $(BUILD)) tests/real/run.sh --fast
	PROF_BUILD=$(abspath $(BUILD)) tests/real/faults.sh --fast
	PROF_BUILD=$(abspath $(BUILD)) tests/real/security.sh

# libFuzzer (clang) on the trace reader and each command's input path (tests/fuzz/fuzz.c):
# replays tests/fuzz/regressions/, then fuzzes each target FUZZ_SECONDS from tests/fuzz/seeds/.
FUZZ_TARGETS := reader report leaks flame export html kernels diff summary
FUZZ_SECONDS ?= 30
$(BUILD)/fuzz-%: tests/fuzz/fuzz.c $(ANALYZER_OBJ)
	$(CC) $(ANALYZER_CFLAGS) -fsanitize=fuzzer -DFUZZ_$* $(LDFLAGS) -o $@ $^ $(ANALYZER_LIBS)
fuzz: deps
	$(MAKE) BUILD=build-fuzz CC=clang LDFLAGS="-fsanitize=address,undefined" \
		CFLAGS="-O1 -g -fsanitize=address,undefined,fuzzer-no-link -fno-sanitize-recover=all -fno-omit-frame-pointer" \
		$(addprefix build-fuzz/fuzz-,$(FUZZ_TARGETS))
	tests/fuzz/run.sh build-fuzz $(FUZZ_SECONDS) $(FUZZ_TARGETS)
	$(MAKE) fuzz-alloc

# Allocation failure at every FAILALLOC_STEP-th allocation of each command on a small trace
# (tests/fuzz/failalloc.sh): an error, never a crash.
FAILALLOC_STEP ?= 10
fuzz-alloc: all
	tests/fuzz/failalloc.sh $(BUILD) $(FAILALLOC_STEP) report
	tests/fuzz/failalloc.sh $(BUILD) $(FAILALLOC_STEP) leaks
	tests/fuzz/failalloc.sh $(BUILD) $(FAILALLOC_STEP) flame --kind alloc -o /dev/null
	tests/fuzz/failalloc.sh $(BUILD) $(FAILALLOC_STEP) export --format chrome -o /dev/null
	tests/fuzz/failalloc.sh $(BUILD) $(FAILALLOC_STEP) html -o /dev/null

# The tests against a real PostgreSQL server (make test skips them where none is installed)
# and every real program: installs them (scripts/install-deps --test --real) and runs them.
test-real: all $(BUILD)/test-e2e $(PROGS)
	@scripts/install-deps --test --real || echo "make test-real: some programs could not be installed, their cases are skipped"
	PROF_BUILD=$(abspath $(BUILD)) $(BUILD)/test-e2e --filter 'db_real/*'
	PROF_BUILD=$(abspath $(BUILD)) tests/real/run.sh
	PROF_BUILD=$(abspath $(BUILD)) tests/real/faults.sh

# Every benchmark: allocations vs heaptrack, locks, I/O vs strace -c, CUDA against the fake
# driver, CPU sampling vs perf record, SQLite queries and HTTP requests, the analyzer on long
# traces; each prints its table and writes it to build/bench/*.txt.
bench: all $(BUILD)/cuda/libcuda.so.1
	bench/run.sh
	bench/locks.sh
	bench/io.sh
	bench/cuda.sh
	bench/cpu.sh
	bench/db.sh
	bench/overhead.sh
	bench/breakdown.sh
	bench/many.sh
	bench/leakscan.sh
	bench/forks.sh
	BUILD=$(BUILD) bench/tracesize.sh
	bench/python.sh
	BUILD=$(BUILD) bench/symbols.sh
	BUILD=$(BUILD) bench/analyzer
	rm -rf $(BUILD)/bench/.emptied

# The README's table: libprof against uninstrumented, heaptrack, memcheck, strace -c and
# perf record, plus the analyzer on a 50M-event trace (build/bench/table.md).
bench-table: all
	bench/table.sh

install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib/libprof
	install -m 0755 $(BUILD)/prof $(DESTDIR)$(PREFIX)/bin/prof
	install -m 0644 $(BUILD)/libprof.so $(DESTDIR)$(PREFIX)/lib/libprof/libprof.so
	sed -e 's|^PROF_LIBDIR_DEFAULT=.*|PROF_LIBDIR_DEFAULT="$(PREFIX)/lib/libprof"|' \
	    -e 's|^PROF_BINDIR_DEFAULT=.*|PROF_BINDIR_DEFAULT="$(PREFIX)/bin"|' \
	    scripts/prof-run > $(DESTDIR)$(PREFIX)/bin/prof-run
	chmod 0755 $(DESTDIR)$(PREFIX)/bin/prof-run

# ---- the portable bundle (issue 17) -----------------------------------------------------------
# prof, prof-run, libprof.so and their non-glibc libraries in one relocatable directory plus a
# tarball. The bundle's binaries are linked again with DT_RPATH (not RUNPATH) $ORIGIN paths:
# DT_RPATH also serves the libraries' own dependencies (libdw's compressors, libunwind's lzma).
BUNDLE_NAME := libprof-$(VERSION)-x86_64
BUNDLE      ?= $(BUILD)/bundle/$(BUNDLE_NAME)
BUNDLE_LINK := $(BUILD)/bundle-link

$(BUNDLE_LINK)/prof: $(BUILD)/obj/analyzer/main.o $(ANALYZER_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(ANALYZER_LIBS) -Wl,--disable-new-dtags,-rpath,'$$ORIGIN/../lib/libprof'
$(BUNDLE_LINK)/libprof.so: $(PRELOAD_OBJ)
	@mkdir -p $(dir $@)
	$(CC) -shared -o $@ $^ $(PRELOAD_LIBS) -Wl,--disable-new-dtags,-rpath,'$$ORIGIN'

bundle: all $(BUNDLE_LINK)/prof $(BUNDLE_LINK)/libprof.so
	scripts/make-bundle $(BUNDLE_LINK)/prof $(BUNDLE_LINK)/libprof.so $(BUILD)/bundle/$(BUNDLE_NAME)

# Unpacks the tarball into an empty directory and profiles a program from there alone.
test-bundle: bundle
	tests/bundle.sh $(BUILD)/bundle/$(BUNDLE_NAME).tar.gz

clean:
	rm -rf build build-asan build-tsan build-fuzz

# ---- CUDA (issue 5) ---------------------------------------------------------------------------
# The fake driver and the driver-API test programs need no toolkit; the runtime-API, NVTX and
# CUPTI tests are built only where /usr/local/cuda (or CUDA_HOME) has nvcc and the headers.
# `make e2e` builds them all first; tests/e2e/test_cuda.c skips what is not there.
CUDA_HOME ?= /usr/local/cuda
NVCC      := $(wildcard $(CUDA_HOME)/bin/nvcc)
CUDA_INC  := $(wildcard $(CUDA_HOME)/include/cupti_activity.h)
CUDA_OUT  := $(BUILD)/cuda
CUDA_TARGETS := $(CUDA_OUT)/libcuda.so.1 $(CUDA_OUT)/drv_test $(CUDA_OUT)/drv_direct \
		$(CUDA_OUT)/dlsym_next
ifneq ($(CUDA_INC),)
CUDA_TARGETS += $(CUDA_OUT)/nvtx_test $(CUDA_OUT)/cupti_convert_test
endif
ifneq ($(NVCC),)
CUDA_TARGETS += $(CUDA_OUT)/rt_shared $(CUDA_OUT)/rt_static
endif

.PHONY: cuda-progs gpu-check bench-cuda
cuda-progs: $(CUDA_TARGETS)
e2e: cuda-progs

# -Bsymbolic: the fake's calls to its own functions never reach the preloaded hooks.
$(CUDA_OUT)/libcuda.so.1: tests/cuda/fake_cuda.c
	@mkdir -p $(dir $@)
	$(CC) -O2 -g $(WARN) -fPIC -shared -fvisibility=hidden -pthread -Wl,-Bsymbolic \
		-Wl,-soname,libcuda.so.1 $< -o $@
$(CUDA_OUT)/drv_test: tests/cuda/drv_test.c
	@mkdir -p $(dir $@)
	$(CC) -g -O0 $(WARN) $< -o $@ -ldl
$(CUDA_OUT)/dlsym_next: tests/cuda/dlsym_next.c
	@mkdir -p $(dir $@)
	$(CC) -g -O0 $(WARN) $< -o $@ -ldl
$(CUDA_OUT)/drv_direct: tests/cuda/drv_test.c $(CUDA_OUT)/libcuda.so.1
	$(CC) -g -O0 $(WARN) -DLINKED $< -o $@ -L$(CUDA_OUT) -l:libcuda.so.1 -Wl,-rpath,'$$ORIGIN' -ldl
$(CUDA_OUT)/nvtx_test: tests/cuda/nvtx_test.c
	@mkdir -p $(dir $@)
	$(CC) -g -O0 -Wall -Wextra -I$(CUDA_HOME)/include $< -o $@ -ldl
$(CUDA_OUT)/cupti_convert_test: tests/cuda/cupti_convert_test.c preload/cupti_convert.c preload/cupti_cbids.h
	@mkdir -p $(dir $@)
	$(CC) -g -O0 $(WARN) -std=gnu11 -D_GNU_SOURCE -Ishared -iquote preload -I$(CUDA_HOME)/include \
		-DCUPTI_INC='"$(CUDA_HOME)/include"' tests/cuda/cupti_convert_test.c preload/cupti_convert.c -o $@ -ldl
$(CUDA_OUT)/rt_shared: tests/cuda/rt_test.cu
	@mkdir -p $(dir $@)
	$(NVCC) -cudart shared -o $@ $<
$(CUDA_OUT)/rt_static: tests/cuda/rt_test.cu
	@mkdir -p $(dir $@)
	$(NVCC) -o $@ $<

# The CUDA path on a real GPU, from the bundle alone (no build there: the GPU machines have a
# toolkit and PyTorch but no -dev packages). Carry $(BUNDLE) there and run `make gpu-check`;
# GPU_CHECK_ARGS passes options (--out DIR, --no-torch, --iters N). Skips what needs a GPU
# where nvidia-smi fails.
gpu-check:
	@test -x $(BUNDLE)/bin/prof || { echo "gpu-check: no bundle at $(BUNDLE): run make bundle first"; exit 1; }
	tests/gpu/gpu-check --bundle $(BUNDLE) $(GPU_CHECK_ARGS)

bench-cuda: all $(CUDA_OUT)/libcuda.so.1
	bench/cuda.sh

bench-cpu: all
	bench/cpu.sh
