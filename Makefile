# The two commands of the README:
#   make demo   installs what is missing, builds, and runs the demo cluster
#   make test   installs what is missing, builds, and runs every test through ctest
BUILD_DIR ?= build
BUILD_TYPE ?= RelWithDebInfo
JOBS ?= 2
CMAKE_FLAGS ?=

.PHONY: all deps configure build demo test test-unit asan tsan fuzz format clean

all: build

deps:
	@tools/install-deps.sh

configure: deps
	@cmake -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) $(CMAKE_FLAGS) >/dev/null

build: configure
	@cmake --build $(BUILD_DIR) -j $(JOBS)

demo: build
	@$(BUILD_DIR)/tools/muster_demo --muster_bin=$(BUILD_DIR)/tools/muster --worker_bin=$(BUILD_DIR)/examples/worker

test: build
	@cd $(BUILD_DIR) && ctest -j $(JOBS) --output-on-failure --timeout 300

test-unit: build
	@cd $(BUILD_DIR) && ctest -j $(JOBS) --output-on-failure -L unit

# The whole suite with AddressSanitizer+UBSan, or with ThreadSanitizer over CAF and abseil
# instrumented the same way (built once into ~/.cache/muster by tools/sanitizers/build-deps.sh:
# against Debian's uninstrumented libraries every hand-off between threads would look like a
# race). Fails on a failed test or on any sanitizer report from any process.
asan: deps
	@tools/sanitizers/run.sh address

tsan: deps
	@tools/sanitizers/run.sh thread

# libFuzzer targets (clang) for every decoder of wire bytes, FUZZ_SECONDS each (default 30).
fuzz:
	@tools/install-deps.sh fuzz
	@tests/fuzz/run.sh

format:
	@git ls-files '*.h' '*.cc' | xargs clang-format -i

clean:
	@rm -rf $(BUILD_DIR)
