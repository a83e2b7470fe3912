// Output module: HDF5 results file (round trip and CONTRACT.md layout checked with the raw C
// API and, when available, h5py), atomic writes, JSON, text report.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <hdf5.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "core/results.hpp"
#include "core/version.hpp"
#include "output/h5_types.hpp"
#include "output/results_io.hpp"

namespace fs = std::filesystem;
using namespace culprit;

namespace {

constexpr uint64_t kBigHash = 0xF00DCAFEDEADBEEFull;  // above INT64_MAX: must stay unsigned
constexpr uint64_t kSmallHash = 0x1234ull;

// A small job: node001 pid 4702 is a slow GPU (producer), node003/node004 share a slow link.
// Chains: 4711 -> 4703 -> 4702 (root) and 4703 -> 4702; 5003 -> 5001 (link root).
AnalysisResults sample_results() {
  AnalysisResults r;
  RunInfo& i = r.info;
  i.tool_version = kToolVersion;
  i.format_version = kFormatVersion;
  i.seq_window = 17;
  i.analyzer_ranks = 4;
  i.processes = 7;
  i.created_utc = "2025-01-02T03:04:05Z";
  i.input = "topology=ring,nodes=4,gpus=2,fault=slow_gpu:0";
  i.status = "partial";
  i.reduce_path = "cuda";
  i.mpi_transport = "pml=ob1 btl=self,vader,tcp (tool default); RDMA libraries loaded: none";
  i.notes = {"node005: no profiler data found", "seq window clipped to 12 on comm 0x1234"};

  auto proc = [&](uint32_t id, std::string host, int64_t pid, std::string role, std::string cls,
                  int64_t root, int32_t depth, uint64_t wait, uint64_t blame, double score) {
    ProcessRow p;
    p.process_id = id;
    p.host = std::move(host);
    p.pid = pid;
    p.role = std::move(role);
    p.culprit_class = std::move(cls);
    p.attributed_root = root;
    p.chain_depth = depth;
    p.wait_ns = wait;
    p.blame_ns = blame;
    p.score = score;
    r.processes.push_back(p);
  };
  proc(0, "node001", 4702, "culprit", "gpu_producer", -1, 0, 0, 1200000000ull, 0.93);
  proc(1, "node001", 4703, "victim", "none", 0, 1, 800000000ull, 0, 0.125);
  proc(2, "node002", 4711, "victim", "none", 0, 2, 700000000ull, 0, 0.0625);
  proc(3, "node002", 4712, "healthy", "none", -1, 0, 12, 0, 0.0);
  proc(4, "node003", 5001, "culprit", "network_link", -1, 0, 0, 400000000ull, 0.5);
  proc(5, "node004", 5002, "healthy", "none", -1, 0, 0, 0, 0.0);
  proc(6, "node004", 5003, "victim", "none", 4, 1, 300000000ull, 0, 0.25);
  r.processes[2].rank = 2;  // an input named the global rank too
  r.processes[3].label = "tp=1,pp=0,dp=0";

  for (uint32_t p = 0; p < 7; ++p) {
    r.comm_ranks.push_back({kBigHash, static_cast<int32_t>(p), 7, p});
  }
  r.comm_ranks.push_back({kSmallHash, 0, 2, 4});
  r.comm_ranks.push_back({kSmallHash, 1, 2, 5});

  uint64_t v = 1;
  auto edge = [&](uint64_t comm, int32_t ch, uint32_t src, uint32_t dst, int32_t sr, int32_t dr,
                  const char* verdict) {
    EdgeRow e;
    e.comm_hash = comm;
    e.channel = ch;
    e.src_process = src;
    e.dst_process = dst;
    e.src_rank = sr;
    e.dst_rank = dr;
    e.send_gpu_wait_ns = v++;
    e.send_peer_wait_ns = v++;
    e.send_wait_ns = v++;
    e.recv_wait_ns = v++ * 1000000;
    e.recv_flush_wait_ns = v++;
    e.recv_gpu_wait_ns = v++;
    e.send_steps = v++;
    e.recv_steps = v++;
    e.bytes = (1ull << 40) + v++;
    e.verdict = verdict;
    r.edges.push_back(e);
  };
  edge(kBigHash, 0, 0, 1, 0, 1, "late_data");
  edge(kBigHash, 1, 1, 2, 1, 2, "normal");
  edge(kBigHash, 0, 2, 0, 2, 0, "no_credit");
  edge(kSmallHash, 3, 4, 5, 0, 1, "slow_link");
  edge(kBigHash, 2, 5, 6, 5, 6, "slow_flush");

  r.culprits.push_back({0, "node001", 4702, "gpu_producer", -1, 1200000000ull, 0.75, 0.31, 2, 0.93});
  r.culprits.push_back({4, "node003", 5001, "network_link", 5, 400000000ull, 0.25, 0.08, 1, 0.5});

  r.chains = {{2, 0, 2}, {2, 1, 1}, {2, 2, 0}, {1, 0, 1}, {1, 1, 0}, {6, 0, 6}, {6, 1, 4}};

  r.inputs.push_back(
      {"node001", "/dev/shm/nccl-culprit/42/trace_f00d_0.json", "nccl-json", 1000, 0});
  r.inputs.push_back({"node002", "/dev/shm/nccl-culprit/42/proxy_ops.csv", "probing-csv", 250, 3});
  r.inputs.push_back({"node003", "/dev/shm/nccl-culprit/42/shard-0.bin", "shard", 77, 1});
  return r;
}

// ---- field-by-field comparisons --------------------------------------------------------------

void expect_equal(const RunInfo& a, const RunInfo& b) {
  EXPECT_EQ(a.tool_version, b.tool_version);
  EXPECT_EQ(a.format_version, b.format_version);
  EXPECT_EQ(a.seq_window, b.seq_window);
  EXPECT_EQ(a.analyzer_ranks, b.analyzer_ranks);
  EXPECT_EQ(a.processes, b.processes);
  EXPECT_EQ(a.created_utc, b.created_utc);
  EXPECT_EQ(a.input, b.input);
  EXPECT_EQ(a.status, b.status);
  EXPECT_EQ(a.reduce_path, b.reduce_path);
  EXPECT_EQ(a.mpi_transport, b.mpi_transport);
  EXPECT_EQ(a.notes, b.notes);
}

void expect_equal(const AnalysisResults& a, const AnalysisResults& b) {
  expect_equal(a.info, b.info);
  ASSERT_EQ(a.processes.size(), b.processes.size());
  for (std::size_t i = 0; i < a.processes.size(); ++i) {
    SCOPED_TRACE("processes row " + std::to_string(i));
    const ProcessRow &x = a.processes[i], &y = b.processes[i];
    EXPECT_EQ(x.process_id, y.process_id);
    EXPECT_EQ(x.host, y.host);
    EXPECT_EQ(x.pid, y.pid);
    EXPECT_EQ(x.rank, y.rank);
    EXPECT_EQ(x.label, y.label);
    EXPECT_EQ(x.role, y.role);
    EXPECT_EQ(x.culprit_class, y.culprit_class);
    EXPECT_EQ(x.attributed_root, y.attributed_root);
    EXPECT_EQ(x.chain_depth, y.chain_depth);
    EXPECT_EQ(x.wait_ns, y.wait_ns);
    EXPECT_EQ(x.blame_ns, y.blame_ns);
    EXPECT_EQ(x.score, y.score);
  }
  ASSERT_EQ(a.comm_ranks.size(), b.comm_ranks.size());
  for (std::size_t i = 0; i < a.comm_ranks.size(); ++i) {
    SCOPED_TRACE("comm_ranks row " + std::to_string(i));
    EXPECT_EQ(a.comm_ranks[i].comm_hash, b.comm_ranks[i].comm_hash);
    EXPECT_EQ(a.comm_ranks[i].comm_rank, b.comm_ranks[i].comm_rank);
    EXPECT_EQ(a.comm_ranks[i].n_ranks, b.comm_ranks[i].n_ranks);
    EXPECT_EQ(a.comm_ranks[i].process_id, b.comm_ranks[i].process_id);
  }
  ASSERT_EQ(a.edges.size(), b.edges.size());
  for (std::size_t i = 0; i < a.edges.size(); ++i) {
    SCOPED_TRACE("edges row " + std::to_string(i));
    const EdgeRow &x = a.edges[i], &y = b.edges[i];
    EXPECT_EQ(x.comm_hash, y.comm_hash);
    EXPECT_EQ(x.channel, y.channel);
    EXPECT_EQ(x.src_process, y.src_process);
    EXPECT_EQ(x.dst_process, y.dst_process);
    EXPECT_EQ(x.src_rank, y.src_rank);
    EXPECT_EQ(x.dst_rank, y.dst_rank);
    EXPECT_EQ(x.send_gpu_wait_ns, y.send_gpu_wait_ns);
    EXPECT_EQ(x.send_peer_wait_ns, y.send_peer_wait_ns);
    EXPECT_EQ(x.send_wait_ns, y.send_wait_ns);
    EXPECT_EQ(x.recv_wait_ns, y.recv_wait_ns);
    EXPECT_EQ(x.recv_flush_wait_ns, y.recv_flush_wait_ns);
    EXPECT_EQ(x.recv_gpu_wait_ns, y.recv_gpu_wait_ns);
    EXPECT_EQ(x.send_steps, y.send_steps);
    EXPECT_EQ(x.recv_steps, y.recv_steps);
    EXPECT_EQ(x.bytes, y.bytes);
    EXPECT_EQ(x.verdict, y.verdict);
  }
  ASSERT_EQ(a.culprits.size(), b.culprits.size());
  for (std::size_t i = 0; i < a.culprits.size(); ++i) {
    SCOPED_TRACE("culprits row " + std::to_string(i));
    const CulpritRow &x = a.culprits[i], &y = b.culprits[i];
    EXPECT_EQ(x.process_id, y.process_id);
    EXPECT_EQ(x.host, y.host);
    EXPECT_EQ(x.pid, y.pid);
    EXPECT_EQ(x.culprit_class, y.culprit_class);
    EXPECT_EQ(x.peer_process_id, y.peer_process_id);
    EXPECT_EQ(x.blame_ns, y.blame_ns);
    EXPECT_EQ(x.blame_share, y.blame_share);
    EXPECT_EQ(x.job_share, y.job_share);
    EXPECT_EQ(x.victims, y.victims);
    EXPECT_EQ(x.score, y.score);
  }
  ASSERT_EQ(a.chains.size(), b.chains.size());
  for (std::size_t i = 0; i < a.chains.size(); ++i) {
    SCOPED_TRACE("chains row " + std::to_string(i));
    EXPECT_EQ(a.chains[i].victim, b.chains[i].victim);
    EXPECT_EQ(a.chains[i].hop, b.chains[i].hop);
    EXPECT_EQ(a.chains[i].process_id, b.chains[i].process_id);
  }
  ASSERT_EQ(a.inputs.size(), b.inputs.size());
  for (std::size_t i = 0; i < a.inputs.size(); ++i) {
    SCOPED_TRACE("inputs row " + std::to_string(i));
    EXPECT_EQ(a.inputs[i].host, b.inputs[i].host);
    EXPECT_EQ(a.inputs[i].path, b.inputs[i].path);
    EXPECT_EQ(a.inputs[i].format, b.inputs[i].format);
    EXPECT_EQ(a.inputs[i].records, b.inputs[i].records);
    EXPECT_EQ(a.inputs[i].rejected, b.inputs[i].rejected);
  }
}

// ---- raw HDF5 layout checks (CONTRACT.md, independent of the writer's own type code) ---------

struct Member {
  const char* name;
  char kind;         // 'u' unsigned int, 'i' signed int, 'f' float, 's' fixed string
  std::size_t size;  // bytes
};

const std::vector<std::pair<std::string, std::vector<Member>>>& contract_tables() {
  static const std::vector<std::pair<std::string, std::vector<Member>>> tables = {
      {"processes",
       {{"process_id", 'u', 4},
        {"host", 's', 64},
        {"pid", 'i', 8},
        {"rank", 'i', 8},
        {"label", 's', 32},
        {"role", 's', 16},
        {"culprit_class", 's', 24},
        {"attributed_root", 'i', 8},
        {"chain_depth", 'i', 4},
        {"wait_ns", 'u', 8},
        {"blame_ns", 'u', 8},
        {"score", 'f', 8}}},
      {"comm_ranks",
       {{"comm_hash", 'u', 8}, {"comm_rank", 'i', 4}, {"n_ranks", 'i', 4}, {"process_id", 'u', 4}}},
      {"edges",
       {{"comm_hash", 'u', 8},
        {"channel", 'i', 4},
        {"src_process", 'u', 4},
        {"dst_process", 'u', 4},
        {"src_rank", 'i', 4},
        {"dst_rank", 'i', 4},
        {"send_gpu_wait_ns", 'u', 8},
        {"send_peer_wait_ns", 'u', 8},
        {"send_wait_ns", 'u', 8},
        {"recv_wait_ns", 'u', 8},
        {"recv_flush_wait_ns", 'u', 8},
        {"recv_gpu_wait_ns", 'u', 8},
        {"send_steps", 'u', 8},
        {"recv_steps", 'u', 8},
        {"bytes", 'u', 8},
        {"verdict", 's', 16}}},
      {"culprits",
       {{"process_id", 'u', 4},
        {"host", 's', 64},
        {"pid", 'i', 8},
        {"culprit_class", 's', 24},
        {"peer_process_id", 'i', 8},
        {"blame_ns", 'u', 8},
        {"blame_share", 'f', 8},
        {"job_share", 'f', 8},
        {"victims", 'u', 4},
        {"score", 'f', 8}}},
      {"chains", {{"victim", 'u', 4}, {"hop", 'u', 4}, {"process_id", 'u', 4}}},
      {"inputs",
       {{"host", 's', 64},
        {"path", 's', 256},
        {"format", 's', 16},
        {"records", 'u', 8},
        {"rejected", 'u', 8}}},
  };
  return tables;
}

// Small RAII for the test's own raw HDF5 calls.
struct Id {
  hid_t id;
  explicit Id(hid_t i) : id(i) {}
  ~Id() {
    if (id >= 0) H5Idec_ref(id);
  }
  Id(const Id&) = delete;
  Id& operator=(const Id&) = delete;
};

void check_string_type(hid_t t, const std::string& what, std::size_t size) {
  EXPECT_EQ(H5Tget_class(t), H5T_STRING) << what;
  EXPECT_LE(H5Tis_variable_str(t), 0) << what << " must be fixed-length";
  if (size) {
    EXPECT_EQ(H5Tget_size(t), size) << what;
  }
  EXPECT_EQ(H5Tget_strpad(t), H5T_STR_NULLPAD) << what;
}

void check_contract_layout(const std::string& path, const AnalysisResults& expected) {
  Id file(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT));
  ASSERT_GE(file.id, 0) << path;

