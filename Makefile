# vkml: `make test` builds everything and runs every test; `make demo` shows it training.
# Both install what is missing first (Debian packages with apt-get, Python packages with pip).

JOBS    ?= $(shell nproc)
BUILD   ?= build
ASAN    ?= build-asan
CMAKE   ?= cmake
GEN     := $(shell command -v ninja >/dev/null 2>&1 && echo "-G Ninja")
LAUNCH  := $(shell command -v ccache >/dev/null 2>&1 && echo "-DCMAKE_CXX_COMPILER_LAUNCHER=ccache")
APT_PKGS := g++ libgtest-dev libopenblas-dev pkg-config

.PHONY: all deps build test test-cpp test-asan demo docs format clean example-install

all: build

deps:
	@missing=""; for p in $(APT_PKGS); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then echo "installing:$$missing"; \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing) >/dev/null; fi
	@command -v $(CMAKE) >/dev/null 2>&1 || python3 -m pip install -q cmake ninja

$(BUILD)/build.ninja $(BUILD)/Makefile: CMakeLists.txt
	$(CMAKE) -S . -B $(BUILD) $(GEN) $(LAUNCH) -DCMAKE_BUILD_TYPE=Release -DVKML_WERROR=ON -DVKML_BUILD_TESTS=ON -DVKML_BUILD_EXAMPLES=ON >/dev/null

build: deps
	@$(CMAKE) -S . -B $(BUILD) $(GEN) $(LAUNCH) -DCMAKE_BUILD_TYPE=Release -DVKML_WERROR=ON -DVKML_BUILD_TESTS=ON -DVKML_BUILD_EXAMPLES=ON >/dev/null
	$(CMAKE) --build $(BUILD) -j $(JOBS)

test-cpp: build
	cd $(BUILD) && ctest -j $(JOBS) --output-on-failure --timeout 600

# The C++ suite again under AddressSanitizer + UndefinedBehaviorSanitizer, leak checks on.
test-asan: deps
	@$(CMAKE) -S . -B $(ASAN) $(GEN) $(LAUNCH) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DVKML_WERROR=ON \
	  -DVKML_SANITIZE=ON -DVKML_NATIVE=OFF -DVKML_BUILD_EXAMPLES=OFF >/dev/null
	$(CMAKE) --build $(ASAN) -j $(JOBS) --target vkml_tests
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  $(ASAN)/vkml_tests --gtest_brief=1

docs: build
	$(BUILD)/gen_ops_doc docs/ops.md

# Builds, installs into a scratch prefix, and builds examples/cpp against it with find_package.
example-install: build
	$(CMAKE) --install $(BUILD) --prefix $(BUILD)/prefix >/dev/null
	$(CMAKE) -S examples/cpp -B $(BUILD)/example $(GEN) -DCMAKE_PREFIX_PATH=$(CURDIR)/$(BUILD)/prefix >/dev/null
	$(CMAKE) --build $(BUILD)/example -j $(JOBS)

test: test-asan example-install test-cpp

demo: build
	$(BUILD)/mlp_example

format:
	clang-format -i $$(git ls-files '*.cpp' '*.h')

clean:
	rm -rf $(BUILD) $(ASAN)
