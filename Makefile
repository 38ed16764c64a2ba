# fuselab - build, run, test, bench, install.
#
#   make            build build/fuselab (installs missing Debian packages first)
#   make run        build, then open fuselab on the built-in sample
#   make test       layer check, unit + command-line tests, and beside them
#                   the same under ASan+UBSan
#   make check-layers  the include rules between engine/, views/, exporters/
#   make test SAN=1 only the sanitizer pass
#   make install PREFIX=/usr/local
#   make bench      every benchmark, fuselab's kernels beside oneDNN (installs
#                   libdnnl-dev, needed by nothing else), into build/bench/
#                   and bench/RESULTS.md
#   make soak [SOAK_SEEDS=N] [SOAK_OPS=M]  random graphs (fuselab gen) through
#                   every strategy against the interpreter, in parallel;
#                   build/soak/summary.txt
#   make memcheck   the batch pipeline under valgrind's memcheck, on every
#                   sample and a few ONNX models (installs valgrind), into
#                   build/memcheck.txt
#   make zoo [ZOO_LIMIT=S] [ZOO_MODELS=a,b]  real architectures (ResNet-50,
#                   ViT-B/16, BERT-base, GPT-2, Whisper-tiny's encoder, ...)
#                   exported by PyTorch, through import, every strategy
#                   against ONNX Runtime's outputs and export; installs
#                   torch & co. into build/zoo/venv (several GB, never in
#                   make test); the table goes to build/zoo/table.txt
#   make bench-cuda on a GPU machine: the ladder with --target cuda beside a
#                   device-to-device copy, into bench/RESULTS-cuda.md (says
#                   so and does nothing without nvcc or a GPU)
#
# Objects go to build/<variant>/ so the plain and sanitizer builds coexist.

VERSION  := 0.1.0
NPROC    := $(shell nproc 2>/dev/null || echo 2)
PREFIX   ?= /usr/local
CC       ?= cc
SAN      ?= 0

PKGS     := isl libcgraph libgvc libcjson ncursesw libprotobuf-c
DEPS_OK  := $(shell scripts/install-deps.sh >&2 && echo yes)
ifneq ($(DEPS_OK),yes)
$(error missing packages: see the message above)
endif
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS))
PKG_LIBS   := $(shell pkg-config --libs $(PKGS))
TEST_LIBS  := $(shell pkg-config --libs cmocka)

WARN     := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes
CFLAGS   ?= -O2 -g
ALL_CFLAGS = -std=c11 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE $(WARN) \
	     $(CFLAGS) $(ENGINE_DIRS:%=-I%) -Iapp -Iviews -Iexporters -I$(B)/gen -DFL_VERSION='"$(VERSION)"' $(PKG_CFLAGS) -MMD -MP

# The sanitizer build also checks the engine state after every pass
# (FL_CHECK_STATE: engine/check.c).
# SAN=fuzz: the libFuzzer build (clang; make fuzz), with ASan and UBSan.
ifeq ($(SAN),fuzz)
CC       := clang
VARIANT  := fuzz
ALL_CFLAGS += -fsanitize=fuzzer-no-link,address,undefined \
	      -fno-omit-frame-pointer -fno-sanitize-recover=undefined -O1
LDSAN    := -fsanitize=address,undefined
else ifeq ($(SAN),1)
VARIANT  := san
ALL_CFLAGS += -fsanitize=address,undefined -fno-omit-frame-pointer -DFL_CHECK_STATE \
	      -fno-sanitize-recover=undefined -O1
LDSAN    := -fsanitize=address,undefined
else
VARIANT  := plain
LDSAN    :=
endif
B        := build/$(VARIANT)

# The engine's folders follow the pipeline (DESIGN 2); every .c in them is
# part of the library.
ENGINE_DIRS := engine engine/ir engine/preprocess engine/partition \
	       engine/layer1 engine/backend engine/run engine/stitch