  const char* string_attrs[] = {"tool_version", "created_utc", "input", "status", "reduce_path",
                                "mpi_transport"};
  for (const char* name : string_attrs) {
    ASSERT_GT(H5Aexists(file.id, name), 0) << "root attribute " << name;
    Id attr(H5Aopen(file.id, name, H5P_DEFAULT));
    Id type(H5Aget_type(attr.id));
    check_string_type(type.id, std::string("attribute ") + name, 0);
  }
  const char* int_attrs[] = {"format_version", "seq_window", "analyzer_ranks", "processes"};
  for (const char* name : int_attrs) {
    ASSERT_GT(H5Aexists(file.id, name), 0) << "root attribute " << name;
    Id attr(H5Aopen(file.id, name, H5P_DEFAULT));
    Id type(H5Aget_type(attr.id));
    EXPECT_EQ(H5Tget_class(type.id), H5T_INTEGER) << name;
    int64_t value = -1;
    ASSERT_GE(H5Aread(attr.id, H5T_NATIVE_INT64, &value), 0);
    const std::string n = name;
    const int64_t want = n == "format_version"   ? 1
                         : n == "seq_window"     ? expected.info.seq_window
                         : n == "analyzer_ranks" ? expected.info.analyzer_ranks
                                                 : expected.info.processes;
    EXPECT_EQ(value, want) << name;
  }
  {
    Id attr(H5Aopen(file.id, "status", H5P_DEFAULT));
    Id type(H5Aget_type(attr.id));
    std::string buf(H5Tget_size(type.id), '\0');
    ASSERT_GE(H5Aread(attr.id, type.id, buf.data()), 0);
    EXPECT_EQ(std::string(buf.c_str()), expected.info.status);
  }

