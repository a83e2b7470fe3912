// probing's JSON exports (`-f json`, FORMATS.md §3): the same rows give the same records as
// the CSV export; nulls, numbers as strings, malformed and cut files; detection by content
// (not confused with NCCL's trace JSON) and --format probing-json.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include "io/discover.hpp"
#include "io/probing_csv_reader.hpp"
#include "io/probing_json_reader.hpp"
#include "test_probing_export.hpp"

namespace culprit {
namespace {

const char* kHeader =
    "ts,rank,tp_rank,pp_rank,dp_rank,comm_hash,coll_func,seq,channel_id,peer,is_send,n_steps,"
    "trans_bytes,send_gpu_wait_ns,send_peer_wait_ns,send_wait_ns,recv_wait_ns,recv_flush_wait_ns";

LocalData read_json(const std::string& text, const std::string& name = "export.json") {
  LocalData d;
  read_probing_json_buffer(text, name, "hostA", d);
  return d;
}

LocalData read_csv(const std::string& text, const std::string& name = "export.json") {
  LocalData d;
  read_probing_csv_buffer(text, name, "hostA", d);
  return d;
}

template <class T>
bool same_bytes(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0);
}

void expect_same(const LocalData& csv, const LocalData& json) {
  ASSERT_EQ(json.inputs.size(), 1u);
  EXPECT_EQ(json.inputs[0].format, "probing-json");
  EXPECT_EQ(json.inputs[0].error, csv.inputs[0].error);
  EXPECT_EQ(json.inputs[0].layout, csv.inputs[0].layout);
  EXPECT_EQ(json.inputs[0].records, csv.inputs[0].records);
  EXPECT_EQ(json.inputs[0].reject_reasons, csv.inputs[0].reject_reasons);
  EXPECT_EQ(json.inputs[0].notes, csv.inputs[0].notes);
  EXPECT_TRUE(same_bytes(json.ops, csv.ops));
  EXPECT_TRUE(same_bytes(json.kernel_starts, csv.kernel_starts));
  EXPECT_TRUE(same_bytes(json.inflight, csv.inflight));
  ASSERT_EQ(json.processes.size(), csv.processes.size());
  for (size_t i = 0; i < csv.processes.size(); ++i) {
    EXPECT_EQ(json.processes[i].host, csv.processes[i].host);
    EXPECT_EQ(json.processes[i].pid, csv.processes[i].pid);
    EXPECT_EQ(json.processes[i].rank, csv.processes[i].rank);
    EXPECT_EQ(json.processes[i].label, csv.processes[i].label);
  }
  ASSERT_EQ(json.comm_ranks.size(), csv.comm_ranks.size());
  for (size_t i = 0; i < csv.comm_ranks.size(); ++i) {
    EXPECT_EQ(json.comm_ranks[i].comm_hash, csv.comm_ranks[i].comm_hash);
    EXPECT_EQ(json.comm_ranks[i].has_seq, csv.comm_ranks[i].has_seq);
    EXPECT_EQ(json.comm_ranks[i].newest_seq, csv.comm_ranks[i].newest_seq);
  }
  ASSERT_EQ(json.qp_stats.size(), csv.qp_stats.size());
  for (size_t i = 0; i < csv.qp_stats.size(); ++i) EXPECT_EQ(json.qp_stats[i].sum_ns, csv.qp_stats[i].sum_ns);
}

TEST(ProbingJson, SameRowsGiveTheSameRecordsAsCsv) {
  const std::string fed = std::string(kHeader) + ",_host,_addr,_rank,_node_rank,_local_rank,_role\n";
  const std::string exports[] = {
      // plain rows, a p2p and a malformed one
      std::string(kHeader) + "\n" +
          "1765223116927674080,3,0,0,3,12715772615376301750,AllReduce,9,1,4,1,8,65536,1000,200,3000,0,0\n"
          "1765223116927675080,3,0,0,3,12715772615376301750,AllReduce,9,1,2,0,8,65536,0,0,0,5000,70\n"
          "1765223116927676080,3,0,0,3,12715772615376301750,Send,0,17,9,1,4,4096,10,20,30,0,0\n"
          "1765223116927677080,3,0,0,3,12715772615376301750,AllReduce,9,-1,2,0,8,65536,0,0,0,5000,70\n",
      // the federated export with the converter's blank unsigned cells
      fed + "1,3,0,1,2,,AllReduce,,1,4,1,8,,1000,200,3000,0,0,node007,10.0.0.7:9700,59,7,3,\"dp=2,pp=1,tp=0\"\n"
            "2,4,0,1,2,,AllReduce,,1,3,0,8,,0,0,0,4000,0,node007,10.0.0.7:9700,60,7,4,\"dp=2,pp=1,tp=0\"\n",
      // negative cast hashes, two communicators without tags
      std::string(kHeader) + "\n" +
          "1,0,-1,-1,-1,-7046029254386353131,AllReduce,9,1,1,1,8,65536,1000,0,0,0,0\n"
          "2,1,-1,-1,-1,-7046029254386353131,AllReduce,9,1,0,1,8,65536,1000,0,0,0,0\n"
          "3,0,-1,-1,-1,55,AllGather,2,1,1,1,8,65536,1000,0,0,0,0\n",
      // nccl.net_qp with its blank wr_id and length
      "ts,rank,device,qp_num,wr_id,opcode,length,duration_ns\n1,3,0,77,,0,,1000\n2,3,0,77,,0,,3000\n",
  };
  for (const std::string& csv : exports) {
    SCOPED_TRACE(csv);
    LocalData c = read_csv(csv);
    LocalData j = read_json(testing::probing_json(csv));
    EXPECT_GT(c.inputs[0].records, 0u);
    expect_same(c, j);
  }
}

// The layout of `probing ... -f json` (serde_json's pretty printer, keys in sorted order).
const char* kPretty = R"([
  {
    "channel_id": 1,
    "coll_func": "AllReduce",
    "comm_hash": null,
    "dp_rank": 3,
    "is_send": 1,
    "n_steps": 8,
    "peer": 4,
    "pp_rank": 0,
    "rank": 3,
    "recv_flush_wait_ns": 0,
    "recv_wait_ns": 0,
    "send_gpu_wait_ns": 1000,
    "send_peer_wait_ns": 200,
    "send_wait_ns": 3000,
    "seq": null,
    "tp_rank": 0,
    "trans_bytes": null,
    "ts": 1765223116927674080
  },
  {
    "channel_id": "1",
    "coll_func": "AllReduce",
    "comm_hash": "-7046029254386353131",
    "dp_rank": 3,
    "is_send": 0,
    "n_steps": 8.0,
    "nested": {"rank": 99, "list": [1, 2]},
    "peer": 2,
    "pp_rank": 0,
    "rank": "3",
    "recv_flush_wait_ns": 70,
    "recv_wait_ns": 5000,
    "send_gpu_wait_ns": 0,
    "send_peer_wait_ns": 0,
    "send_wait_ns": 0,
    "seq": 9,
    "tp_rank": 0,
    "trans_bytes": 65536,
    "ts": 1765223116927675080,
    "verified": true
  }
]
)";

