# vkml: `make test` builds everything and runs every test; `make demo` shows it training.
# Both install what is missing first (Debian packages with apt-get, Python packages with pip
# into .venv).

JOBS    ?= $(shell nproc)
BUILD   ?= build
ASAN    ?= build-asan
PYBUILD := $(BUILD)
VENV    ?= .venv
PY      := $(VENV)/bin/python
CMAKE   ?= cmake
GEN     := $(shell command -v ninja >/dev/null 2>&1 && echo "-G Ninja")
LAUNCH  := $(shell command -v ccache >/dev/null 2>&1 && echo "-DCMAKE_CXX_COMPILER_LAUNCHER=ccache")
# The Vulkan backend's build and tests: headers, glslc and spirv-val, and lavapipe (Mesa's Vulkan
# on the CPU) with the validation layers, so that its tests run (never skip) on machines without a
# GPU; the library itself opens libvulkan at run time.
# Open MPI for vk.distributed (#17): its tests run 2 and 3 ranks on this machine under mpirun.
# qemu-user: test-cpp runs a subset of the C++ suite on emulated CPUs without AVX-512 and without AVX.
# oneDNN (libdnnl-dev): bfloat16 matrix products on AVX512-BF16 / AMX hardware (#19 item 3).
APT_PKGS := g++ libgtest-dev libopenblas-dev pkg-config python3-venv libvulkan-dev glslc \
            spirv-tools mesa-vulkan-drivers vulkan-validationlayers openmpi-bin libopenmpi-dev \
            qemu-user libdnnl-dev
# The Vulkan tests fail (instead of skipping) without a device, and run under the validation layers.
VULKAN_TEST_ENV := VKML_REQUIRE_VULKAN=1 VKML_VULKAN_VALIDATE=1
# The test extras of pyproject.toml. torch is the tests' oracle, never a runtime dependency.
PY_DEPS := "nanobind>=2.0" "scikit-build-core>=0.10" scipy-openblas32 numpy pytest pytest-xdist \
           torch==2.13.0 scikit-learn safetensors tqdm matplotlib
# The Python suites run on every core (pytest-xdist): 367 s -> 245 s on 2 cores (Zen 3, quiet).
# At most 8 workers: each imports torch and vkml (a worker reached 1.3 GB resident here).
PYTEST_WORKERS ?= $(shell n=$(JOBS); [ $$n -gt 8 ] && n=8; echo $$n)

.PHONY: all deps venv build test test-cpp test-asan test-tsan test-python python python-asan test-python-asan \
        demo demo-cpp docs compat format clean example-install fuzz fuzz-smoke bench bench-vulkan

all: build

deps:
	@missing=""; for p in $(APT_PKGS); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then echo "installing:$$missing"; \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing) >/dev/null; fi
	@command -v $(CMAKE) >/dev/null 2>&1 || python3 -m pip install -q cmake ninja

# The venv sees the system's site-packages, so a torch already installed there is reused.
$(VENV)/.deps: pyproject.toml
	@test -x $(PY) || python3 -m venv --system-site-packages $(VENV)
	$(PY) -m pip install -q $(PY_DEPS)
	@touch $@

venv: deps $(VENV)/.deps

# One Release build holds the library, the C++ tests and examples, and the Python extension
# (build/python/vkml mirrors the installed package): CI compiles every build from nothing on two
# cores, and a second copy of the library (and shaders) for the extension alone cost it ~4 minutes.
build: venv
	@$(CMAKE) -S . -B $(BUILD) $(GEN) $(LAUNCH) -DCMAKE_BUILD_TYPE=Release -DVKML_WERROR=ON \
	  -DVKML_BUILD_TESTS=ON -DVKML_BUILD_EXAMPLES=ON -DVKML_DISTRIBUTED=ON -DVKML_BUILD_PYTHON=ON \
	  -DPython_EXECUTABLE=$(abspath $(PY)) -DVKML_BLAS=scipy-openblas32 >/dev/null
	$(CMAKE) --build $(BUILD) -j $(JOBS)