  const std::size_t rows[] = {expected.processes.size(), expected.comm_ranks.size(),
                              expected.edges.size(),     expected.culprits.size(),
                              expected.chains.size(),    expected.inputs.size()};
  std::size_t t = 0;
  for (const auto& [name, members] : contract_tables()) {
    SCOPED_TRACE("dataset /" + name);
    ASSERT_GT(H5Lexists(file.id, name.c_str(), H5P_DEFAULT), 0);
    Id dset(H5Dopen2(file.id, name.c_str(), H5P_DEFAULT));
    ASSERT_GE(dset.id, 0);
    Id space(H5Dget_space(dset.id));
    ASSERT_EQ(H5Sget_simple_extent_ndims(space.id), 1);
    hsize_t dims[1] = {0};
    H5Sget_simple_extent_dims(space.id, dims, nullptr);
    EXPECT_EQ(dims[0], rows[t++]);

    Id type(H5Dget_type(dset.id));
    ASSERT_EQ(H5Tget_class(type.id), H5T_COMPOUND);
    EXPECT_EQ(H5Tget_nmembers(type.id), static_cast<int>(members.size()));
    for (const Member& m : members) {
      const int index = H5Tget_member_index(type.id, m.name);
      ASSERT_GE(index, 0) << "missing field " << m.name;
      Id mt(H5Tget_member_type(type.id, static_cast<unsigned>(index)));
      const std::string what = name + "." + m.name;
      switch (m.kind) {
        case 's':
          check_string_type(mt.id, what, m.size);
          break;
        case 'f':
          EXPECT_EQ(H5Tget_class(mt.id), H5T_FLOAT) << what;
          EXPECT_EQ(H5Tget_size(mt.id), m.size) << what;
          EXPECT_GT(H5Tequal(mt.id, H5T_IEEE_F64LE), 0) << what;
          break;
        default:
          EXPECT_EQ(H5Tget_class(mt.id), H5T_INTEGER) << what;
          EXPECT_EQ(H5Tget_size(mt.id), m.size) << what;
          EXPECT_EQ(H5Tget_sign(mt.id), m.kind == 'u' ? H5T_SGN_NONE : H5T_SGN_2) << what;
          EXPECT_EQ(H5Tget_order(mt.id), H5T_ORDER_LE) << what;
          break;
      }
    }
  }
}

