// Hang diagnosis from PyTorch Flight Recorder dumps (FORMATS.md §6; docs/attribution.md,
// "Flight Recorder").
//
// Within a process group of collectives, the members count the same sequence: collective N
// of one rank meets collective N of every other. For a member whose oldest unfinished
// collective is N (its pg_status: last completed N-1, last enqueued >= N):
//   - a member that never enqueued N holds it: it waits for that member;
//   - else, if a member completed N, this member's part of N ran (a collective cannot end
//     anywhere before every member took part) yet its own completion never came: its GPU
//     or its watchdog stopped. It stopped completing work: a root;
//   - else a member without a usable dump may hold it: it waits for that member;
//   - else every member is inside N and none came out: the dumps cannot tell who holds
//     the others (a wire or a GPU stuck inside the kernel); nothing is named from it.
// A send or receive waits for its partner. PyTorch counts a group's point-to-point
// operations in the same pg_status numbers, and pipeline stages send different numbers of
// them, so groups with sends and receives are judged by their entries only.
// A rank that others wait for, that waits for nobody and has nothing unfinished in any
// group, stopped issuing work (its host thread stopped): a root. One that others wait for
// and whose dump is missing or unreadable is a root as well, and the notes say so. A rank
// that others wait for but that waits itself is a victim along the chain.
//
// Members that run different operations, data types or sizes at the same sequence are
// reported as mismatches, with both sides.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "analysis/observations.hpp"
#include "analysis/wait_graph.hpp"

namespace culprit {

struct FlightRecorderVerdict {
  std::map<uint32_t, std::string> stopped;  // root process -> the one-line reason
  std::vector<WaitEdge> waits;              // waiting process -> the process it waits for
  std::vector<std::string> notes;           // one line each: roots, mismatches, stuck groups
};

// `process_of_rank(global rank, label)` names the process of a global rank, adding one
// labelled `label` for a rank without any dump.
FlightRecorderVerdict judge_flight_recorder(
    const Observations& observations, const std::function<uint32_t(int64_t, const std::string&)>& process_of_rank);

}  // namespace culprit