# The GoogleTest suite in one process (17 s; one process per test under ctest took 60 s, mostly
# process and Vulkan-instance start-up), then ctest's other tests (SPIR-V validation, the staged
# Vulkan run, MPI ranks, the docs and layer checks, the ISA check of the kernels' copies).
# The Release build holds the CPU kernels three times, chosen at run time (x86-64, -v3, -v4;
# cmake/vkml_cpu_dispatch.cmake): the suite runs again on the generic copy (7 s), and the op sweep
# on CPUs emulated by qemu-x86_64, a Haswell (AVX2, no AVX-512: the avx2 copy) and a Nehalem
# (no AVX: the generic copy), where an instruction beyond the CPU is SIGILL (25 s here; the whole
# CPU suite would take ~4 min under emulation). Haswell's features TCG lacks are removed (quiet).
QEMU_HASWELL := qemu-x86_64 -cpu Haswell-noTSX,-pcid,-x2apic,-tsc-deadline,-invpcid
QEMU_NEHALEM := qemu-x86_64 -cpu Nehalem
QEMU_SUBSET  := --gtest_brief=1 --gtest_filter='CpuCapability.*:AllOps/OpSweep.*'
test-cpp: build
	$(VULKAN_TEST_ENV) $(BUILD)/vkml_tests --gtest_brief=1
	VKML_CPU_CAPABILITY=default $(BUILD)/vkml_tests --gtest_brief=1 --gtest_filter='-*Vulkan*'
	VKML_EXPECT_CPU_CAPABILITY=AVX2 $(QEMU_HASWELL) $(BUILD)/vkml_tests $(QEMU_SUBSET)
	VKML_EXPECT_CPU_CAPABILITY=DEFAULT $(QEMU_NEHALEM) $(BUILD)/vkml_tests $(QEMU_SUBSET)
	cd $(BUILD) && $(VULKAN_TEST_ENV) ctest -j $(JOBS) --output-on-failure --timeout 600 -LE gtest

# The tests of concurrent use under ThreadSanitizer (their own binary, vkml_thread_tests): the
# thread pool (every kernel's parallel split), backward from several threads into shared tensors,
# hooks registered during backward, checkpoint. (Fork.* is left out: ThreadSanitizer does not
# support threads started after a multithreaded fork, which that test does on purpose.) Warnings
# are not errors here: GCC 12 reports false out-of-bounds memcpy in libstdc++ inlined into
# instrumented code; the Release and ASan builds keep -Werror for every file. None of these tests
# opens a Vulkan device, so this build leaves the backend out (CI compiles each build from nothing:
# that is 25 C++ files and 140 shader variants less).
TSAN ?= build-tsan
test-tsan: deps
	@$(CMAKE) -S . -B $(TSAN) $(GEN) $(LAUNCH) $(SAN_FLAGS) -DVKML_WERROR=OFF -DVKML_TSAN=ON \
	  -DVKML_VULKAN=OFF >/dev/null
	$(CMAKE) --build $(TSAN) -j $(JOBS) --target vkml_thread_tests
	TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
	  $(TSAN)/vkml_thread_tests --gtest_brief=1 --gtest_filter='-Fork.*'

# The C++ suite again under AddressSanitizer + UndefinedBehaviorSanitizer, leak checks on.
# The sanitizer builds link the system's OpenBLAS and the Release build the scipy-openblas32
# wheel's (what `pip install .` falls back to without apt; `make bench` measures it), so every
# `make test` runs the C++ and Python suites against both. -Og -g1: CI builds them from nothing,
# and GCC's -Og compiles the template-heavy kernels in less than half the time of -O1 (under ASan
# on 2 Zen 3 cores: backend/cpu/elementwise.cpp 168 s at -O1, 77 s at -Og, 46 s at -O0; the whole
# test-asan stage 604 s at -O1, 361 s at -Og, 469 s at -O0, whose tests ran 3x slower), and the
# tests run as fast as at -O1 (46 s against 54 s). A report still names file and line.
SAN_OPT = "-Og -g1 -DNDEBUG"
SAN_FLAGS = -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO=$(SAN_OPT) \
  -DVKML_NATIVE=OFF -DVKML_BUILD_EXAMPLES=OFF
ASAN_CONFIG = $(CMAKE) -S . -B $(ASAN) $(GEN) $(LAUNCH) $(SAN_FLAGS) -DVKML_WERROR=ON \
  -DVKML_SANITIZE=ON -DVKML_BLAS=system