// ---- fixture ----------------------------------------------------------------------------------

class OutputTest : public testing::Test {
 protected:
  void SetUp() override {
    const auto* info = testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() /
           ("culprit-output-" + std::to_string(::getpid()) + "-" + info->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  std::vector<std::string> listing() const {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(dir_))
      names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
  }
  fs::path dir_;
};

std::string report_of(const AnalysisResults& r) {
  std::ostringstream out;
  render_report(r, out);
  return out.str();
}

std::size_t line_count(const std::string& s) {
  return static_cast<std::size_t>(std::count(s.begin(), s.end(), '\n'));
}

bool has_h5py() {
  if (::access("/usr/bin/python3", X_OK) != 0) return false;
  return std::system("/usr/bin/python3 -E -s -c 'import h5py' >/dev/null 2>&1") == 0;
}

}  // namespace

// ---- HDF5 round trip and layout ---------------------------------------------------------------

TEST_F(OutputTest, H5RoundTripKeepsEveryField) {
  const AnalysisResults original = sample_results();
  const std::string file = path("results.h5");
  write_results_h5(original, file);
  EXPECT_EQ(listing(), std::vector<std::string>{"results.h5"});  // no temporary left behind
  const AnalysisResults back = read_results_h5(file);
  expect_equal(original, back);
}

TEST_F(OutputTest, H5LayoutMatchesContract) {
  const AnalysisResults original = sample_results();
  const std::string file = path("results.h5");
  write_results_h5(original, file);
  check_contract_layout(file, original);
}

TEST_F(OutputTest, H5EmptyTablesAreZeroRowDatasets) {
  AnalysisResults empty;
  empty.info.tool_version = kToolVersion;
  empty.info.created_utc = "2025-01-01T00:00:00Z";
  empty.info.input = "";  // empty strings must survive too
  const std::string file = path("empty.h5");
  write_results_h5(empty, file);
  check_contract_layout(file, empty);
  const AnalysisResults back = read_results_h5(file);
  expect_equal(empty, back);
}

