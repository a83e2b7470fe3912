// The readers survive anything: garbage, binary junk, files cut at any byte, a line of
// 100 MB (2 GB with CULPRIT_LONG_LINE_MB=2048) skipped without being held in memory, a file
// that vanishes between discovery and reading, unreadable directories and files, FIFOs;
// and format detection per file, with --format forcing.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <string>

#include "io/discover.hpp"
#include "io/line_reader.hpp"
#include "io/nccl_trace_reader.hpp"
#include "io/probing_csv_reader.hpp"

namespace culprit {
namespace {

namespace fs = std::filesystem;

// A small complete 2.27 trace: one AllReduce, one send op with one step.
const char* kTrace =
    "[\n"
    "{\"name\": \"AllReduce\", \"cat\": \"COLL\", \"ph\": \"b\", \"id\": 0, \"pid\": 4242, \"tid\": 1, \"ts\": 100.000000, \"args\": {\"SeqNum\": 1, \"CommHash\": 77, \"Rank\": 0, \"Count\": 1024, \"Datatype\": \"ncclFloat32\", \"Algorithm\": \"RING\", \"Protocol\": \"SIMPLE\", \"nChannels\": 1}},\n"
    "{\"name\": \"ScheduleSend\", \"cat\": \"PROXY\", \"ph\": \"b\", \"id\": 0, \"pid\": 4242, \"tid\": 1, \"ts\": 101.000000, \"args\": {\"Channel\": 0, \"Peer\": 1, \"Steps\": 1, \"ChunkSize\": 4096, \"transSize\": 4096}},\n"
    "{\"name\": \"ScheduleSend\", \"cat\": \"PROXY\", \"ph\": \"e\", \"id\": 0, \"pid\": 4242, \"tid\": 1, \"ts\": 102.000000},\n"
    "{\"name\": \"ProgressSend\", \"cat\": \"PROXY\", \"ph\": \"b\", \"id\": 0, \"pid\": 4242, \"tid\": 1, \"ts\": 102.000000, \"args\": {\"Channel\": 0, \"Peer\": 1, \"Steps\": 1, \"ChunkSize\": 4096, \"transSize\": 4096}},\n"
    "{\"name\": \"SendGpuWait\", \"cat\": \"NET\", \"ph\": \"b\", \"id\": 0, \"pid\": 4242, \"tid\": 1, \"ts\": 103.000000, \"args\": {\"Step\": 0}},\n"
    "{\"name\": \"SendGpuWait\", \"cat\": \"NET\", \"ph\": \"e\", \"id\": 0, \"pid\": 4242, \"tid\": 1, \"ts\": 110.000000},\n"
    "{\"name\": \"SendPeerWait\", \"cat\": \"NET\", \"ph\": \"b\", \"id\": 0, \"pid\": 4242, \"tid\": 1, \"ts\": 110.000000, \"args\": {\"Step\": 0}},\n"
    "{\"name\": \"SendPeerWait\", \"cat\": \"NET\", \"ph\": \"e\", \"id\": 0, \"pid\": 4242, \"tid\": 1, \"ts\": 111.000000},\n"
    "{\"name\": \"SendWait\", \"cat\": \"NET\", \"ph\": \"b\", \"id\": 0, \"pid\": 4242, \"tid\": 1, \"ts\": 111.000000, \"args\": {\"Step\": 0}},\n"
    "{\"name\": \"SendWait\", \"cat\": \"NET\", \"ph\": \"e\", \"id\": 0, \"pid\": 4242, \"tid\": 1, \"ts\": 120.000000},\n"
    "{\"name\": \"ProgressSend\", \"cat\": \"PROXY\", \"ph\": \"e\", \"id\": 0, \"pid\": 4242, \"tid\": 1, \"ts\": 121.000000},\n"
    "{\"name\": \"AllReduce\", \"cat\": \"COLL\", \"ph\": \"e\", \"id\": 0, \"pid\": 4242, \"tid\": 1, \"ts\": 122.000000},\n"
    "{}]\n";

class TempDir {
 public:
  explicit TempDir(const std::string& tag)
      : path_(fs::temp_directory_path() / ("culprit_robust_" + tag + "_" + std::to_string(getpid()))) {
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::permissions(path_, fs::perms::owner_all, fs::perm_options::add, ec);
    for (auto it = fs::recursive_directory_iterator(path_, ec); !ec && it != fs::recursive_directory_iterator(); it.increment(ec))
      fs::permissions(it->path(), fs::perms::owner_all, fs::perm_options::add, ec);
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

void put(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << text;
}

LocalData read_trace(const std::string& text) {
  LocalData d;
  read_nccl_trace_buffer(text, "t.json", "hostA", d);
  return d;
}

TEST(ReaderRobustness, GarbageAndBinaryJunk) {
  std::mt19937_64 rng(12345);
  for (int round = 0; round < 200; ++round) {
    std::string junk(static_cast<size_t>(rng() % 4096), '\0');
    for (char& c : junk) c = static_cast<char>(rng());
    LocalData d = read_trace(junk);
    ASSERT_EQ(d.inputs.size(), 1u);
    EXPECT_TRUE(d.ops.empty());
    LocalData c;
    read_probing_csv_buffer(junk, "j.csv", "hostA", c);
    ASSERT_EQ(c.inputs.size(), 1u);
  }
  // Junk with the trace's own characters, which gets further into the parser.
  const std::string alphabet = "{}[]\":, \nbe0123456789.-namecatphidtsargsStepCOLLPROXYNETSendRecvWait";
  for (int round = 0; round < 500; ++round) {
    std::string junk;
    for (size_t n = rng() % 2000; n > 0; --n) junk.push_back(alphabet[rng() % alphabet.size()]);
    LocalData d = read_trace(junk);
    ASSERT_EQ(d.inputs.size(), 1u);
  }
}

// A file cut at any byte: never a crash, never more than the complete file gives, and the
// cut is reported (truncated) whenever events were read.
TEST(ReaderRobustness, CutAtEveryByte) {
  const std::string full = kTrace;
  LocalData whole = read_trace(full);
  ASSERT_EQ(whole.ops.size(), 1u);
  EXPECT_FALSE(whole.inputs[0].truncated);
  for (size_t n = 0; n < full.size(); ++n) {
    LocalData d = read_trace(full.substr(0, n));
    ASSERT_EQ(d.inputs.size(), 1u);
    EXPECT_LE(d.ops.size(), 1u);
    if (n < full.size() - 4 && d.inputs[0].error.empty()) {
      EXPECT_TRUE(d.inputs[0].truncated) << n;
    }
  }
}

TEST(ReaderRobustness, EmptyAndBracketsOnly) {
  EXPECT_NE(read_trace("").inputs[0].error.find("empty trace"), std::string::npos);
  EXPECT_NE(read_trace("[\n{}]\n").inputs[0].error.find("empty trace"), std::string::npos);
  EXPECT_NE(read_trace("\n\n\r\n").inputs[0].error.find("empty trace"), std::string::npos);
  LocalData nul = read_trace(std::string("[\n\0\0\0\n{}]\n", 10));
  EXPECT_NE(nul.inputs[0].error.find("not an NCCL profiler trace"), std::string::npos);
  EXPECT_EQ(nul.inputs[0].reject_reasons.at("malformed line"), 1u);
}

// What a broken or hostile file can make the parser hold is bounded: nesting depth and
// steps per op (real files nest 7 deep and print at most 32 steps per op).
TEST(ReaderRobustness, DeepNestingAndHugeOpsAreBounded) {
  std::string deep = "[\n";
  for (int k = 0; k < 200; ++k)
    deep += "{\"name\": \"G\", \"cat\": \"GROUP\", \"ph\": \"b\", \"id\": " + std::to_string(k) +
            ", \"pid\": 4242, \"tid\": 1, \"ts\": 1.000000},\n";
  LocalData d = read_trace(deep + std::string(kTrace).substr(2));
  EXPECT_EQ(d.inputs[0].reject_reasons.count("event nested more than 64 deep (unterminated events?)"), 1u);
  EXPECT_TRUE(d.ops.empty());  // the trace's own events are nested too deep to be read
  EXPECT_GT(d.inputs[0].rejected, 0u);

  std::string big = kTrace;
  std::string steps;
  for (int k = 1; k < 1500; ++k) {
    std::string id = std::to_string(k);
    steps += "{\"name\": \"SendWait\", \"cat\": \"NET\", \"ph\": \"b\", \"id\": " + id +
             ", \"pid\": 4242, \"tid\": 1, \"ts\": 111.000000, \"args\": {\"Step\": " + id + "}},\n" +
             "{\"name\": \"SendWait\", \"cat\": \"NET\", \"ph\": \"e\", \"id\": " + id +
             ", \"pid\": 4242, \"tid\": 1, \"ts\": 112.000000},\n";
  }
  size_t at = big.find("{\"name\": \"ProgressSend\", \"cat\": \"PROXY\", \"ph\": \"e\"");
  ASSERT_NE(at, std::string::npos);
  big.insert(at, steps);
  LocalData h = read_trace(big);
  ASSERT_EQ(h.ops.size(), 1u);
  EXPECT_EQ(h.ops[0].steps, 1024u);
  EXPECT_EQ(h.inputs[0].reject_reasons.count("proxy op with more than 1024 steps (the rest ignored)"), 1u);
}

long resident_kb() {
  std::ifstream statm("/proc/self/statm");
  long size = 0, resident = 0;
  statm >> size >> resident;
  return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

long child_peak_rss_kb(const std::function<int()>& body, int* exit_code) {
  pid_t pid = fork();
  if (pid == 0) _exit(body());
  int status = 0;
  rusage ru{};
  wait4(pid, &status, 0, &ru);
  *exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 255;
  return ru.ru_maxrss;
}

// A line far longer than any event (1 MiB limit) is skipped while streaming: the reader
// holds one chunk, not the line. The file is sparse (a hole of NUL bytes), so that a 2 GB
// line costs no disk: CULPRIT_LONG_LINE_MB=2048 runs that size (CI uses 100 MB).
TEST(ReaderRobustness, VeryLongLineIsSkippedWithoutHoldingIt) {
  TempDir dir("longline");
  const char* env = std::getenv("CULPRIT_LONG_LINE_MB");
  const uint64_t mb = env && *env ? std::strtoull(env, nullptr, 10) : 100;
  fs::path p = dir.path() / "long_77_0.json";
  std::string head = "[\n{\"name\": \"junk\", \"cat\": \"X\", \"ph\": \"b\", \"args\": {\"blob\": \"";
  std::string trace = kTrace;
  {
    std::ofstream out(p, std::ios::binary);
    out << head;
  }
  // Extend with a hole (reads as NUL bytes), then append the trace after a newline.
  fs::resize_file(p, head.size() + (mb << 20));
  {
    std::ofstream out(p, std::ios::binary | std::ios::app);
    out << "\"}}\n" << trace.substr(2);
  }
  int code = -1;
  long rss_kb = child_peak_rss_kb(
      [&] {
        LocalData d;
        read_nccl_trace_file(p.string(), "hostA", d);
        const InputReport& in = d.inputs.at(0);
        if (d.ops.size() != 1) return 1;
        if (in.reject_reasons.count("line longer than 1 MiB") != 1) return 2;
        if (!in.error.empty()) return 3;
        return 0;
      },
      &code);
  EXPECT_EQ(code, 0);
  // The child starts with this process's resident pages; the reading may add its chunk
  // buffer (5 MB) and little else, never the line.
  EXPECT_LT(rss_kb - resident_kb(), 32 * 1024) << "peak RSS growth of the reading child (KB)";
}

// The line reader's edge cases against a plain split, over many chunk sizes.
TEST(ReaderRobustness, LineReaderMatchesAPlainSplit) {
  TempDir dir("lines");
  std::mt19937_64 rng(7);
  for (int round = 0; round < 30; ++round) {
    std::string text;
    for (int k = static_cast<int>(rng() % 50); k > 0; --k) {
      size_t len = rng() % 3 == 0 ? rng() % 300 : rng() % 20;
      text += std::string(len, static_cast<char>('a' + rng() % 26));
      text += '\n';
    }
    if (rng() % 2) text += "tail-without-newline";
    fs::path p = dir.path() / "x.txt";
    put(p, text);
    const size_t max_line = 1 + rng() % 200, chunk = 1 + rng() % 64;
    std::vector<std::string> got;
    LineReadResult r = for_each_line(p.string(), [&](std::string_view l) { got.emplace_back(l); }, max_line, chunk);
    std::vector<std::string> want;
    uint64_t overlong = 0;
    size_t start = 0;
    while (start < text.size()) {
      size_t nl = text.find('\n', start);
      size_t end = nl == std::string::npos ? text.size() : nl;
      if (end - start > max_line) ++overlong;
      else want.push_back(text.substr(start, end - start));
      start = end + 1;
    }
    ASSERT_EQ(got, want) << "max_line " << max_line << " chunk " << chunk;
    EXPECT_EQ(r.overlong_lines, overlong);
    std::vector<std::string> got_mem;
    LineReadResult m = for_each_line_in(text, [&](std::string_view l) { got_mem.emplace_back(l); }, max_line);
    EXPECT_EQ(got_mem, want);
    EXPECT_EQ(m.overlong_lines, overlong);
  }
}

// Deleted between discovery and reading: one error naming the file, the others are read.
TEST(ReaderRobustness, FileVanishingBeforeItIsRead) {
  TempDir dir("vanish");
  put(dir.path() / "a_77_0.json", kTrace);
  put(dir.path() / "b_77_1.json", kTrace);
  put(dir.path() / "c.csv", "rank,comm_hash,channel_id,peer,is_send\n1,77,0,0,1\n");
  Discovery found = discover_node_local(dir.path().string(), "hostA", "auto");
  ASSERT_EQ(found.files.size(), 3u);
  fs::remove(dir.path() / "b_77_1.json");
  fs::remove(dir.path() / "c.csv");
  LocalData d;
  read_input_files(found.files, d, 2);
  ASSERT_EQ(d.inputs.size(), 3u);
  EXPECT_EQ(d.inputs[0].error, "");
  EXPECT_EQ(d.inputs[1].error, "cannot read: No such file or directory");
  EXPECT_NE(d.inputs[1].path.find("b_77_1.json"), std::string::npos);
  EXPECT_EQ(d.inputs[2].error, "cannot read: No such file or directory");
  EXPECT_EQ(d.ops.size(), 1u);
}

// Runs `body` as an unprivileged user when this process is root (root reads everything);
// false when that is impossible.
bool as_nobody(const std::function<void()>& body) {
  if (geteuid() != 0) {
    body();
    return true;
  }
  if (setegid(65534) != 0 || seteuid(65534) != 0) return false;
  body();
  bool ok = seteuid(0) == 0 && setegid(0) == 0;
  EXPECT_TRUE(ok) << "could not regain root";
  return true;
}

TEST(ReaderRobustness, UnreadableDirectoriesAndFiles) {
  TempDir dir("perm");
  fs::permissions(dir.path(), fs::perms::all, fs::perm_options::replace);  // 0777: nobody may enter
  put(dir.path() / "node000" / "a_77_0.json", kTrace);
  put(dir.path() / "node001" / "b_77_1.json", kTrace);
  put(dir.path() / "node002" / "c_77_2.json", kTrace);
  ::chmod((dir.path() / "node001").c_str(), 0);
  ::chmod((dir.path() / "node002" / "c_77_2.json").c_str(), 0);
  fs::permissions(dir.path() / "node000", fs::perms::all, fs::perm_options::replace);
  fs::permissions(dir.path() / "node000" / "a_77_0.json", fs::perms::all, fs::perm_options::replace);
  fs::permissions(dir.path() / "node002", fs::perms::all, fs::perm_options::replace);
  Discovery found, top;
  LocalData d;
  bool ran = as_nobody([&] {
    found = discover_shared(dir.path().string(), 0, 1, "auto");
    read_input_files(found.files, d, 1);
    top = discover_node_local((dir.path() / "node001").string(), "node001", "auto");
  });
  if (!ran) GTEST_SKIP() << "running as root and cannot drop privileges: permission checks do not apply";
  EXPECT_EQ(found.error, "");
  ASSERT_EQ(d.inputs.size(), 3u);
  EXPECT_EQ(d.inputs[0].error, "");
  EXPECT_EQ(d.inputs[1].host, "node001");
  EXPECT_EQ(d.inputs[1].error, "cannot read directory: Permission denied");
  EXPECT_EQ(d.inputs[2].error, "cannot read: Permission denied");
  EXPECT_EQ(d.ops.size(), 1u);
  EXPECT_NE(top.error.find("cannot read input directory"), std::string::npos);
  EXPECT_NE(top.error.find("Permission denied"), std::string::npos);
}

TEST(ReaderRobustness, FifosAndOtherSpecialFilesAreNotOpened) {
  TempDir dir("fifo");
  put(dir.path() / "a_77_0.json", kTrace);
  ASSERT_EQ(::mkfifo((dir.path() / "pipe_77_1.json").c_str(), 0600), 0);
  Discovery found = discover_node_local(dir.path().string(), "hostA", "auto");
  ASSERT_EQ(found.files.size(), 1u);  // reading the FIFO would block forever
}

// Format detection: by content when it is clear, else by extension; --format forces.
TEST(FormatDetection, PerFileByContentThenExtension) {
  TempDir dir("detect");
  const fs::path& p = dir.path();
  put(p / "trace_77_0.json", kTrace);
  put(p / "old-node000-4242.txt", kTrace);
  put(p / "notes.txt", "hello\n");
  put(p / "ops.csv", "rank,comm_hash,channel_id,peer,is_send\n");
  put(p / "export.json", "ts,rank,comm_hash,channel_id,peer,is_send\n1,0,77,0,1,1\n");  // CSV under .json
  put(p / "trace.csv", kTrace);                                                    // trace under .csv
  put(p / "empty_77_1.json", "");
  put(p / "readme.md", kTrace);
  EXPECT_EQ(detect_format((p / "trace_77_0.json").string(), "auto"), "nccl-json");
  EXPECT_EQ(detect_format((p / "old-node000-4242.txt").string(), "auto"), "nccl-json");
  EXPECT_EQ(detect_format((p / "notes.txt").string(), "auto"), "");
  EXPECT_EQ(detect_format((p / "ops.csv").string(), "auto"), "probing-csv");
  EXPECT_EQ(detect_format((p / "export.json").string(), "auto"), "probing-csv");
  EXPECT_EQ(detect_format((p / "trace.csv").string(), "auto"), "nccl-json");
  EXPECT_EQ(detect_format((p / "empty_77_1.json").string(), "auto"), "nccl-json");  // reported as empty
  EXPECT_EQ(detect_format((p / "readme.md").string(), "auto"), "");
  // A vanished or unreadable .txt named like an old trace is still an input (its error is
  // reported); other .txt files are not.
  EXPECT_EQ(detect_format((p / "gone-node000-99.txt").string(), "auto"), "nccl-json");
  EXPECT_EQ(detect_format((p / "gone.txt").string(), "auto"), "");
  // Forcing applies to every candidate file, whatever its content.
  EXPECT_EQ(detect_format((p / "ops.csv").string(), "nccl-json"), "nccl-json");
  EXPECT_EQ(detect_format((p / "trace_77_0.json").string(), "probing-csv"), "probing-csv");
  EXPECT_EQ(detect_format((p / "readme.md").string(), "nccl-json"), "");

  Discovery forced = discover_node_local(p.string(), "hostA", "probing-csv");
  LocalData d;
  read_input_files(forced.files, d, 1);
  for (const InputReport& in : d.inputs) {
    EXPECT_EQ(in.format, "probing-csv") << in.path;
    if (in.path.find("trace_77_0.json") != std::string::npos) {
      EXPECT_FALSE(in.error.empty());
    }
  }
}

}  // namespace
}  // namespace culprit
