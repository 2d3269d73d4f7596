# paddle.c — a thin wrapper over CMake. `make run` and `make test` install
# missing Debian packages first (scripts/install-deps.sh).
BUILD ?= build
ASAN_BUILD ?= build-asan
FUZZ_BUILD ?= build-fuzz
FUZZ_SECONDS ?= 60
TSAN_BUILD ?= build-tsan
SWEEP_BUILD ?= build-sweep
JOBS ?= $(shell nproc)
PREFIX ?= /usr/local
# CI (CI=true) builds with -Werror; a person's build only warns.
WERROR ?= $(if $(CI),ON,OFF)

.PHONY: all deps build run test test-asan test-tsan faultinject sweep fuzz bench install clean

all: build

deps:
	@bash scripts/install-deps.sh

$(BUILD)/Makefile:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX=$(PREFIX) -DPD_WERROR=$(WERROR)

build: $(BUILD)/Makefile
	cmake --build $(BUILD) -j $(JOBS)

# The main job: train the default Llama on the built-in arithmetic data set,
# report held-out accuracy and print a sample (docs/training.md).
run: deps build
	OMP_WAIT_POLICY=$${OMP_WAIT_POLICY:-passive} $(BUILD)/paddlec train --out $(BUILD)/paddlec-out

test: deps build
	cd $(BUILD) && ctest --output-on-failure -j 2

test-asan: deps
	cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DPD_SANITIZE=ON
	cmake --build $(ASAN_BUILD) -j $(JOBS)
	cd $(ASAN_BUILD) && ASAN_OPTIONS=detect_leaks=1 ctest --output-on-failure -j 2

# ThreadSanitizer: two threads train independent models and parse configs
# and tokenizers at once (tests/test_threads.c; docs/reliability.md).
test-tsan: deps
	cmake -S . -B $(TSAN_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPD_TSAN=ON
	cmake --build $(TSAN_BUILD) -j $(JOBS) --target test_threads
	cd $(TSAN_BUILD) && ctest --output-on-failure -R '^test_threads$$'

# Fault injection, the full sweep: every allocation of each job (attention, a
# training step and a checkpoint round trip, generation, the text dataset, BPE
# training, the grad scaler) fails in turn, once and then persistently, in the
# sanitized build (LeakSanitizer on). `make test` runs a sample of it.
faultinject: deps
	cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DPD_SANITIZE=ON
	cmake --build $(ASAN_BUILD) -j $(JOBS) --target test_fault
	cd $(ASAN_BUILD) && ASAN_OPTIONS=detect_leaks=1 OMP_NUM_THREADS=2 OMP_WAIT_POLICY=passive ./test_fault 1 0
	cd $(ASAN_BUILD) && ASAN_OPTIONS=detect_leaks=1 OMP_NUM_THREADS=2 OMP_WAIT_POLICY=passive ./test_fault 1 1

# The whole bad-input sweep (docs/reliability.md): clang, ASan + UBSan with
# float-cast-overflow, every case crash-isolated. `make test` runs a sample.
sweep: deps
	CC=clang cmake -S . -B $(SWEEP_BUILD) -DCMAKE_BUILD_TYPE=Debug -DPD_SANITIZE=ON
	cmake --build $(SWEEP_BUILD) -j $(JOBS) --target sweep
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 OMP_NUM_THREADS=2 OMP_WAIT_POLICY=passive $(SWEEP_BUILD)/sweep --quiet

# libFuzzer targets (fuzz/, docs/reliability.md "Fuzzing"): clang with
# -fsanitize=fuzzer,address,undefined; each target runs FUZZ_SECONDS.
# `make test` replays their corpora and crashers without clang.
fuzz: deps
	cmake -S . -B $(FUZZ_BUILD) -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=Release -DPD_FUZZ=ON -DPD_BUILD_TESTS=OFF
	cmake --build $(FUZZ_BUILD) -j $(JOBS) --target fuzz_all
	bash fuzz/run.sh $(FUZZ_BUILD) $(FUZZ_SECONDS)

bench: deps build
	@bash bench/run.sh $(BUILD)

# PREFIX is honoured on every call, not only when build/ is first configured
# (the pkg-config file and the CMake package are relocatable; DESTDIR works
# too, for packaging).
install: build
	cmake --install $(BUILD) --prefix $(PREFIX)

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(TSAN_BUILD) $(SWEEP_BUILD) $(FUZZ_BUILD)

