// A network receive held behind a backlog inside its node: a GPU after the entry consumes
// slowly.
//
// A GPU slow to consume frees every slot late, so the receive explanations ask of a slow
// consumer that its quickest step be slow too (receiver_peers.hpp). An entry whose slots are
// held by a GPU after it on its node holds only the steps that found that GPU's buffers full:
// its first steps of each collective fill them and pass at once, and it is rightly not taken
// for a slow consumer itself. But then nobody is: the GPU that holds the data receives over
// NVLink only, and no record of its own shows it.
//
// Where the data waits tells. The passage lag (pipeline/passage_lag.hpp) of an entry that
// passes its data on is about S (p - 1) steps more than a straight passage (S = NCCL_STEPS,
// 8), p the GPUs between it and the slow one. What a straight passage reads depends on how
// long each GPU takes over a step against the channel's pace, so it is measured: the lower
// quartile of the mean lags of the communicator's other entries that pass their data on (lags
// of 0 or more; 0, the passage of the table, where fewer than two others have one). A backlog
// only adds to a passage, and many entries of a job that one fault paces carry one (held from
// beyond their node), so the straight passage is at the bottom. An entry whose lag lies above
// that by half a buffer (at a one-sided 1e-3 over its collectives and channels) passed on data
// that then waited a buffer or more inside its node: something after it holds it. Its holds,
// where they stand beyond its peers' (the test of receiver_peers.hpp without the every-step
// guard), are then taken as its node's slow consumption: named on the entry, as for any slow
// consumer its network receives show (hidden_consumers.hpp), and placed along the node's chain
// by consumer_position.hpp. Where a GPU of the node sends waiting for credit more than for its
// data, the data is held beyond the node, which fills every buffer of the node whichever GPU
// is slow: no backlog is taken there (the up-entries of an LL tree paced by a 1.57x GPU
// elsewhere read 5-25 steps against the down-entries' 2.5).
//
// Where the entry's holds do not stand out (the buffers after it take each collective whole,
// or its only peers combine inputs that wait for each other), the backlog alone is evidence
// where no healthy passage of the job comes near it: a full buffer above the highest lag of
// two or more other entries, at a one-sided 1e-3, and no exit of the lane sent by another GPU
// of the node had its data ready at once (the data then passed the node in time, lanes.hpp).
// Its cost is the backlog at the entry's pace, over the window. Measured on fresh seed 11023:
// the entry of a tree's only interior node (a tree 4x8x2 under LL128, a 4.36x consumer six GPUs
// after it, 92 % slower) read 39.02 +- 1.07 steps, the other entries 0.27-0.29, and nobody was
// named; the entries of a healthy ring 7x5x5 under LL128 ramp from 1.35 to 12.29 steps, each
// within a buffer of the next.
//
// What it cannot see: a slow GPU right after the entry (p = 1: its lag is the passage's; where
// the entry's own holds name it, consumer_position.hpp places that GPU), a backlog too short
// to reach half a buffer (a mild fault in short collectives), and inputs without per-step
// traces and kernel clocks (no lags). A GPU slow in its own work inside the node frees its
// slots late too and fills the buffers before it as a slow consumer would: where the gap test
// or the kernel starts found one on the entry's node in its communicator, the entry's holds
// wait on it (late_gpu_behind, receiver_explanations.cpp).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "analysis/connection_facts.hpp"
#include "analysis/lag_summary.hpp"
#include "analysis/lanes.hpp"
#include "analysis/observations.hpp"
#include "analysis/process_context.hpp"
#include "analysis/receiver_peers.hpp"

