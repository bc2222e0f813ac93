#!/usr/bin/env bash
# Device: builds bench/lab/chain_lab.cu against each est_chain variant given (default: the
# checkout's) and runs it on each distribution. Usage: bash bench/lab/run.sh [variant.cuh ...]
set -u
export PATH="$PATH:/usr/local/cuda/bin"
out="${OUT:-/tmp}"
variants=("$@"); [ ${#variants[@]} -eq 0 ] && variants=(crates/smemkit/kernels/est_chain.cuh)
for v in "${variants[@]}"; do
  name=$(basename "$v" .cuh); k=/tmp/lab-$name; rm -rf "$k"; cp -r crates/smemkit/kernels "$k"; cp "$v" "$k/est_chain.cuh"
  nvcc -w -O3 -arch=sm_90a -std=c++17 -I"$k" -DSAMPLE_T="unsigned short" -DSAMPLE_KIND=5 -o "$k/lab" bench/lab/chain_lab.cu || { echo "$name: build failed"; continue; }
  cuobjdump -sass -fun est_chain_walk "$k/lab" > "$out/sass-$name.txt" 2>&1
  for d in ${LAB_DISTS:-normal cubes halfway alternating magnitude}; do echo "$name $("$k/lab" "$d" "${LAB_LOG2N:-24}")" | tee -a "$out/lab.jsonl"; done
done
