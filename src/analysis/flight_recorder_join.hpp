// One process, whichever inputs name it: a Flight Recorder dump knows a process by its global
// rank (and the host it was found on), the profiler's traces by host and pid with its rank in
// each communicator. A communicator as large as the dumps' largest group is the job's world,
// and its ranks are the global ranks, so the dump of (host, rank R) and the traced process
// on that host holding world rank R are one process (on R alone when the dumps' hosts are
// unknown). Joined processes keep the traced identity and gain the global rank; both
// inputs' evidence then meets in one verdict.
#pragma once

#include <string>
#include <vector>

#include "analysis/observations.hpp"

namespace culprit {

// True when `observations` holds both Flight Recorder dumps and traced processes.
bool needs_flight_recorder_join(const Observations& observations);

// The observations with each dump's process merged into its traced process; one note says
// how many were joined and how many dumps matched no traced process.
Observations join_flight_recorder_ranks(const Observations& observations, std::vector<std::string>& notes);

}  // namespace culprit