TEST_F(OutputTest, H5LongStringsAreTruncatedToTheField) {
  AnalysisResults r = sample_results();
  r.processes[3].host = std::string(100, 'h');
  r.inputs[0].path = "/" + std::string(300, 'p');
  r.edges[0].verdict = "a_very_long_verdict_name";
  // 62 ASCII bytes then a 2-byte UTF-8 character: it must not be cut in half at byte 63.
  r.culprits[1].host = std::string(62, 'u') + "\xC3\xA9" + "tail";
  const std::string file = path("long.h5");
  write_results_h5(r, file);
  const AnalysisResults back = read_results_h5(file);
  EXPECT_EQ(back.processes[3].host, std::string(63, 'h'));
  EXPECT_EQ(back.inputs[0].path, "/" + std::string(254, 'p'));
  EXPECT_EQ(back.edges[0].verdict, "a_very_long_ver");
  EXPECT_EQ(back.culprits[1].host, std::string(62, 'u'));
}

TEST_F(OutputTest, H5FillsMissingHeaderFields) {
  AnalysisResults r;           // no tool version, no creation time
  r.info.format_version = 99;  // the writer writes its own format version
  const std::string file = path("defaults.h5");
  write_results_h5(r, file);
  const AnalysisResults back = read_results_h5(file);
  EXPECT_EQ(back.info.tool_version, kToolVersion);
  EXPECT_EQ(back.info.format_version, kFormatVersion);
  const std::string& t = back.info.created_utc;  // "YYYY-MM-DDTHH:MM:SSZ"
  ASSERT_EQ(t.size(), 20u) << t;
  EXPECT_EQ(t[4], '-');
  EXPECT_EQ(t[10], 'T');
  EXPECT_EQ(t[19], 'Z');
  EXPECT_EQ(back.info.reduce_path, "cpu");
  EXPECT_TRUE(back.info.notes.empty());
}

TEST(OutputStrings, PutAndGetString) {
  char field[8];
  h5::put_string(field, sizeof field, "abc");
  EXPECT_EQ(std::string(field, 8), std::string("abc\0\0\0\0\0", 8));
  EXPECT_EQ(h5::get_string(field, sizeof field), "abc");
  h5::put_string(field, sizeof field, "abcdefghij");
  EXPECT_EQ(h5::get_string(field, sizeof field), "abcdefg");
  EXPECT_EQ(field[7], '\0');
  const char full[4] = {'w', 'x', 'y', 'z'};  // written by another tool without a NUL
  EXPECT_EQ(h5::get_string(full, 4), "wxyz");
  EXPECT_EQ(h5::truncated_length("abcdef\xE2\x82\xAC", 8), 6u);  // euro sign not split
  EXPECT_EQ(h5::truncated_length("", 8), 0u);
}

TEST_F(OutputTest, H5OverwritesAnExistingFile) {
  const std::string file = path("results.h5");
  { std::ofstream(file) << "old contents"; }
  write_results_h5(sample_results(), file);
  EXPECT_EQ(read_results_h5(file).culprits.size(), 2u);
  EXPECT_EQ(listing(), std::vector<std::string>{"results.h5"});
}

TEST_F(OutputTest, H5WriteIntoMissingDirectoryThrowsAndLeavesNothing) {
  const std::string file = path("no/such/dir/results.h5");
  try {
    write_results_h5(sample_results(), file);
    FAIL() << "expected an exception";
  } catch (const std::runtime_error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find(file), std::string::npos) << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << "one line: " << msg;
  }
  EXPECT_FALSE(fs::exists(file));
  EXPECT_TRUE(listing().empty());
}

TEST_F(OutputTest, H5FailedRenameRemovesTheTemporary) {
  // The final name is a non-empty directory: the file is written, the rename fails.
  const std::string file = path("results.h5");
  fs::create_directories(fs::path(file) / "occupied");
  EXPECT_THROW(write_results_h5(sample_results(), file), std::runtime_error);
  EXPECT_EQ(listing(), std::vector<std::string>{"results.h5"});
  EXPECT_TRUE(fs::is_directory(file));
}

TEST_F(OutputTest, ADeviceTargetIsWrittenIntoNotReplaced) {
  // `--json /dev/null` discards the output; renaming a file over the device (as root) would
  // replace /dev/null with a regular file for the whole machine.
  auto is_device = [] {
    struct stat st {};
    return ::stat("/dev/null", &st) == 0 && S_ISCHR(st.st_mode);
  };
  ASSERT_TRUE(is_device());
  write_results_json(sample_results(), "/dev/null");
  write_results_h5(sample_results(), "/dev/null");
  write_results_html(sample_results(), "/dev/null");
  EXPECT_TRUE(is_device());
  if (!is_device() && ::geteuid() == 0) {  // the bug back: mend the machine for the tests after
    ::unlink("/dev/null");
    ::mknod("/dev/null", S_IFCHR | 0666, makedev(1, 3));
    ::chmod("/dev/null", 0666);
  }
  EXPECT_FALSE(fs::exists("/dev/null.tmp." + std::to_string(::getpid())));
}

