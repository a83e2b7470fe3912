# shellcheck shell=bash
# Sourced by the launcher scripts (scripts/mpi_env.sh, scripts/slurm/lib.sh): the analyzer's
# own MPI traffic (a few small messages) stays off the training fabric. Open MPI gets the
# ob1 PML over self, shared memory (vader) and TCP, without UCX one-sided and HCOLL, so it
# opens no RDMA resources beside a job that may be stuck on a sick InfiniBand fabric, and
# starts faster; waiting ranks yield their core. The binary asks for the same itself before MPI_Init (src/comm/mpi_transport.cpp)
# when nothing is set; here it also reaches mpirun and srun.
#
#   NCCL_CULPRIT_MPI_TRANSPORT=site   leave Open MPI's site configuration alone
#
# A value already set (OMPI_MCA_pml=ucx in the environment) wins. What was in force is the
# `mpi_transport` line of the results (HDF5 attribute, JSON key).
nc_mpi_transport() {
  [ "${NCCL_CULPRIT_MPI_TRANSPORT:-tool}" = site ] && return 0
  : "${OMPI_MCA_pml:=ob1}"
  : "${OMPI_MCA_btl:=self,vader,tcp}"
  : "${OMPI_MCA_osc:=^ucx}"
  : "${OMPI_MCA_coll_hcoll_enable:=0}"
  : "${OMPI_MCA_mpi_yield_when_idle:=1}"  # waiting ranks leave the cores to the job
  export OMPI_MCA_pml OMPI_MCA_btl OMPI_MCA_osc OMPI_MCA_coll_hcoll_enable OMPI_MCA_mpi_yield_when_idle
}
nc_mpi_transport
