#!/usr/bin/env bash
# The Vulkan speed check for a machine with a GPU (issue #14, item 6), run there by the device
# tool over a copy of the working tree. Nothing is installed there (no apt, no PyPI), so `make
# bench-vulkan` builds the benchmark here and gathers it with the shared libraries it needs into
# build/bench-vulkan/, which the device tool carries:
#
#   make bench-vulkan                       # here: build + gather (and a --quick run on lavapipe)
#   run(command="bash bench/gpu.sh", carry=["build/bench-vulkan"], timeout_s=500)
#
# It records what the machine has (the Vulkan ICDs, vulkaninfo when installed, nvidia-smi), then
# prints one JSON line per workload (bench/vulkan_bench.cpp) into $OUT/vulkan_bench.jsonl.
set -u
dir=build/bench-vulkan
out=${OUT:-/tmp}
{
  echo "== ICD files"; ls /usr/share/vulkan/icd.d /etc/vulkan/icd.d 2>&1
  echo "== vulkaninfo"; (vulkaninfo --summary 2>&1 || echo "vulkaninfo: not installed") | head -60
  echo "== nvidia-smi"; (nvidia-smi 2>&1 || echo "nvidia-smi: not found") | head -20
  echo "== loader"; (ldconfig -p | grep -i vulkan) || echo "no system libvulkan: the carried one is used"
} | tee "$out/machine.txt"
# The carried BLAS and C++ runtime; the carried Vulkan loader only where the system has none (the
# system's knows where its driver is).
libs="$dir/lib"
ldconfig -p | grep -q 'libvulkan.so.1 ' || libs="$libs:$dir/loader"
export LD_LIBRARY_PATH="$libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
timeout 450 "$dir/vkml_vulkan_bench" "$@" | tee "$out/vulkan_bench.jsonl"