TEST_F(OutputTest, ANamedPipeReceivesTheWholeFile) {
  const std::string fifo = path("results.pipe");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  // Held open for reading (and writing, so that opening never blocks) by the test itself; the
  // small file fits the pipe's buffer. Were the pipe replaced, nothing would arrive here.
  const int fd = ::open(fifo.c_str(), O_RDWR | O_NONBLOCK);
  ASSERT_GE(fd, 0);
  write_results_json(sample_results(), fifo);
  std::string received;
  char buffer[4096];
  for (ssize_t got; (got = ::read(fd, buffer, sizeof buffer)) > 0;) received.append(buffer, static_cast<size_t>(got));
  ::close(fd);
  ASSERT_FALSE(received.empty());
  EXPECT_EQ(nlohmann::json::parse(received).at("culprits").size(), 2u);
  struct stat st {};
  ASSERT_EQ(::stat(fifo.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
  EXPECT_EQ(listing(), std::vector<std::string>{"results.pipe"});  // no temporary beside it
}

TEST_F(OutputTest, H5ReadErrorsNameFileAndProblem) {
  const std::string missing = path("missing.h5");
  try {
    read_results_h5(missing);
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(missing), std::string::npos) << e.what();
  }

  const std::string text = path("text.h5");
  { std::ofstream(text) << "this is not HDF5\n"; }
  try {
    read_results_h5(text);
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("not an HDF5 file"), std::string::npos) << e.what();
  }

  const std::string broken = path("broken.h5");
  write_results_h5(sample_results(), broken);
  {
    Id file(H5Fopen(broken.c_str(), H5F_ACC_RDWR, H5P_DEFAULT));
    ASSERT_GE(file.id, 0);
    ASSERT_GE(H5Ldelete(file.id, "edges", H5P_DEFAULT), 0);
  }
  try {
    read_results_h5(broken);
    FAIL();
  } catch (const std::runtime_error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find(broken), std::string::npos) << msg;
    EXPECT_NE(msg.find("/edges"), std::string::npos) << msg;
  }

  write_results_h5(sample_results(), broken);
  {
    Id file(H5Fopen(broken.c_str(), H5F_ACC_RDWR, H5P_DEFAULT));
    ASSERT_GE(H5Adelete(file.id, "status"), 0);
  }
  try {
    read_results_h5(broken);
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("'status'"), std::string::npos) << e.what();
  }
}

TEST_F(OutputTest, H5ReadableByH5py) {
  if (!has_h5py()) GTEST_SKIP() << "/usr/bin/python3 with h5py is not available";
  const AnalysisResults r = sample_results();
  const std::string file = path("results.h5");
  const std::string empty_file = path("empty.h5");
  write_results_h5(r, file);
  write_results_h5(AnalysisResults{}, empty_file);

  const std::string script = path("check.py");
  {
    std::ofstream py(script);
    py << R"PY(
import sys
import h5py
import numpy as np

def s(v):
    return v.decode() if isinstance(v, (bytes, np.bytes_)) else str(v)

full, empty = sys.argv[1], sys.argv[2]
tables = ["processes", "comm_ranks", "edges", "culprits", "chains", "inputs"]
with h5py.File(full, "r") as f:
    for a in ["tool_version", "format_version", "seq_window", "analyzer_ranks", "processes",
              "created_utc", "input", "status"]:
        assert a in f.attrs, a
    assert int(f.attrs["format_version"]) == 1
    assert s(f.attrs["status"]) == "partial", f.attrs["status"]
    assert s(f.attrs["reduce_path"]) == "cuda"
    sizes = {}
    for t in tables:
        d = f[t]
        assert d.ndim == 1, t
        sizes[t] = len(d[()])
    assert sizes == {"processes": 7, "comm_ranks": 9, "edges": 5, "culprits": 2, "chains": 7,
                     "inputs": 3}, sizes
    c = f["culprits"][()]
    assert c["host"][0] == b"node001", c["host"][0]
    assert c["culprit_class"][1] == b"network_link"
    assert c["peer_process_id"][1] == 5
    assert f["culprits"].dtype["host"] == np.dtype("S64")
    assert f["inputs"].dtype["path"] == np.dtype("S256")
    assert f["edges"].dtype["verdict"] == np.dtype("S16")
    assert f["processes"].dtype["culprit_class"] == np.dtype("S24")
    ch = f["comm_ranks"]["comm_hash"]
    assert ch.dtype == np.dtype("<u8"), ch.dtype
    assert int(ch[0]) == 0xF00DCAFEDEADBEEF
    assert f["processes"].dtype["pid"] == np.dtype("<i8")
    assert f["processes"].dtype["chain_depth"] == np.dtype("<i4")
    assert f["processes"].dtype["process_id"] == np.dtype("<u4")
    assert f["processes"].dtype["score"] == np.dtype("<f8")
with h5py.File(empty, "r") as f:
    for t in tables:
        d = f[t]
        assert d.shape == (0,), (t, d.shape)
        assert len(d[()]) == 0
print("h5py ok")
)PY";
  }
  const std::string cmd = "/usr/bin/python3 -E -s " + script + " " + file + " " + empty_file;
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
}

// ---- JSON -------------------------------------------------------------------------------------

