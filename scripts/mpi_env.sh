#!/usr/bin/env bash
# Sourced by the other scripts: lets Open MPI run as root (containers, CI) and place more
# ranks than cores.
if [ "$(id -u)" -eq 0 ]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
export OMPI_MCA_rmaps_base_oversubscribe=1