test-asan: deps
	@$(ASAN_CONFIG) >/dev/null
	$(CMAKE) --build $(ASAN) -j $(JOBS) --target vkml_tests
	$(VULKAN_TEST_ENV) ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  LSAN_OPTIONS=suppressions=$(CURDIR)/tests/lsan.supp \
	  $(ASAN)/vkml_tests --gtest_brief=1

# The Python extension: the Release build's (`make python` is `make build`).
python: build

# Then the op sweep's float32 cases on the Vulkan device as one without float64 would run them
# (VKML_VULKAN_NO_FLOAT64: the float32-alone shader variants), forward and derivatives vs torch.
test-python: python
	$(VULKAN_TEST_ENV) PYTHONPATH=$(CURDIR)/$(PYBUILD)/python $(PY) -m pytest -q --durations=10 \
	  -n $(PYTEST_WORKERS) tests/python
	$(VULKAN_TEST_ENV) VKML_VULKAN_NO_FLOAT64=1 PYTHONPATH=$(CURDIR)/$(PYBUILD)/python $(PY) -m pytest \
	  -q -p no:cacheprovider tests/python/test_ops_vs_torch.py -k "vulkan and not float64 and not mixed"

# The Python suite again against an ASan+UBSan build of the extension, built in $(ASAN) next to
# test-asan's library (compiled once). The interpreter is not instrumented, so the ASan runtime is
# preloaded; leak checks stay off here (CPython and torch keep memory alive at exit on purpose)
# and on in test-asan. The kill-and-resume and 10,000-step tests (subprocess trainings of minutes
# under ASan, marked slow) run in test-python only, and so do the op-table sweeps (marked sweep:
# the same kernels run under ASan in test-asan's C++ sweep, every binding in test_binding_sweep)
# and the DataLoader tests that fork workers (marked fork): GCC 12's libasan does not lock its
# allocator around fork() (`nm -D` shows a vfork interceptor only, and it registers no atfork
# handler), so a child forked while another thread (a queue's feeder thread) is inside ASan's
# allocator can wait forever on a lock no thread of it holds. CI hung twice in this stage at
# test_data.py's last multi-worker tests (at 16%, and at 22% after a fix of vkml's own), as TSan's
# Fork.* tests are left out of test-tsan for the same kind of reason; test-python runs them.
# allocator_may_return_null: a 10^15-element tensor must reach vkml's MemoryError, not ASan's abort.
# max_allocation_size_mb: one allocation past 6 GiB fails (MemoryError), as the 6 GiB address-space
# limit the fuzzer's workers set in the release run (ASan's shadow memory rules that limit out):
# without it the fuzzer's huge-size programs allocate and poison tens of GiB and are OOM-killed.
# libstdc++ is preloaded too: ASan's __cxa_throw interceptor must find the real one at startup
# (python itself does not link libstdc++), or the first C++ exception aborts.
ASAN_RT = $(shell $(CXX) -print-file-name=libasan.so) $(shell $(CXX) -print-file-name=libstdc++.so)
python-asan: venv
	@$(ASAN_CONFIG) -DVKML_BUILD_PYTHON=ON -DVKML_PYTHON_STUBS=OFF \
	  -DPython_EXECUTABLE=$(abspath $(PY)) >/dev/null
	$(CMAKE) --build $(ASAN) -j $(JOBS) --target _C _C_package

test-python-asan: python-asan
	LD_PRELOAD="$(ASAN_RT)" ASAN_OPTIONS=detect_leaks=0:abort_on_error=1:allocator_may_return_null=1:max_allocation_size_mb=6144 \
	  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 PYTHONPATH=$(CURDIR)/$(ASAN)/python \
	  $(PY) -m pytest -q -p no:cacheprovider --durations=10 -n $(PYTEST_WORKERS) tests/python \
	  -m "not slow and not sweep and not fork"

docs: build
	$(BUILD)/gen_ops_doc docs/ops.md

# docs/compat.md: torch's public names against vkml's (tests/python/test_compat_doc.py checks it).
compat: python
	PYTHONPATH=$(CURDIR)/$(PYBUILD)/python $(PY) tools/gen_compat.py docs/compat.md