namespace culprit {

// A backlog that stands a full buffer above every other entry's lag of its communicator.
struct BacklogAboveAll {
  double steps = 0;      // beyond the straight passage
  double window_ns = 0;  // those steps at the entry's pace, over its samples: the data's wait on its node
  double margin = 0;     // its excess over the highest other lag, in units of the guard (a buffer and its noise)
};

// The (host, communicator) pairs where a GPU's network sends wait for their receivers' credit
// more than for their own data: every buffer of that node fills from beyond it, whichever of
// its GPUs is slow.
using NodesHeldFromBeyond = std::set<std::pair<std::string, uint64_t>>;

// The communicators' entries and their passage lags. `held`: the nodes held from beyond, whose
// turns are no straight turn (their buffers fill from beyond whatever their GPUs do).
class EntryPassages {
 public:
  explicit EntryPassages(const Observations& obs, NodesHeldFromBeyond held = {});
  // Whether `receiver`'s lags as an entry in `comm` show a backlog after it on its node.
  bool backlog_after(uint32_t receiver, uint64_t comm) const { return backlog_steps(receiver, comm).has_value(); }
  // That backlog, in steps beyond the straight passage, where there is one. A GPU where a tree's
  // data turns back (loop_lag_*, pipeline/passage_lag.hpp) is read as an entry too, beyond a
  // straight turn (turn_passage; no table's value stands in), where the communicator has one-way
  // entries at all (a tree of two nodes has none, and its other root's turn alone is not read).
  std::optional<double> backlog_steps(uint32_t receiver, uint64_t comm) const;
  // The one-way straight passage of `comm`, measured from two or more of its entries that pass
  // their data on.
  std::optional<double> measured_straight(uint64_t comm) const;
  // The straight turn that `receiver`'s turn in `comm` is read against (turn_passage), where
  // it turns the data back there and its lags are settled (spread by a quarter of a buffer at
  // most: a turn crosses the slow GPU a second time on the way down, where a queue wanders).
  std::optional<double> straight_turn(uint32_t receiver, uint64_t comm) const;
  // Whether `receiver`'s lags as an entry in `comm` are a turn's, read (straight_turn), and
  // no one-way entry's.
  bool reads_turn(uint32_t receiver, uint64_t comm) const;
  // Whether `receiver`'s lags as an entry in `comm` stand below the straight passage plus a
  // quarter of a buffer at a one-sided 1e-3: no buffer waits after it on its node. Never said
  // of a turn: a straight turn is known within a step or two (0.2-2.7 steps measured), enough
  // to count whole buffers after it, not to tell the GPU right after it from itself.
  bool no_backlog_after(uint32_t receiver, uint64_t comm) const;
  // Where `receiver`'s lags stand above the highest of two or more other entries' by a full
  // buffer, at a one-sided 1e-3: a backlog no healthy passage of the job comes near. Judged in
  // ns, a buffer at the entry's mean pace: the lag of a collective whose pace at the entry was
  // unusual reads long or short in its own steps (a ring entry's eight collectives read 23-27
  // steps and one 69, at a third of the others' time per step; in ns, 819-1081 us). Entries in
  // `held_beyond` (on nodes held from beyond, NodesHeldFromBeyond) are no reference: their
  // node's buffers fill from beyond it whatever its GPUs do, so their lags are no passage.
  std::optional<BacklogAboveAll> backlog_above_all(uint32_t receiver, uint64_t comm,
                                                   const std::set<uint32_t>& held_beyond = {}) const;

 private:
  struct Entry {
    uint32_t process = 0;
    LagSummary lag, lag_ns;  // in steps of its pace, and in ns (not for a turn)
    double step_ns = 0;      // its mean time per step (not for a turn)
    bool turn = false;       // lags of a turn (loop_lag_*), against a straight turn
  };
  // The straight passage of `comm` for `receiver`, and its own entry, if it is one; else, if
  // it turns the data back, a straight turn and its turn.
  std::optional<std::pair<double, const Entry*>> straight_for(uint32_t receiver, uint64_t comm) const;
  // A straight turn of `comm` for a GPU on `host`: the chain crossed up and back, the least of
  // twice the measured straight passage and the turns of other nodes not held from beyond (the
  // other tree's root).
  std::optional<double> turn_passage(uint64_t comm, const std::string& host) const;
  std::map<uint64_t, std::vector<Entry>> entries_;  // per communicator
  std::map<uint64_t, std::vector<Entry>> turns_;    // per communicator: lags from a turn, in steps
  std::vector<std::string> hosts_;                  // per process
  NodesHeldFromBeyond held_;
};

NodesHeldFromBeyond nodes_held_from_beyond(const Observations& obs, const std::vector<EdgeFacts>& facts,
                                           const ProcessContext& context);

// What the backlog rule reads of the whole job, once. `obs`, `facts` and `context` must outlive
// it (its lanes keep references).
struct BacklogReadings {
  BacklogReadings(const Observations& obs, const std::vector<EdgeFacts>& facts, const ProcessContext& context,
                  const AttributionConfig& config);
  NodesHeldFromBeyond held;
  EntryPassages passages;
  Lanes lanes;  // whether a lane's data passed its node in time (Lanes::delivered_past_receiver)
  AttributionConfig config;
  // (receiver, comm) -> the steps of its collective network receives.
  std::map<std::pair<uint32_t, uint64_t>, double> receive_steps;
  // comm -> its GPUs on the nodes `held` names.
  std::map<uint64_t, std::set<uint32_t>> held_gpus;
};

// Marks `f`, connection `connection` of the facts the readings were built from (a collective
// network receive not found slow to consume), slow to consume where its receiver shows a
// backlog after it and its node is not held from beyond: where its holds stand beyond its
// peers', by them; else where the backlog stands a buffer above every other entry's and no
// exit of its lane by another GPU had its data ready at once, by the backlog.
void take_hold_behind_backlog(const BacklogReadings& readings, const ReceiverPeers& receivers, double cycle_ns,
                              const ProcessContext& context, size_t connection, EdgeFacts& f);

// The GPU of `receiver`'s node in `comm` latest by its own work (late_ns > 0, own_delay.hpp),
// if any: what a backlog after the receiver waits on.
std::optional<uint32_t> late_gpu_behind(const ProcessContext& context, const std::vector<double>& late_ns,
                                        uint32_t receiver, uint64_t comm);

}  // namespace culprit