ENGINE_SRC := $(sort $(foreach d,$(ENGINE_DIRS),$(wildcard $(d)/*.c)))
EXPORT_SRC := $(sort $(wildcard exporters/*.c))
# The explorer (app/ without main.c, and views/) is a library too, so
# that tests and benchmarks drive it headless.
UI_SRC     := $(sort $(filter-out app/main.c,$(wildcard app/*.c)) $(wildcard views/*.c))
TEST_SRC   := $(sort $(wildcard tests/*.c))

ENGINE_OBJ := $(ENGINE_SRC:%.c=$(B)/%.o)
UI_OBJ     := $(UI_SRC:%.c=$(B)/%.o) $(B)/gen/builtin_sample.o
APP_OBJ    := $(B)/app/main.o $(UI_OBJ)
TEST_OBJ   := $(TEST_SRC:%.c=$(B)/%.o)
EXPORT_OBJ := $(EXPORT_SRC:%.c=$(B)/%.o)
# make bench's harness (bench_peers without oneDNN), tested by the suite
BENCH_LIB_OBJ := $(B)/bench/genprog.o $(B)/bench/interleave.o \
		 $(B)/bench/peer_shapes.o $(B)/bench/ort_peer.o

BIN        := $(B)/fuselab
TEST_BIN   := $(B)/fuselab-tests
DEFAULT_SAMPLE := samples/bert_encoder.json

.PHONY: all run test test-plain test-san check-layers install uninstall clean deps bench bench-deps bench-cuda conformance fuzz fuzz-deps soak memcheck memcheck-deps zoo
all: $(BIN) build/fuselab

build/fuselab: $(BIN)
	@ln -sf $(VARIANT)/fuselab $@

$(BIN): $(B)/app/main.o $(B)/libfuselab_ui.a $(B)/libfuselab.a
	$(CC) $(LDSAN) -o $@ $^ $(PKG_LIBS) -lm -ldl -lpthread

$(B)/libfuselab_ui.a: $(UI_OBJ)
	@rm -f $@
	ar rcs $@ $^

# The runtimes are C that goes into generated programs: the contraction
# micro-kernel (engine/backend/contract.c) and the vectorisable tanh and
# erf (print_c.c), the 16-bit float conversions (half_rt.c, which the
# interpreter includes too).  Each is embedded as a string, and compiled here on its
# own, with every warning an error, for the vector ISA of this machine
# and for plain C, so that a mistake in it fails the build, not a run.
RUNTIMES := contract_rt math_rt half_rt
ENGINE_OBJ += $(RUNTIMES:%=$(B)/gen/%.o)

$(B)/gen/%_rt.c: engine/backend/runtime/%_rt.c scripts/embed.sh
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -O2 -march=native -Wall -Wextra -Werror -Wno-unused-function -fsyntax-only $<
	$(CC) -std=gnu11 -O2 -Wall -Wextra -Werror -Wno-unused-function -fsyntax-only -U__AVX512F__ -U__AVX2__ $<
	scripts/embed.sh fl_$*_rt_text $< > $@.tmp && mv $@.tmp $@

.PRECIOUS: $(B)/gen/%_rt.c

$(B)/gen/%_rt.o: $(B)/gen/%_rt.c
	$(CC) $(ALL_CFLAGS) -c -o $@ $<

# ONNX (DESIGN 9): the C bindings of the onnx.proto that Debian's
# libonnx-dev installs, generated by protoc-c (protobuf-c-compiler) into
# build/<variant>/gen/ and compiled into the library; nothing of it is
# vendored.  Every object waits for the header (order-only), as the
# first build cannot know yet which sources include it.
ONNX_PROTO := /usr/include/onnx/onnx.proto
ENGINE_OBJ += $(B)/gen/onnx.pb-c.o

$(B)/gen/onnx.pb-c.c: $(ONNX_PROTO)
	@mkdir -p $(dir $@)
	cp $(ONNX_PROTO) $(B)/gen/onnx.proto
	cd $(B)/gen && protoc-c --c_out=. onnx.proto

$(B)/gen/onnx.pb-c.h: $(B)/gen/onnx.pb-c.c

$(B)/gen/onnx.pb-c.o: $(B)/gen/onnx.pb-c.c
	$(CC) $(ALL_CFLAGS) -c -o $@ $<

$(B)/libfuselab.a: $(ENGINE_OBJ) $(EXPORT_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(B)/%.o: %.c | $(B)/gen/onnx.pb-c.h
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -c -o $@ $<

$(B)/gen/builtin_sample.c: $(DEFAULT_SAMPLE) scripts/embed.sh
	@mkdir -p $(dir $@)
	scripts/embed.sh fl_builtin_sample_json $< > $@.tmp && mv $@.tmp $@

$(B)/gen/builtin_sample.o: $(B)/gen/builtin_sample.c
	$(CC) $(ALL_CFLAGS) -c -o $@ $<

$(TEST_BIN): $(TEST_OBJ) $(BENCH_LIB_OBJ) $(B)/libfuselab_ui.a $(B)/libfuselab.a
	$(CC) $(LDSAN) -o $@ $^ $(PKG_LIBS) $(TEST_LIBS) -lm -ldl -lpthread

run: all
	$(BIN)

# The plain pass first, then the sanitizer pass; the suite's own summary
# line (cmocka's) is the last thing printed.
# The layer check comes first (order-only, so that it is done before any
# test binary runs); the nested sanitizer make is told it was done.
# The sanitizer build also checks the engine state after every pass
# (FL_CHECK_STATE: engine/check.c).
# Both passes share one build cache (engine/run/build_cache.c): they
# compile the same generated C, and so do many tests, and compiling is
# most of the suite's time.  Each make test starts it empty, so every
# program is still compiled at least once per run.
BUILD_CACHE := build/build-cache

ifeq ($(SAN),1)
test:
	@rm -rf $(BUILD_CACHE)
	@$(MAKE) --no-print-directory test-san
else
# Both builds first, each with every core; then the two passes side by
# side (each test binary runs its tests one at a time, so two binaries
# keep two cores busy), each into its own log, printed plain first: the
# sanitizer pass's summary line is the last thing printed.
test:
	@$(MAKE) --no-print-directory -j$(NPROC) $(BIN) $(TEST_BIN)
	@$(MAKE) --no-print-directory -j$(NPROC) SAN=1 build/san/fuselab \
	  build/san/fuselab-tests
	@$(MAKE) --no-print-directory check-layers
	@rm -rf $(BUILD_CACHE)
	@echo "== running the plain and the sanitizer pass side by side" \
	  "(logs: build/test-plain.log, build/test-san.log)"
	@{ $(MAKE) --no-print-directory test-plain LAYERS_CHECKED=1 \
	    > build/test-plain.log 2>&1; echo $$? > build/test-plain.status; } & \
	 $(MAKE) --no-print-directory test-san SAN=1 LAYERS_CHECKED=1 \
	    > build/test-san.log 2>&1; san=$$?; wait; \
	 cat build/test-plain.log build/test-san.log; \
	 test "$$(cat build/test-plain.status)" = 0 && test $$san = 0
endif

check-layers:
	@scripts/check-layers.sh

# make fuzz [FUZZ_SECONDS=N] [FUZZ_TARGETS="..."]: each libFuzzer harness
# of fuzz/ for N seconds (default 60), built with clang, ASan and UBSan
# into build/fuzz/ (needs clang and libclang-rt-14-dev: install-deps.sh
# --fuzz).  Corpora start from the seeds scripts/fuzz.sh gathers and
# grow in build/fuzz/corpus/<harness>/; a crashing input is written to
# build/fuzz/crashes/<harness>/ and make fuzz fails.
FUZZ_SECONDS ?= 60
FUZZ_TARGETS ?= $(basename $(notdir $(wildcard fuzz/*.c)))

fuzz-deps:
	@scripts/install-deps.sh --fuzz

fuzz: | fuzz-deps
	@$(MAKE) --no-print-directory -j$(NPROC) SAN=fuzz \
	  $(FUZZ_TARGETS:%=build/fuzz/fuzz_%)
	@scripts/fuzz.sh $(FUZZ_SECONDS) $(FUZZ_TARGETS)

.SECONDARY: $(FUZZ_TARGETS:%=build/fuzz/fuzz/%.o)

build/fuzz/fuzz_%: build/fuzz/fuzz/%.o build/fuzz/libfuselab_ui.a build/fuzz/libfuselab.a
	$(CC) -fsanitize=fuzzer,address,undefined -o $@ $^ $(PKG_LIBS) -lm -ldl -lpthread

# ONNX's own backend tests (libonnx-testdata) through the importer, the
# interpreter (--expect) and every strategy's kernels (--run); the table
# also goes to build/conformance.txt.  make test runs a fixed subset
# (tests/conformance-subset.txt).
conformance: $(BIN)
	@scripts/conformance.sh -o build/conformance.txt $(BIN)

# make zoo: scripts/zoo-setup.sh makes build/zoo/venv (torch, torchvision,
# transformers, onnx, onnxruntime from PyPI), scripts/zoo.py exports the
# models with ONNX Runtime's outputs into build/zoo/<name>/, and
# scripts/zoo.sh takes each through fuselab, ZOO_LIMIT seconds per step
# (default 1800), and prints the table (build/zoo/table.txt).
ZOO_LIMIT  ?= 1800
ZOO_MODELS ?=
zoo: $(BIN)
	@OMP_WAIT_POLICY=passive scripts/zoo.sh -t $(ZOO_LIMIT) \
	  $(if $(ZOO_MODELS),-l $(ZOO_MODELS)) $(BIN)

# Differential testing on many random graphs (fuselab gen): every
# strategy's kernels against the interpreter, some seeds with the stencil
# rules, a tiny scheduler budget or --fuse/--never-fuse pairs; the summary
# goes to build/soak/summary.txt.  SOAK_SEEDS seeds (default 300) of
# SOAK_OPS ops (default 16).
SOAK_SEEDS ?= 300
SOAK_OPS   ?= 16
soak: $(BIN)
	@SOAK_SEEDS=$(SOAK_SEEDS) SOAK_OPS=$(SOAK_OPS) \
	  FUSELAB_BIN=$(abspath $(BIN)) scripts/soak.sh

# make memcheck: the batch pipeline under valgrind's memcheck, always on
# the plain build (-O2 -g), whatever SAN says: valgrind and ASan do not
# mix.  Every sample and a few ONNX models through the interpreter, every
# strategy's codegen and the exports, and --run on small graphs
# (scripts/memcheck.sh says which); a run with an error or a leak fails.
# valgrind (and GNU time) come from install-deps.sh --memcheck.
memcheck-deps:
	@scripts/install-deps.sh --memcheck

memcheck: | memcheck-deps
	@$(MAKE) --no-print-directory -j$(NPROC) SAN=0 build/plain/fuselab
	@scripts/memcheck.sh -o build/memcheck.txt build/plain/fuselab

# OMP_WAIT_POLICY=passive: the generated programs' OpenMP threads sleep
# at a barrier instead of spinning.  The two passes run side by side on
# as many cores as a program has threads, so a spinning thread takes the
# core the other pass (or its own partner thread) needs; the tests time
# nothing they assert on.  Each test's wall time goes into
# build/test-<variant>.times (FUSELAB_TEST_TIMES, tests/test_main.c), to
# see where the suite's time goes: sort -rn build/test-san.times | head
TEST_TIMES = build/test-$(VARIANT).times

test-plain test-san: $(BIN) $(TEST_BIN) | $(if $(LAYERS_CHECKED),,check-layers)
	@echo "== $(VARIANT) build: running $(TEST_BIN)"
	@rm -f $(TEST_TIMES)
	@FUSELAB_BIN=$(abspath $(BIN)) FUSELAB_SAMPLES=$(abspath samples) \
	  FUSELAB_TEST_TIMES=$(abspath $(TEST_TIMES)) \
	  FUSELAB_ROOT=$(abspath .) \
	  FUSELAB_BUILD_CACHE=$(abspath $(BUILD_CACHE)) \
	  OMP_WAIT_POLICY=passive \
	  ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 \
	  LSAN_OPTIONS=suppressions=$(abspath scripts/lsan.supp):print_suppressions=0 \
	  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  $(TEST_BIN)

BENCH_BIN := $(B)/bench_partition

$(BENCH_BIN): $(B)/bench/bench_partition.o $(B)/bench/synth.o $(B)/libfuselab.a
	$(CC) $(LDSAN) -o $@ $^ $(PKG_LIBS) -lm -ldl -lpthread

STEPS_BIN := $(B)/bench_steps

$(STEPS_BIN): $(B)/bench/bench_steps.o $(B)/bench/synth.o $(B)/libfuselab.a
	$(CC) $(LDSAN) -o $@ $^ $(PKG_LIBS) -lm -ldl -lpthread

L1_BIN := $(B)/bench_layer1

$(L1_BIN): $(B)/bench/bench_layer1.o $(B)/bench/synth.o $(B)/libfuselab.a
	$(CC) $(LDSAN) -o $@ $^ $(PKG_LIBS) -lm -ldl -lpthread

EXPLORER_BENCH_BIN := $(B)/bench_explorer

$(EXPLORER_BENCH_BIN): $(B)/bench/bench_explorer.o $(B)/bench/synth.o $(B)/libfuselab_ui.a $(B)/libfuselab.a
	$(CC) $(LDSAN) -o $@ $^ $(PKG_LIBS) -lm -ldl -lpthread

STREAM_BIN := $(B)/stream
# The probe gets the flags the runner gives generated code.
STREAM_FLAGS := -std=c11 -O3 -march=native -fopenmp -falign-loops=64

$(STREAM_BIN): bench/stream.c bench/stream.h
	@mkdir -p $(dir $@)
	$(CC) $(STREAM_FLAGS) -DSTREAM_MAIN -o $@ $<

$(B)/bench/stream_probe.o: bench/stream.c bench/stream.h
	@mkdir -p $(dir $@)
	$(CC) $(STREAM_FLAGS) -c -o $@ $<

# The peers benchmark: generated kernels beside oneDNN (libdnnl-dev, a
# benchmark-only dependency that `scripts/install-deps.sh --bench`
# installs; make, make test and CI never need it).  Its harness (the
# generated program loaded in-process, interleaved timing, the samples'
# shapes) is also linked into the test binary, which needs no oneDNN.
PEERS_BIN := $(B)/bench_peers
PEERS_OBJ := $(B)/bench/bench_peers.o $(B)/bench/dnnl_peer.o

bench-deps:
	@scripts/install-deps.sh --bench

$(PEERS_OBJ): ALL_CFLAGS += -fopenmp -Ibench
$(PEERS_OBJ): | bench-deps
$(BENCH_LIB_OBJ): ALL_CFLAGS += -Ibench

$(PEERS_BIN): $(PEERS_OBJ) $(BENCH_LIB_OBJ) $(B)/bench/stream_probe.o $(B)/libfuselab.a
	$(CC) $(LDSAN) -fopenmp -o $@ $^ $(PKG_LIBS) -ldnnl -lm -ldl -lpthread

# Speed lives here, not in timed tests: each benchmark prints what it
# measured and on which machine, with its baseline from the same run,
# into build/bench/*.txt; bench/results.sh then writes bench/RESULTS.md
# from them.  bench_peers (oneDNN beside the generated kernels) comes
# first, FL_BENCH_PEERS_BUDGET seconds per comparison (default 1.5).
bench: $(BENCH_BIN) $(STEPS_BIN) $(L1_BIN) $(EXPLORER_BENCH_BIN) $(BIN) $(STREAM_BIN) $(PEERS_BIN)
	@mkdir -p build/bench
	@{ echo "date: $$(date -u +%Y-%m-%dT%H:%M:%SZ)"; \
	   $(PEERS_BIN) samples; } | tee build/bench/peers.txt
	@{ echo "machine: $$(uname -m), $$(nproc) cores, $$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"; \
	   echo "date: $$(date -u +%Y-%m-%dT%H:%M:%SZ)"; \
	   $(BENCH_BIN); } | tee build/bench/partition.txt
	@{ echo "machine: $$(uname -m), $$(nproc) cores, $$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"; \
	   echo "date: $$(date -u +%Y-%m-%dT%H:%M:%SZ)"; \
	   $(STEPS_BIN) samples; } | tee build/bench/steps.txt
	@{ echo "machine: $$(uname -m), $$(nproc) cores, $$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"; \
	   echo "date: $$(date -u +%Y-%m-%dT%H:%M:%SZ)"; \
	   $(L1_BIN); } | tee build/bench/layer1.txt
	@{ echo "machine: $$(uname -m), $$(nproc) cores, $$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"; \
	   echo "date: $$(date -u +%Y-%m-%dT%H:%M:%SZ)"; \
	   $(EXPLORER_BENCH_BIN) samples; } | tee build/bench/explorer.txt
	@{ echo "machine: $$(uname -m), $$(nproc) cores, $$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"; \
	   echo "date: $$(date -u +%Y-%m-%dT%H:%M:%SZ)"; \
	   bench/bench_kernels.sh $(BIN) $(STREAM_BIN); } | tee build/bench/kernels.txt
	@bench/results.sh build/bench > bench/RESULTS.md
	@echo "wrote bench/RESULTS.md"

bench-cuda: $(BIN)
	@bench/cuda/bench_cuda.sh $(BIN)

install: $(BIN)
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/fuselab/samples/rules \
		$(DESTDIR)$(PREFIX)/share/man/man1
	install -m 755 $(BIN) $(DESTDIR)$(PREFIX)/bin/fuselab
	install -m 644 samples/*.json $(DESTDIR)$(PREFIX)/share/fuselab/samples/
	if ls samples/rules/*.json >/dev/null 2>&1; then \
	  install -m 644 samples/rules/*.json $(DESTDIR)$(PREFIX)/share/fuselab/samples/rules/; fi
	sed 's/@VERSION@/$(VERSION)/' man/fuselab.1 > $(DESTDIR)$(PREFIX)/share/man/man1/fuselab.1
	chmod 644 $(DESTDIR)$(PREFIX)/share/man/man1/fuselab.1

uninstall:
	rm -f $(DESTDIR)$(PREFIX)/bin/fuselab $(DESTDIR)$(PREFIX)/share/man/man1/fuselab.1
	rm -rf $(DESTDIR)$(PREFIX)/share/fuselab

deps:
	@scripts/install-deps.sh

clean:
	rm -rf build

-include $(B)/bench/bench_partition.d $(B)/bench/bench_steps.d $(B)/bench/synth.d \
	$(B)/bench/bench_layer1.d $(B)/bench/bench_explorer.d \
	$(PEERS_OBJ:.o=.d) $(BENCH_LIB_OBJ:.o=.d)
-include $(ENGINE_OBJ:.o=.d) $(APP_OBJ:.o=.d) $(TEST_OBJ:.o=.d) $(EXPORT_OBJ:.o=.d)