TEST(ProbingJson, PrettyPrintedRowsWithNullsAndNumbersAsStrings) {
  LocalData d = read_json(kPretty, "node3/proxy_ops.json");
  const InputReport& in = d.inputs.at(0);
  EXPECT_EQ(in.error, "");
  EXPECT_EQ(in.format, "probing-json");
  EXPECT_EQ(in.layout, "proxy_ops");
  EXPECT_EQ(in.records, 2u);
  // The two rows name two communicators (an unnamed one and a cast hash) and nothing names
  // their processes except tp/pp/dp (all known: tp=0,pp=0,dp=3).
  ASSERT_EQ(d.ops.size(), 2u);
  EXPECT_EQ(d.ops[1].comm_hash, 11400714819323198485ull);
  EXPECT_EQ(d.ops[1].rank, 3);
  EXPECT_EQ(d.ops[1].channel, 1);
  EXPECT_EQ(d.ops[1].steps, 8u);
  EXPECT_EQ(d.ops[1].seq, 9u);
  EXPECT_EQ(d.ops[1].bytes, 65536u);
  EXPECT_EQ(d.ops[1].phase_ns[kRecvWait], 5000u);
  EXPECT_EQ(d.ops[0].seq_unknown, 1);
  EXPECT_EQ(d.ops[0].process, d.ops[1].process);
  EXPECT_EQ(d.processes.at(d.ops[0].process).label, "tp=0,pp=0,dp=3");
}

TEST(ProbingJson, MalformedFileKeepsTheRowsBeforeTheError) {
  std::string full = kPretty;
  // Cut inside the second row: the first is kept, the file has one error line.
  LocalData cut = read_json(full.substr(0, full.find("\"nested\"")));
  EXPECT_EQ(cut.inputs[0].records, 1u);
  EXPECT_EQ(cut.ops.size(), 1u);
  const std::string& error = cut.inputs[0].error;
  EXPECT_EQ(error.rfind("malformed JSON at byte ", 0), 0u) << error;
  EXPECT_NE(error.find("unexpected end of input"), std::string::npos) << error;
  EXPECT_NE(error.find("the 1 rows before it are kept"), std::string::npos) << error;
  EXPECT_EQ(error.find('\n'), std::string::npos);
  EXPECT_LT(error.size(), 180u);
  // Junk in the middle.
  std::string junk = full;
  junk.replace(junk.find("\"peer\": 2"), 9, "\"peer\": 2x");
  LocalData bad = read_json(junk);
  EXPECT_EQ(bad.ops.size(), 1u);
  EXPECT_EQ(bad.inputs[0].error.rfind("malformed JSON at byte ", 0), 0u);
}

