#pragma once
#include "comm/communicator.hpp"
// The communicator of the whole test job (set up by mpi_main.cpp).
culprit::Communicator& test_world();