TEST_F(OutputTest, JsonHasTheSameVerdict) {
  const AnalysisResults r = sample_results();
  const std::string file = path("results.json");
  write_results_json(r, file);
  EXPECT_EQ(listing(), std::vector<std::string>{"results.json"});
  std::ifstream in(file);
  const nlohmann::json j = nlohmann::json::parse(in);
  EXPECT_EQ(j.at("tool_version"), kToolVersion);
  EXPECT_EQ(j.at("status"), "partial");
  EXPECT_EQ(j.at("seq_window"), 17);
  EXPECT_EQ(j.at("analyzer_ranks"), 4);
  EXPECT_EQ(j.at("process_count"), 7);
  EXPECT_EQ(j.at("reduce_path"), "cuda");
  ASSERT_EQ(j.at("culprits").size(), 2u);
  EXPECT_EQ(j["culprits"][0].at("host"), "node001");
  EXPECT_EQ(j["culprits"][0].at("pid"), 4702);
  EXPECT_EQ(j["culprits"][0].at("culprit_class"), "gpu_producer");
  EXPECT_EQ(j["culprits"][0].at("blame_share"), 0.75);
  EXPECT_EQ(j["culprits"][0].at("job_share"), 0.31);
  EXPECT_EQ(j["culprits"][1].at("culprit_class"), "network_link");
  EXPECT_EQ(j["culprits"][1].at("peer_process_id"), 5);
  EXPECT_EQ(j.at("processes").size(), 7u);
  EXPECT_EQ(j.at("edges").size(), 5u);
  EXPECT_EQ(j.at("chains").size(), 7u);
  EXPECT_EQ(j.at("inputs").size(), 3u);
  EXPECT_EQ(j.at("notes").size(), 2u);
  const auto& hash = j.at("comm_ranks")[0].at("comm_hash");
  EXPECT_TRUE(hash.is_number_unsigned());
  EXPECT_EQ(hash.get<uint64_t>(), kBigHash);
  EXPECT_EQ(j["edges"][3].at("verdict"), "slow_link");
}

TEST_F(OutputTest, JsonWriteFailureThrowsAndLeavesNothing) {
  const std::string file = path("missing/results.json");
  try {
    write_results_json(sample_results(), file);
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(file), std::string::npos) << e.what();
  }
  EXPECT_TRUE(listing().empty());
}

// ---- report -----------------------------------------------------------------------------------

