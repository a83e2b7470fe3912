// The same simulated job written in older plugin layouts must give the same culprits.
//
// The simulator renders NCCL 2.27 traces only; this test rewrites them line by line into
//   - the 2.24-2.26 layout: <dump>-<host>-<tid>.txt, one file per process holding all its
//     communicators, proxy ops named Send/Recv with the op's last states as nested objects,
//     SendBufferWait/RecvBufferWait, no SendPeerWait (its time is inside SendGpuWait),
//     nMaxChannels, "Ring"/"Simple", KernelCh without GPU clocks;
//   - the 2.28-2.29.2 layout: Group API > KernelLaunch and COLL_API/P2P_API wrappers with
//     "b" at ts 0, unquoted ncclFloat32 / 0x... / (nil), "GraphCaptured":0, KernelCh of
//     channels other than 0 with StopGpuClk 0 and "e" at ts 0;
// then runs the whole analysis (run_analyze over a shared directory, serial communicator)
// on each and compares the culprits.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "comm/communicator.hpp"
#include "mock/simulator.hpp"
#include "pipeline/analyze.hpp"

namespace culprit {
namespace {

namespace fs = std::filesystem;

// One event line of the plugin, split into its fields (the values as printed).
struct Line {
  std::string name, cat, ph, id, pid, tid, ts, args;
  bool has_args = false;
};

// Splits `{"name": "N", "cat": "C", "ph": "P", "id": I, "pid": P, "tid": T, "ts": S[, "args": {A}]},`
bool split(const std::string& s, Line& l) {
  auto take = [&](size_t& at, const std::string& open, const std::string& close, std::string& out) {
    if (s.compare(at, open.size(), open) != 0) return false;
    at += open.size();
    size_t end = s.find(close, at);
    if (end == std::string::npos) return false;
    out = s.substr(at, end - at);
    at = end;
    return true;
  };
  size_t at = 0;
  if (!take(at, "{\"name\": \"", "\"", l.name) || !take(at, "\", \"cat\": \"", "\"", l.cat) ||
      !take(at, "\", \"ph\": \"", "\"", l.ph) || !take(at, "\", \"id\": ", ",", l.id) ||
      !take(at, ", \"pid\": ", ",", l.pid) || !take(at, ", \"tid\": ", ",", l.tid))
    return false;
  size_t ts_at = at + std::string(", \"ts\": ").size();
  if (s.compare(at, 8, ", \"ts\": ") != 0) return false;
  size_t args_at = s.find(", \"args\": {", ts_at);
  l.has_args = args_at != std::string::npos;
  if (l.has_args) {
    l.ts = s.substr(ts_at, args_at - ts_at);
    size_t a = args_at + std::string(", \"args\": {").size();
    size_t end = s.rfind("}}");
    if (end == std::string::npos || end < a) return false;
    l.args = s.substr(a, end - a);
  } else {
    size_t end = s.rfind('}');
    if (end == std::string::npos || end < ts_at) return false;
    l.ts = s.substr(ts_at, end - ts_at);
  }
  return true;
}

std::string join(const Line& l) {
  std::string s = "{\"name\": \"" + l.name + "\", \"cat\": \"" + l.cat + "\", \"ph\": \"" + l.ph +
                  "\", \"id\": " + l.id + ", \"pid\": " + l.pid + ", \"tid\": " + l.tid +
                  ", \"ts\": " + l.ts;
  return s + (l.has_args ? ", \"args\": {" + l.args + "}}," : "},");
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

void replace_all(std::string& s, const std::string& from, const std::string& to) {
  for (size_t at = 0; (at = s.find(from, at)) != std::string::npos; at += to.size())
    s.replace(at, from.size(), to);
}

Line with(Line l, const std::string& name, const std::string& ph, const std::string& ts) {
  l.name = name;
  l.ph = ph;
  l.ts = ts;
  return l;
}

// The body (event lines only) of a 2.27 file rewritten into the 2.24-2.26 layout.
std::vector<std::string> to_226_body(const std::string& text) {
  std::vector<std::string> out;
  for (const std::string& raw : lines_of(text)) {
    Line l;
    if (!split(raw, l)) continue;  // "[" and "{}]": the caller frames the merged file
    Line e = l;
    e.has_args = false;
    e.args.clear();
    if (l.cat == "COLL" && l.ph == "b") {
      replace_all(l.args, "\"nChannels\"", "\"nMaxChannels\"");
      replace_all(l.args, "\"RING\"", "\"Ring\"");
      replace_all(l.args, "\"TREE\"", "\"Tree\"");
      replace_all(l.args, "\"SIMPLE\"", "\"Simple\"");
    } else if (l.cat == "P2P" && l.ph == "b") {
      size_t at = l.args.find(", \"nChannels\"");
      if (at != std::string::npos) l.args = l.args.substr(0, at);
    } else if (l.name == "KernelCh" && l.ph == "b") {
      l.args = l.args.substr(0, l.args.find(", \"StartGpuClk\""));
    } else if (l.cat == "PROXY" && (l.name == "ScheduleSend" || l.name == "ScheduleRecv")) {
      if (l.ph == "e") continue;
      bool send = l.name == "ScheduleSend";
      l.name = send ? "Send" : "Recv";
      l.args += std::string(", \"POSTED\": {\"step\": 0, \"ts\": ") + l.ts + "}, " +
                (send ? "\"REM_FIFO_WAIT\"" : "\"RECEIVED\"") + ": {\"step\": 0, \"ts\": " + l.ts +
                "}, \"TRANSMITTED\": {\"step\": 0, \"ts\": " + l.ts + "}, \"DONE\": {\"step\": 0, \"ts\": " +
                l.ts + "}";
    } else if (l.cat == "PROXY" && (l.name == "ProgressSend" || l.name == "ProgressRecv")) {
      if (l.ph == "b") continue;
      l.name = l.name == "ProgressSend" ? "Send" : "Recv";
    } else if (l.cat == "NET" && l.name == "SendGpuWait") {
      if (l.ph == "e") continue;  // the old SendGpuWait lasts until SendWait begins
      out.push_back(join(with(l, "SendBufferWait", "b", l.ts)));
      out.push_back(join(with(e, "SendBufferWait", "e", l.ts)));
    } else if (l.cat == "NET" && l.name == "SendPeerWait") {
      if (l.ph == "b") continue;
      l.name = "SendGpuWait";
    } else if (l.cat == "NET" && l.name == "RecvWait" && l.ph == "b") {
      out.push_back(join(with(l, "RecvBufferWait", "b", l.ts)));
      out.push_back(join(with(e, "RecvBufferWait", "e", l.ts)));
    }
    out.push_back(join(l));
  }
  return out;
}

// A 2.27 file rewritten into the 2.28-2.29.2 layout.
std::string to_228(const std::string& text) {
  std::vector<std::string> in = lines_of(text);
  std::string out;
  std::vector<bool> kernel_zero;  // open KernelCh lines: printed with StopGpuClk 0?
  std::vector<Line> api;          // open API wrappers (the name/cat of each Group's content)
  for (size_t i = 0; i < in.size(); ++i) {
    Line l;
    if (!split(in[i], l)) {
      out += in[i] + "\n";
      continue;
    }
    if (l.cat == "GROUP") {
      Line e = l;
      e.has_args = false;
      e.args.clear();
      if (l.ph == "b") {
        Line next;
        bool p2p = i + 1 < in.size() && split(in[i + 1], next) && next.cat == "P2P";
        Line g = l;
        g.name = "Group API";
        g.cat = "GROUP_API";
        g.args = "\"groupApiId\": " + l.id + ", \"groupDepth\":1";
        out += join(g) + "\n";
        Line k = l;
        k.name = "KernelLaunch";
        k.cat = "KERNEL_LAUNCH";
        k.ts = "0.000000";
        k.args = "\"groupId\": " + l.id + ", \"Stream\": 0x5020000567d0";
        out += join(k) + "\n" + join(with(e, "KernelLaunch", "e", l.ts)) + "\n";
        Line a = l;
        a.name = next.name.empty() ? "AllReduce" : next.name;
        a.cat = p2p ? "P2P_API" : "COLL_API";
        a.ts = "0.000000";
        a.args = p2p ? "\"count\": 1024, \"datatype\": ncclFloat32, \"GraphCaptured\":0, \"Stream\": (nil)"
                     : "\"count\": 1024, \"datatype\": ncclFloat32, \"root\": 0, \"GraphCaptured\":0, \"Stream\": 0x5020000567d0";
        out += join(a) + "\n";
        api.push_back(a);
      } else {
        if (!api.empty()) {
          Line a = api.back();
          api.pop_back();
          a.ph = "e";
          a.ts = l.ts;
          a.has_args = false;
          a.args.clear();
          out += join(a) + "\n";
        }
        Line g = e;
        g.name = "Group API";
        g.cat = "GROUP_API";
        out += join(g) + "\n";
      }
      continue;
    }
    if (l.name == "KernelCh") {
      if (l.ph == "b") {
        bool zero = l.args.rfind("\"Channel\": 0,", 0) != 0;
        kernel_zero.push_back(zero);
        if (zero) l.args = l.args.substr(0, l.args.find("\"StopGpuClk\": ")) + "\"StopGpuClk\": 0";
      } else if (!kernel_zero.empty()) {
        if (kernel_zero.back()) l.ts = "0.000000";
        kernel_zero.pop_back();
      }
    }
    out += join(l) + "\n";
  }
  return out;
}

struct Verdict {
  int code = -1;
  std::vector<std::tuple<std::string, int64_t, std::string>> culprits;  // host, pid, class
  uint64_t records = 0;
  std::vector<std::string> formats;
};

Verdict analyse(const fs::path& dir) {
  AnalyzeOptions o;
  o.shared = dir.string();
  o.output = (dir / "out.h5").string();
  o.json = (dir / "out.json").string();
  o.quiet = true;
  o.reduce = "cpu";
  auto comm = make_serial_communicator();
  Verdict v;
  v.code = run_analyze(o, *comm);
  std::ifstream in(dir / "out.json");
  if (!in) return v;
  nlohmann::json j = nlohmann::json::parse(in);
  for (const auto& c : j["culprits"])
    v.culprits.emplace_back(c["host"].get<std::string>(), c["pid"].get<int64_t>(),
                            c["culprit_class"].get<std::string>());
  for (const auto& in_row : j["inputs"]) {
    v.records += in_row["records"].get<uint64_t>();
    v.formats.push_back(in_row["format"].get<std::string>());
  }
  return v;
}

void put(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << text;
}

// Writes the simulation in `layout` under dir/<host>/.
void write_layout(const mock::Simulation& sim, const std::string& layout, const fs::path& dir) {
  std::vector<std::string> hosts = sim.hosts();
  for (size_t node = 0; node < hosts.size(); ++node) {
    fs::path hd = dir / hosts[node];
    std::map<std::string, std::vector<std::string>> per_pid;  // 2.24-2.26: one file per process
    for (const mock::RenderedFile& f : sim.render_host_nccl_json(static_cast<int>(node))) {
      if (layout == "2.27") {
        put(hd / f.name, f.content);
      } else if (layout == "2.28") {
        put(hd / f.name, to_228(f.content));
      } else {
        Line first;
        for (const std::string& l : lines_of(f.content))
          if (split(l, first)) break;
        std::vector<std::string> body = to_226_body(f.content);
        auto& all = per_pid[first.pid];
        all.insert(all.end(), body.begin(), body.end());
      }
    }
    for (const auto& [pid, body] : per_pid) {
      std::string text = "[\n";
      for (const std::string& l : body) text += l + "\n";
      put(hd / ("nccl_prof-" + hosts[node] + "-" + pid + ".txt"), text + "{}]\n");
    }
  }
}

fs::path scratch_dir(const std::string& tag) {
  return fs::temp_directory_path() / ("culprit_layouts_" + std::to_string(getpid()) + "_" + tag);
}

TEST(LayoutConverters, RoundTripOfTheSplitterIsExact) {
  mock::Simulation sim(mock::Scenario::parse("topology=ring,nodes=2,gpus=2,channels=2,seqs=3"));
  for (const mock::RenderedFile& f : sim.render_host_nccl_json(0)) {
    for (const std::string& l : lines_of(f.content)) {
      Line parsed;
      if (!split(l, parsed)) continue;
      EXPECT_EQ(join(parsed), l);
    }
  }
}

class SameCulpritInEveryLayout : public ::testing::TestWithParam<std::string> {};

TEST_P(SameCulpritInEveryLayout, FromTheSimulatorsTimeline) {
  const std::string spec = GetParam();
  mock::Simulation sim(mock::Scenario::parse(spec));
  std::map<std::string, Verdict> by_layout;
  for (const std::string layout : {"2.27", "2.24-2.26", "2.28"}) {
    fs::path dir = scratch_dir(layout);
    fs::remove_all(dir);
    write_layout(sim, layout, dir);
    by_layout[layout] = analyse(dir);
    fs::remove_all(dir);
  }
  const Verdict& ref = by_layout["2.27"];
  std::string summary;
  for (const auto& [layout, v] : by_layout) {
    summary += layout + ": exit " + std::to_string(v.code) + ", " + std::to_string(v.records) + " records,";
    for (const auto& [host, pid, cls] : v.culprits) summary += " " + host + "/" + std::to_string(pid) + " " + cls;
    summary += "\n";
  }
  SCOPED_TRACE(summary);
  ASSERT_EQ(ref.code, 0) << spec;
  ASSERT_GT(ref.records, 0u);
  for (const auto& [layout, v] : by_layout) {
    SCOPED_TRACE(spec + " in layout " + layout);
    EXPECT_EQ(v.code, ref.code);
    EXPECT_EQ(v.records, ref.records);  // every proxy op survives the conversion
    ASSERT_FALSE(v.culprits.empty() && !ref.culprits.empty());
    if (!ref.culprits.empty()) EXPECT_EQ(v.culprits.front(), ref.culprits.front());
    EXPECT_EQ(v.culprits.size(), ref.culprits.size());
  }
  // The reference names the injected root (a healthy run names none).
  const mock::GroundTruth& truth = sim.truth();
  // A faulty run must name a culprit; scenarios where it does not are known gaps, listed
  // under DISABLED_KnownGaps below with the reason.
  if (truth.roots.empty()) EXPECT_TRUE(ref.culprits.empty());
  if (!truth.roots.empty() && ref.culprits.empty())
    ADD_FAILURE() << spec << ": the analysis names no culprit in any layout";
  if (!truth.roots.empty() && !ref.culprits.empty()) {
    const mock::SimProcess& root = sim.processes().at(static_cast<size_t>(truth.roots[0].rank));
    EXPECT_EQ(std::get<0>(ref.culprits.front()), root.host);
    EXPECT_EQ(std::get<1>(ref.culprits.front()), root.pid);
    EXPECT_EQ(std::get<2>(ref.culprits.front()), truth.roots[0].culprit_class);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Faults, SameCulpritInEveryLayout,
    ::testing::Values("topology=ring,nodes=4,gpus=2,channels=2,seqs=12,fault=slow_gpu:5",
                      "topology=ring,nodes=4,gpus=2,channels=2,seqs=12,fault=slow_consumer:2",
                      "topology=ring,nodes=4,gpus=2,channels=2,seqs=12,fault=slow_link:3",
                      "topology=ring,nodes=4,gpus=2,channels=2,seqs=12,fault=slow_flush:4",
                      "topology=ring,nodes=4,gpus=2,channels=2,seqs=12,fault=hang:5",
                      "topology=ring,nodes=4,gpus=2,channels=2,seqs=12,fault=none",
                      "topology=pipeline,nodes=4,gpus=2,channels=2,seqs=4,fault=slow_consumer:3",
                      "topology=pipeline,nodes=4,gpus=2,channels=2,seqs=4,fault=none",
                      "topology=pipeline,nodes=4,gpus=2,channels=2,seqs=4,fault=hang:5",
                      "topology=pipeline,nodes=4,gpus=2,channels=2,seqs=4,comms=pp+world,fault=hang:2"));

// Known gaps of the older layouts (disabled; run with --gtest_also_run_disabled_tests):
// - world+dp slow_gpu: 2.27 finds the straggler through the KernelCh GPU clocks
//   (StartGpuClk), which 2.24-2.26 do not print; without them no culprit is named.
// - tree slow_gpu: 2.27 and 2.28 name the injected straggler alone; 2.24-2.26 have no GPU
//   clocks and no SendPeerWait (its time is inside SendGpuWait), and name nobody. Their last
//   resort, the rank with the shortest receive ops, judges only ranks in the same place of
//   the data flow (a ring's): here it named a healthy GPU first, whose ops were short by its
//   place in the tree.
// - pipeline slow_gpu: 2.27 finds the straggler through the gaps between its send/recv
//   kernels (StopGpuClk to StartGpuClk). 2.24-2.26 print no GPU clocks, and from 2.28 on
//   only channel 0 carries StopGpuClk, which p2p kernels (channels 16 and up) do not use;
//   the proxy phases of this noiseless pipeline hold nothing that points at the straggler.
INSTANTIATE_TEST_SUITE_P(
    DISABLED_KnownGaps, SameCulpritInEveryLayout,
    ::testing::Values("topology=ring,nodes=4,gpus=2,channels=2,seqs=12,comms=world+dp,fault=slow_gpu:3",
                      "topology=tree,nodes=4,gpus=2,channels=2,seqs=12,fault=slow_gpu:6",
                      "topology=pipeline,nodes=4,gpus=2,channels=2,seqs=4,fault=slow_gpu:3"));

}  // namespace
}  // namespace culprit