TEST(ProbingJson, FilesThatAreNoExport) {
  EXPECT_EQ(read_json("").inputs[0].error, "empty JSON file");
  EXPECT_EQ(read_json(" \n").inputs[0].error, "empty JSON file");
  EXPECT_EQ(read_json("[]").inputs[0].error, "empty JSON file");
  EXPECT_EQ(read_json("42").inputs[0].error, "not a probing JSON export (an array of row objects)");
  EXPECT_EQ(read_json("[{\"a\": 1}, {\"a\": 2}]").inputs[0].error,
            "JSON columns are none of nccl.proxy_ops (rank, comm_hash, channel_id, peer, is_send), "
            "nccl.net_qp, nccl.inflight_ops, nccl.coll_perf, nccl.profiler_counters");
  LocalData mixed = read_json("[1, \"x\", [2], {\"rank\": 0, \"qp_num\": 5, \"duration_ns\": 10}]");
  EXPECT_EQ(mixed.inputs[0].records, 1u);
  EXPECT_EQ(mixed.inputs[0].reject_reasons.at("JSON array element that is not a row object"), 3u);
  EXPECT_EQ(read_json("{garbage").inputs[0].error.rfind("malformed JSON at byte", 0), 0u);
  // A lone row object is read as one row.
  EXPECT_EQ(read_json("{\"rank\": 0, \"qp_num\": 5, \"duration_ns\": 10}").inputs[0].records, 1u);
}

// ---- detection ----------------------------------------------------------------------------

class TempDir {
 public:
  TempDir() : path_(std::filesystem::temp_directory_path() / ("culprit_pjson_" + std::to_string(getpid()))) {
    std::filesystem::create_directories(path_);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  std::filesystem::path put(const std::string& name, const std::string& text) const {
    std::ofstream(path_ / name) << text;
    return path_ / name;
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

TEST(ProbingDiscover, JsonExportsAreKnownByTheirKeys) {
  TempDir dir;
  const std::string trace =
      "[\n{\"name\": \"Group\", \"cat\": \"GROUP\", \"ph\": \"b\", \"id\": 0, \"pid\": 4242, \"tid\": 1, "
      "\"ts\": 1.000000, \"args\": {\"groupId\": 0}},\n";
  auto pretty = dir.put("proxy_ops.json", kPretty);
  auto compact = dir.put("one_line.json", "[{\"comm_hash\":null,\"rank\":0,\"peer\":1,\"is_send\":1,\"channel_id\":0}]");
  auto qp = dir.put("qp.txt", "[\n  {\n    \"device\": 0,\n    \"qp_num\": 7,\n    \"rank\": 0,\n    \"duration_ns\": 5\n  }\n]");
  auto empty = dir.put("inflight.json", "[]\n");
  auto nccl = dir.put("trace_77_0.json", trace);
  auto csv = dir.put("as_json.csv", std::string(kHeader) + "\n");
  EXPECT_EQ(detect_format(pretty.string(), "auto"), "probing-json");
  EXPECT_EQ(detect_format(compact.string(), "auto"), "probing-json");  // not probing-csv
  EXPECT_EQ(detect_format(qp.string(), "auto"), "probing-json");
  EXPECT_EQ(detect_format(empty.string(), "auto"), "probing-json");
  EXPECT_EQ(detect_format(nccl.string(), "auto"), "nccl-json");
  EXPECT_EQ(detect_format(csv.string(), "auto"), "probing-csv");
  EXPECT_EQ(detect_format(nccl.string(), "probing-json"), "probing-json");  // forced

  Discovery found = discover_node_local(dir.path().string(), "hostA", "auto");
  LocalData d;
  read_input_files(found.files, d, 1);
  ASSERT_EQ(d.inputs.size(), 6u);
  for (const InputReport& in : d.inputs) {
    if (in.path == pretty.string()) {
      EXPECT_EQ(in.format, "probing-json");
      EXPECT_EQ(in.records, 2u);
      EXPECT_EQ(in.error, "");
    }
    if (in.path == qp.string()) EXPECT_EQ(in.records, 1u);
    if (in.path == nccl.string()) EXPECT_EQ(in.format, "nccl-json");
  }
  LocalData missing;
  read_probing_json_file((dir.path() / "gone.json").string(), "hostA", missing);
  EXPECT_EQ(missing.inputs[0].error, "cannot read: No such file or directory");
}

}  // namespace
}  // namespace culprit