TEST(OutputReport, NamesCulpritsAndTheChain) {
  const std::string text = report_of(sample_results());
  EXPECT_NE(text.find("nccl-culprit " + std::string(kToolVersion)), std::string::npos) << text;
  EXPECT_NE(text.find("node001:pid 4702"), std::string::npos) << text;
  EXPECT_NE(text.find("gpu_producer"), std::string::npos) << text;
  EXPECT_NE(text.find("network_link"), std::string::npos) << text;
  EXPECT_NE(text.find("link to node004:pid 5002"), std::string::npos) << text;
  EXPECT_NE(text.find("75.0%"), std::string::npos) << text;
  EXPECT_NE(text.find("node002:pid 4711 -> node001:pid 4703 -> node001:pid 4702 (root)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("partial"), std::string::npos) << text;
  EXPECT_NE(text.find("4 rejected"), std::string::npos) << text;
  EXPECT_NE(text.find("node005: no profiler data found"), std::string::npos) << text;
  EXPECT_LT(text.find("#1"), text.find("#2"));
  EXPECT_EQ(text.find("No culprit"), std::string::npos);
}

TEST(OutputReport, NamesAProcessWithoutPidByItsRankOrLabel) {
  AnalysisResults r = sample_results();
  r.processes[0].pid = -1;  // probing exports and Flight Recorder dumps name no pid
  r.processes[0].rank = 13;
  r.processes[4].pid = -1;
  r.processes[4].label = "tp=1,pp=0,dp=2";
  const std::string text = report_of(r);
  EXPECT_NE(text.find("node001 rank 13"), std::string::npos) << text;
  EXPECT_NE(text.find("node003 tp=1,pp=0,dp=2"), std::string::npos) << text;
  EXPECT_EQ(text.find("pid -1"), std::string::npos) << text;
}

TEST_F(OutputTest, H5WithoutRankColumnsReadsAsUnknownRank) {
  // A results file of an earlier version: /processes without `rank` and `label`.
  const std::string file = path("old.h5");
  write_results_h5(sample_results(), file);
  h5::ErrorSilencer quiet;
  {
    hid_t f = H5Fopen(file.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    ASSERT_GE(f, 0);
    ASSERT_GE(H5Ldelete(f, "processes", H5P_DEFAULT), 0);
    struct OldProcess {
      uint32_t process_id;
      char host[64];
      int64_t pid;
      char role[16];
      char culprit_class[24];
      int64_t attributed_root;
      int32_t chain_depth;
      uint64_t wait_ns, blame_ns;
      double score;
    } row{};
    row.process_id = 0;
    std::snprintf(row.host, sizeof row.host, "node001");
    row.pid = 4702;
    std::snprintf(row.role, sizeof row.role, "culprit");
    std::snprintf(row.culprit_class, sizeof row.culprit_class, "gpu_producer");
    hid_t t = H5Tcreate(H5T_COMPOUND, sizeof(OldProcess));
    auto str = [](size_t n) {
      hid_t s = H5Tcopy(H5T_C_S1);
      H5Tset_size(s, n);
      return s;
    };
    hid_t s64 = str(64), s16 = str(16), s24 = str(24);
    H5Tinsert(t, "process_id", HOFFSET(OldProcess, process_id), H5T_NATIVE_UINT32);
    H5Tinsert(t, "host", HOFFSET(OldProcess, host), s64);
    H5Tinsert(t, "pid", HOFFSET(OldProcess, pid), H5T_NATIVE_INT64);
    H5Tinsert(t, "role", HOFFSET(OldProcess, role), s16);
    H5Tinsert(t, "culprit_class", HOFFSET(OldProcess, culprit_class), s24);
    H5Tinsert(t, "attributed_root", HOFFSET(OldProcess, attributed_root), H5T_NATIVE_INT64);
    H5Tinsert(t, "chain_depth", HOFFSET(OldProcess, chain_depth), H5T_NATIVE_INT32);
    H5Tinsert(t, "wait_ns", HOFFSET(OldProcess, wait_ns), H5T_NATIVE_UINT64);
    H5Tinsert(t, "blame_ns", HOFFSET(OldProcess, blame_ns), H5T_NATIVE_UINT64);
    H5Tinsert(t, "score", HOFFSET(OldProcess, score), H5T_NATIVE_DOUBLE);
    hsize_t dims[1] = {1};
    hid_t space = H5Screate_simple(1, dims, nullptr);
    hid_t d = H5Dcreate2(f, "processes", t, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    ASSERT_GE(d, 0);
    ASSERT_GE(H5Dwrite(d, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, &row), 0);
    H5Dclose(d);
    H5Sclose(space);
    for (hid_t h : {t, s64, s16, s24}) H5Tclose(h);
    H5Fclose(f);
  }
  const AnalysisResults back = read_results_h5(file);
  ASSERT_EQ(back.processes.size(), 1u);
  EXPECT_EQ(back.processes[0].pid, 4702);
  EXPECT_EQ(back.processes[0].rank, -1);
  EXPECT_EQ(back.processes[0].label, "");
  EXPECT_EQ(back.processes[0].culprit_class, "gpu_producer");
}

TEST(OutputReport, SaysClearlyWhenThereIsNoCulprit) {
  AnalysisResults r = sample_results();
  r.culprits.clear();
  r.chains.clear();
  // Connections flagged against their peers, yet nobody named: the report says so, not that
  // nothing stands out.
  const std::string flagged = report_of(r);
  EXPECT_NE(flagged.find("No culprit named: 3 connection(s) (no_credit 1, slow_flush 1, slow_link 1) stand out "
                         "from their peers, but no test\n  the data allows told their cause"),
            std::string::npos)
      << flagged;
  EXPECT_EQ(flagged.find("no process or wire stands out"), std::string::npos) << flagged;
  for (EdgeRow& e : r.edges)
    if (e.verdict != "late_data") e.verdict = "normal";
  const std::string text = report_of(r);
  // Waiting was recorded: the report says how much and that nobody stands out, not that
  // there was none.
  EXPECT_NE(text.find("No culprit: no process or wire stands out from its peers"), std::string::npos) << text;
  EXPECT_NE(text.find("% of the proxy phases recorded,\n  spread over 4 processes"), std::string::npos) << text;
  EXPECT_EQ(text.find("no significant waiting"), std::string::npos) << text;
  EXPECT_EQ(text.find("Longest chain"), std::string::npos) << text;
  // An empty result must render too, and says why.
  EXPECT_NE(report_of(AnalysisResults{}).find("No culprit: the input holds no connection records"), std::string::npos);
}

TEST(OutputReport, StaysCompactForLargeJobs) {
  AnalysisResults r;
  r.info.tool_version = kToolVersion;
  r.info.processes = 128;
  r.info.analyzer_ranks = 16;
  for (uint32_t p = 0; p < 128; ++p) {
    ProcessRow row;
    row.process_id = p;
    row.host = "node" + std::to_string(100 + p / 8);
    row.pid = 1000 + p;
    row.role = p == 0 ? "culprit" : "victim";
    r.processes.push_back(row);
    r.comm_ranks.push_back({kBigHash, static_cast<int32_t>(p), 128, p});
    for (int ch = 0; ch < 4; ++ch) {
      EdgeRow e;
      e.comm_hash = kBigHash;
      e.channel = ch;
      e.src_process = p;
      e.dst_process = (p + 1) % 128;
      e.recv_wait_ns = 1000 * p;
      e.verdict = p % 7 == 0 ? "late_data" : "normal";
      r.edges.push_back(e);
    }
    r.inputs.push_back({row.host, "/dev/shm/x/trace_" + std::to_string(p) + ".json", "nccl-json",
                        100, p % 10 == 0 ? 1u : 0u});
  }
  for (uint32_t k = 0; k < 30; ++k) {
    r.culprits.push_back({k, "node100", 1000 + k, "hang", -1, 1000, 1.0 / 30, 0.1, 3, 0.1});
  }
  for (uint32_t hop = 0; hop <= 40; ++hop) r.chains.push_back({40, hop, 40 - hop});
  const std::string text = report_of(r);
  EXPECT_LT(line_count(text), 60u) << text;
  EXPECT_NE(text.find("... 34 more ..."), std::string::npos) << text;
  EXPECT_NE(text.find("node100:pid 1000 (root)"), std::string::npos) << text;
  EXPECT_NE(text.find("and 20 more culprits"), std::string::npos) << text;
  EXPECT_NE(text.find("rank 0/128"), std::string::npos) << text;
}

TEST_F(OutputTest, ReportFromFileEqualsReportFromMemory) {
  const AnalysisResults r = sample_results();
  const std::string file = path("results.h5");
  write_results_h5(r, file);
  EXPECT_EQ(report_of(read_results_h5(file)), report_of(r));
}
