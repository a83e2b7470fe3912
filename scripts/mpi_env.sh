#!/usr/bin/env bash
# Sourced by the other scripts: lets Open MPI run as root (containers, CI), place more
# ranks than cores, and keep the analyzer's traffic off the training fabric
# (scripts/mpi_transport.sh; NCCL_CULPRIT_MPI_TRANSPORT=site leaves it to the site).
if [ "$(id -u)" -eq 0 ]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
export OMPI_MCA_rmaps_base_oversubscribe=1
# shellcheck source=scripts/mpi_transport.sh
. "$(dirname "${BASH_SOURCE[0]}")/mpi_transport.sh"
