#!/usr/bin/env bash
# Checks src/plugin/nccl_profiler_abi.h against NCCL's own profiler headers, release by
# release: compiles tests/plugin/abi_vs_nccl.cpp against each tag's
# src/include/plugin/nccl_profiler.h and runs it (sizes, offsets, constants; see that file).
#   tests/plugin/check_abi_vs_nccl.sh /path/to/NVIDIA-nccl-git-dir [tag...]
# The NCCL repository may be a bare git directory; nothing is copied into this project.
set -euo pipefail
nccl_git=${1:?usage: $0 NCCL_GIT_DIR [tag...]}
shift
tags=("$@")
[ ${#tags[@]} -gt 0 ] || tags=(v2.27.3-1 v2.28.3-1 v2.29.2-1 v2.30.7-1)
here=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
status=0
for tag in "${tags[@]}"; do
  inc="$work/$tag"
  mkdir -p "$inc/profiler"
  git --git-dir="$nccl_git" show "$tag:src/include/plugin/nccl_profiler.h" > "$inc/nccl_profiler.h"
  for f in $(git --git-dir="$nccl_git" ls-tree --name-only "$tag" src/include/plugin/profiler/); do
    git --git-dir="$nccl_git" show "$tag:$f" > "$inc/profiler/$(basename "$f")"
  done
  # 2.30 headers name the pid type ncclPid_t and include NCCL's os.h for it.
  printf '#include <sys/types.h>\ntypedef pid_t ncclPid_t;\n' > "$inc/os.h"
  v=4
  [ -f "$inc/profiler/profiler_v5.h" ] && v=5
  [ -f "$inc/profiler/profiler_v6.h" ] && v=6
  if g++ -std=c++20 -w -DNCCL_V=$v -I"$inc" -I"$inc/profiler" -I"$here/src" \
       "$here/tests/plugin/abi_vs_nccl.cpp" -o "$work/check_$tag"; then
    printf '%s (interfaces v4..v%s): ' "$tag" "$v"
    "$work/check_$tag" || status=1
  else
    echo "$tag: does not compile"; status=1
  fi
done
exit $status
