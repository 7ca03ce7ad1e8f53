# Top-level entry points. `make test` and `make demo` work on a fresh Debian 12
# machine: they install missing packages first, then configure and build.
BUILD   ?= build
JOBS    ?= 2
CMAKE_FLAGS ?=
export OPENBLAS_NUM_THREADS ?= 1

CCACHE := $(shell command -v ccache 2>/dev/null)
ifneq ($(CCACHE),)
CMAKE_FLAGS += -DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache
endif

.PHONY: all deps configure build test sanitize demo fuzz bench man-check clean

all: build

deps:
	@scripts/install-deps.sh

$(BUILD)/CMakeCache.txt:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS)

configure: deps $(BUILD)/CMakeCache.txt

build: configure
	cmake --build $(BUILD) -j$(JOBS)

test: build
	cd $(BUILD) && ctest --output-on-failure -j$(JOBS)

demo: build
	scripts/demo.sh $(BUILD)

# libFuzzer targets need clang; they go in their own build tree.
fuzz: deps
	cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DWIT_FUZZ=ON \
	  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DWIT_TORCH=OFF $(CMAKE_FLAGS)
	cmake --build build-fuzz -j$(JOBS) --target fuzzers

# The unit tests and the fuzz corpus replays under ASan + UBSan (clang), in
# their own build tree; the CLI, torch and man tests are not run there.
SANITIZE_TESTS := wit_unit_tests fuzz_replays wit-board
sanitize: deps
	cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" \
	  -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g1" -DWIT_SANITIZE=ON -DWIT_TORCH=OFF -DWIT_BENCH=OFF \
	  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ $(CMAKE_FLAGS)
	cmake --build build-asan -j$(JOBS) --target $(SANITIZE_TESTS)
	cd build-asan && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
	  ctest --output-on-failure -j$(JOBS) -E '^(cli_|man_|wit_torch_tests$$|attacks$$|vectors_)'

bench: build
	bench/run.sh $(BUILD)

man-check:
	@for f in man/*.[17]; do groff -man -ww -z "$$f" || exit 1; done

clean:
	rm -rf $(BUILD) build-fuzz build-asan
