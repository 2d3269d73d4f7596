# paddle.c — a thin wrapper over CMake. `make run` and `make test` install
# missing Debian packages first (scripts/install-deps.sh).
BUILD ?= build
ASAN_BUILD ?= build-asan
JOBS ?= $(shell nproc)
PREFIX ?= /usr/local

.PHONY: all deps build run test test-asan bench install clean

all: build

deps:
	@bash scripts/install-deps.sh

$(BUILD)/Makefile:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX=$(PREFIX)

build: $(BUILD)/Makefile
	cmake --build $(BUILD) -j $(JOBS)

run: deps build
	$(BUILD)/example_train_mlp

test: deps build
	cd $(BUILD) && ctest --output-on-failure -j 2

test-asan: deps
	cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DPD_SANITIZE=ON
	cmake --build $(ASAN_BUILD) -j $(JOBS)
	cd $(ASAN_BUILD) && ASAN_OPTIONS=detect_leaks=1 ctest --output-on-failure -j 2

bench: deps build
	@bash bench/run.sh $(BUILD)

install: build
	cmake --install $(BUILD)

clean:
	rm -rf $(BUILD) $(ASAN_BUILD)