# Installs the C++ library into a scratch prefix and builds examples/cpp against it, as a
# user's project would (find_package(vkml)).
example-install: build
	$(CMAKE) --install $(BUILD) --prefix $(BUILD)/prefix >/dev/null
	$(CMAKE) -S examples/cpp -B $(BUILD)/example $(GEN) -DCMAKE_PREFIX_PATH=$(CURDIR)/$(BUILD)/prefix >/dev/null
	$(CMAKE) --build $(BUILD)/example -j $(JOBS)
	$(BUILD)/example/mlp | tail -1

# The stages one after another, each one's time printed as it ends and all of them at the end (CI
# has 90 minutes for the whole run).
TEST_STAGES := test-asan test-tsan example-install test-cpp test-python test-python-asan fuzz-smoke
test:
	@times=""; for stage in $(TEST_STAGES); do start=$$(date +%s); \
	  $(MAKE) --no-print-directory $$stage || exit 1; \
	  took="$$stage $$(( $$(date +%s) - start )) s"; echo "== make test: $$took"; times="$$times, $$took"; \
	done; echo "== make test: every stage passed ($${times#, })"

# The main job: train on scikit-learn's digits (MLP by default; --model cnn for the CNN).
demo: python
	PYTHONPATH=$(CURDIR)/$(PYBUILD)/python $(PY) -m vkml.examples.digits $(DEMO_ARGS)

bench: python
	PYTHONPATH=$(CURDIR)/$(PYBUILD)/python $(PY) bench/compare.py --json $(BUILD)/bench.json $(BENCH_ARGS)

# The Vulkan benchmark gathered with the shared libraries it needs into $(BUILD)/bench-vulkan,
# for bench/gpu.sh on a lent GPU machine (nothing can be installed there); checked here on
# lavapipe with --quick.
bench-vulkan: build
	@rm -rf $(BUILD)/bench-vulkan && mkdir -p $(BUILD)/bench-vulkan/lib $(BUILD)/bench-vulkan/loader
	cp $(BUILD)/vkml_vulkan_bench $(BUILD)/bench-vulkan/
	ldd $(BUILD)/vkml_vulkan_bench | awk '/=> \// {print $$3}' | \
	  grep -E 'openblas|gfortran|quadmath|stdc\+\+|gcc_s' | xargs -I{} cp -L {} $(BUILD)/bench-vulkan/lib/
	cp -L $$(ldconfig -p | awk '/libvulkan.so.1 / {print $$NF; exit}') $(BUILD)/bench-vulkan/loader/
	du -sh $(BUILD)/bench-vulkan
	$(BUILD)/bench-vulkan/vkml_vulkan_bench --quick

demo-cpp: build
	$(BUILD)/mlp_example

# A short libFuzzer run on every `make test`; `make fuzz FUZZ_SECONDS=600` for a long one.
# Its build at -O0 (clang's -O1 took 200 s of its 223 s; at -O0 the build takes 89 s and the 20 s
# run makes half the executions, 160K).
fuzz-smoke:
	$(MAKE) fuzz FUZZ_SECONDS=20 FUZZ_OPT='"-O0 -g1 -DNDEBUG"'

# libFuzzer on the safetensors reader (needs clang); FUZZ_SECONDS per run.
FUZZ_SECONDS ?= 60
FUZZ_OPT ?= $(SAN_OPT)
fuzz: deps
	@dpkg -s clang >/dev/null 2>&1 && dpkg -s libclang-rt-14-dev >/dev/null 2>&1 || \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq clang libclang-rt-14-dev >/dev/null)
	$(CMAKE) -S fuzz -B build-fuzz $(GEN) -DCMAKE_CXX_COMPILER=clang++ \
	  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO=$(FUZZ_OPT) >/dev/null
	$(CMAKE) --build build-fuzz -j $(JOBS)
	python3 fuzz/make_seeds.py build-fuzz/seeds
	mkdir -p build-fuzz/corpus
	build-fuzz/fuzz_safetensors build-fuzz/corpus build-fuzz/seeds -dict=fuzz/safetensors.dict \
	  -max_total_time=$(FUZZ_SECONDS) -rss_limit_mb=1024 -malloc_limit_mb=256

format:
	clang-format -i $$(git ls-files '*.cpp' '*.h')

clean:
	rm -rf $(BUILD) $(ASAN) $(TSAN) $(PYBUILD) build-fuzz
