// Reader throughput and memory: generates NCCL example-profiler traces in several plugin
// layouts and probing nccl.proxy_ops and nccl.net_qp CSVs on disk (streamed in chunks, never held in
// memory), then reads each in a child process and prints MB/s per core and the child's peak
// RSS. The first JSON file is the 1 GB input of the memory figure.
//
//   bench_parse [--dir DIR] [--mb-2.27 N] [--mb-old N] [--mb-2.28 N] [--mb-csv N]
//               [--mb-net-qp N] [--files N] [--keep]
//
// Defaults: 1024 MB of 2.27 JSON, 256 MB each of 2.24-2.26 JSON, 2.28 JSON, proxy_ops CSV and
// net_qp CSV (2 GB in all), written under $TMPDIR (or /tmp) and removed afterwards. --files N also reads the
// 2.27 data split over N files with all cores (read_input_files).
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <charconv>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "io/discover.hpp"
#include "io/nccl_trace_reader.hpp"
#include "io/probing_csv_reader.hpp"

namespace fs = std::filesystem;
using namespace culprit;

namespace {

// Appends text to a buffer and flushes it to a file every few MB.
class Writer {
 public:
  explicit Writer(const fs::path& path) : out_(path, std::ios::binary | std::ios::trunc) {
    if (!out_) throw std::runtime_error("cannot write " + path.string());
    buf_.reserve(kFlush + 4096);
  }
  ~Writer() { flush(); }
  void lit(std::string_view s) { buf_.append(s); }
  void u64(uint64_t v) {
    char b[24];
    auto r = std::to_chars(b, b + sizeof b, v);
    buf_.append(b, r.ptr);
  }
  void us(int64_t ns) {  // printf("%f") of microseconds
    u64(static_cast<uint64_t>(ns) / 1000);
    char frac[8] = {'.', 0, 0, 0, 0, 0, 0, 0};
    uint64_t rest = static_cast<uint64_t>(ns) % 1000;
    frac[1] = static_cast<char>('0' + rest / 100);
    frac[2] = static_cast<char>('0' + rest / 10 % 10);
    frac[3] = static_cast<char>('0' + rest % 10);
    frac[4] = frac[5] = frac[6] = '0';
    buf_.append(frac, 7);
  }
  void maybe_flush() {
    if (buf_.size() >= kFlush) flush();
  }
  void flush() {
    bytes_ += buf_.size();
    out_.write(buf_.data(), static_cast<std::streamsize>(buf_.size()));
    buf_.clear();
  }
  // Writes everything out and waits for the disk, so that the reading is not slowed down
  // by the write-back of the generator's pages.
  void close_and_sync(const fs::path& path) {
    flush();
    out_.close();
    int fd = ::open(path.c_str(), O_RDONLY);
    if (fd >= 0) {
      ::fdatasync(fd);
      ::close(fd);
    }
  }
  uint64_t bytes() const { return bytes_ + buf_.size(); }

 private:
  static constexpr size_t kFlush = 8u << 20;
  std::ofstream out_;
  std::string buf_;
  uint64_t bytes_ = 0;
};

struct Rng {
  uint64_t s;
  uint64_t next() {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    return s;
  }
  int64_t jitter(int64_t base) { return base + static_cast<int64_t>(next() % static_cast<uint64_t>(base / 2 + 1)); }
};

enum class Layout { k227, k224, k228 };

// {"name": "N", "cat": "C", "ph": "b", "id": I, "pid": P, "tid": 1, "ts": T
void head(Writer& w, std::string_view name, std::string_view cat, bool b, uint64_t id, int64_t ts) {
  w.lit("{\"name\": \"");
  w.lit(name);
  w.lit("\", \"cat\": \"");
  w.lit(cat);
  w.lit(b ? "\", \"ph\": \"b\", \"id\": " : "\", \"ph\": \"e\", \"id\": ");
  w.u64(id);
  w.lit(", \"pid\": 3937375, \"tid\": 1, \"ts\": ");
  w.us(ts);
}
void end_line(Writer& w, std::string_view name, std::string_view cat, uint64_t id, int64_t ts) {
  head(w, name, cat, false, id, ts);
  w.lit("},\n");
}
void step_line(Writer& w, std::string_view name, uint64_t id, int64_t ts, int step) {
  head(w, name, "NET", true, id, ts);
  w.lit(", \"args\": {\"Step\": ");
  w.u64(static_cast<uint64_t>(step));
  w.lit("}},\n");
}

// One proxy op with `steps` steps (the last 16 printed, in slot order) of a ring AllReduce.
void proxy_op(Writer& w, Layout layout, bool send, int channel, int steps, int64_t& t,
              uint64_t& op_id, uint64_t& step_id, Rng& rng) {
  const int64_t start = t;
  std::string args = ", \"args\": {\"Channel\": " + std::to_string(channel) + ", \"Peer\": " +
                     std::to_string(send ? 5 : 3) + ", \"Steps\": " + std::to_string(steps) +
                     ", \"ChunkSize\": 524288, \"transSize\": " + std::to_string(steps * 524288ull);
  if (layout == Layout::k224) {
    head(w, send ? "Send" : "Recv", "PROXY", true, op_id, start);
    w.lit(args);
    w.lit(send ? ", \"POSTED\": {\"step\": 16, \"ts\": 1.000000}, \"REM_FIFO_WAIT\": {\"step\": 16, \"ts\": 1.000000}, "
                 "\"TRANSMITTED\": {\"step\": 16, \"ts\": 2.000000}, \"DONE\": {\"step\": 16, \"ts\": 3.000000}}},\n"
               : ", \"POSTED\": {\"step\": 16, \"ts\": 1.000000}, \"RECEIVED\": {\"step\": 16, \"ts\": 1.000000}, "
                 "\"TRANSMITTED\": {\"step\": 16, \"ts\": 2.000000}, \"DONE\": {\"step\": 16, \"ts\": 3.000000}}},\n");
  } else {
    head(w, send ? "ScheduleSend" : "ScheduleRecv", "PROXY", true, op_id, start);
    w.lit(args);
    w.lit("}},\n");
    end_line(w, send ? "ScheduleSend" : "ScheduleRecv", "PROXY", op_id, start + 2000);
    head(w, send ? "ProgressSend" : "ProgressRecv", "PROXY", true, op_id, start + 2000);
    w.lit(args);
    w.lit("}},\n");
  }
  t = start + 3000;
  const int first = steps > 16 ? steps - 16 : 0;
  for (int k = first; k < steps; ++k) {
    int64_t a = t, b = a + rng.jitter(4000), c = b + rng.jitter(1500), d = c + rng.jitter(9000);
    t = b;
    if (send) {
      if (layout == Layout::k224) {
        step_line(w, "SendBufferWait", step_id, a - 200, k);
        end_line(w, "SendBufferWait", "NET", step_id, a);
        step_line(w, "SendGpuWait", step_id, a, k);
        end_line(w, "SendGpuWait", "NET", step_id, c);
        step_line(w, "SendWait", step_id, c, k);
      } else {
        step_line(w, "SendGpuWait", step_id, a, k);
        end_line(w, "SendGpuWait", "NET", step_id, b);
        step_line(w, "SendPeerWait", step_id, b, k);
        end_line(w, "SendPeerWait", "NET", step_id, c);
        step_line(w, "SendWait", step_id, c, k);
      }
      end_line(w, "SendWait", "NET", step_id, d);
    } else {
      if (layout == Layout::k224) {
        step_line(w, "RecvBufferWait", step_id, a - 200, k);
        end_line(w, "RecvBufferWait", "NET", step_id, a);
      }
      step_line(w, "RecvWait", step_id, a, k);
      end_line(w, "RecvWait", "NET", step_id, c);
      step_line(w, "RecvFlushWait", step_id, c, k);
      end_line(w, "RecvFlushWait", "NET", step_id, c + 300);
      step_line(w, "RecvGpuWait", step_id, c + 300, k);
      end_line(w, "RecvGpuWait", "NET", step_id, d);
    }
    ++step_id;
  }
  t += 20000;
  end_line(w, layout == Layout::k224 ? (send ? "Send" : "Recv") : (send ? "ProgressSend" : "ProgressRecv"),
           "PROXY", op_id, t);
  ++op_id;
}

// Writes about `mb` MB of one rank's trace in `layout`.
uint64_t write_trace(const fs::path& path, Layout layout, uint64_t mb, uint64_t seed) {
  Writer w(path);
  Rng rng{seed | 1};
  w.lit("[\n");
  int64_t t = 1000000;
  uint64_t group = 0, coll = 0, op_id = 0, step_id = 0, api = 0;
  const uint64_t target = mb << 20;
  const int channels = 2;
  for (uint64_t seq = 0; w.bytes() < target; ++seq) {
    if (layout == Layout::k228) {
      head(w, "Group API", "GROUP_API", true, api, t);
      w.lit(", \"args\": {\"groupApiId\": ");
      w.u64(api);
      w.lit(", \"groupDepth\":1}},\n");
      head(w, "AllReduce", "COLL_API", true, api, 0);
      w.lit(", \"args\": {\"count\": 16777216, \"datatype\": ncclFloat32, \"root\": 0, \"GraphCaptured\":0, \"Stream\": 0x5020000567d0}},\n");
      head(w, "KernelLaunch", "KERNEL_LAUNCH", true, api, 0);
      w.lit(", \"args\": {\"groupId\": 0, \"Stream\": (nil)}},\n");
      end_line(w, "KernelLaunch", "KERNEL_LAUNCH", api, t + 100);
    }
    head(w, "Group", "GROUP", true, group, t);
    w.lit(", \"args\": {\"groupId\": ");
    w.u64(group);
    w.lit("}},\n");
    head(w, layout == Layout::k224 ? "AllReduce" : "AllReduce", "COLL", true, coll, t + 500);
    w.lit(", \"args\": {\"SeqNum\": ");
    w.u64(seq);
    w.lit(", \"CommHash\": 12715772615376301750, \"Rank\": 3, \"Count\": 16777216, \"Datatype\": \"ncclFloat32\", ");
    w.lit(layout == Layout::k224 ? "\"Algorithm\": \"Ring\", \"Protocol\": \"Simple\", \"nMaxChannels\": 2}},\n"
                                 : "\"Algorithm\": \"RING\", \"Protocol\": \"SIMPLE\", \"nChannels\": 2}},\n");
    t += 1000;
    for (int c = 0; c < channels; ++c) {
      head(w, "KernelCh", "GPU", true, 0, t);
      if (layout == Layout::k224) {
        w.lit(", \"args\": {\"Channel\": ");
        w.u64(static_cast<uint64_t>(c));
        w.lit("}},\n");
      } else {
        w.lit(", \"args\": {\"Channel\": ");
        w.u64(static_cast<uint64_t>(c));
        w.lit(", \"StartGpuClk\": ");
        w.u64(1765223116927674080ull + static_cast<uint64_t>(t));
        w.lit(", \"StopGpuClk\": ");
        w.u64(layout == Layout::k228 && c > 0 ? 0 : 1765223116927774080ull + static_cast<uint64_t>(t));
        w.lit("}},\n");
      }
      int64_t t_recv = t, t_send = t;
      proxy_op(w, layout, false, c, 32, t_recv, op_id, step_id, rng);
      proxy_op(w, layout, true, c, 32, t_send, op_id, step_id, rng);
      t = std::max(t_recv, t_send);
      end_line(w, "KernelCh", "GPU", 0, layout == Layout::k228 && c > 0 ? 0 : t);
    }
    end_line(w, "AllReduce", "COLL", coll++, t + 100);
    end_line(w, "Group", "GROUP", group++, t + 200);
    if (layout == Layout::k228) {
      end_line(w, "AllReduce", "COLL_API", api, t + 300);
      end_line(w, "Group API", "GROUP_API", api++, t + 400);
    }
    t += 50000;
    w.maybe_flush();
  }
  w.lit("{}]\n");
  w.close_and_sync(path);
  return w.bytes();
}

uint64_t write_csv(const fs::path& path, uint64_t mb, uint64_t seed) {
  Writer w(path);
  Rng rng{seed | 1};
  w.lit("ts,rank,tp_rank,pp_rank,dp_rank,comm_hash,coll_func,seq,channel_id,peer,is_send,n_steps,"
        "trans_bytes,send_gpu_wait_ns,send_peer_wait_ns,send_wait_ns,recv_wait_ns,recv_flush_wait_ns\n");
  const uint64_t target = mb << 20;
  uint64_t ts = 1765223116927674080ull;
  for (uint64_t seq = 0; w.bytes() < target; ++seq) {
    for (int rank = 0; rank < 16; ++rank) {
      for (int c = 0; c < 2; ++c) {
        for (int send = 0; send < 2; ++send) {
          w.u64(ts += 1000);
          w.lit(",");
          w.u64(static_cast<uint64_t>(rank));
          w.lit(",0,0,");
          w.u64(static_cast<uint64_t>(rank));
          w.lit(",12715772615376301750,AllReduce,");
          w.u64(seq);
          w.lit(",");
          w.u64(static_cast<uint64_t>(c));
          w.lit(",");
          w.u64(static_cast<uint64_t>((rank + (send ? 1 : 15)) % 16));
          w.lit(send ? ",1,32,16777216," : ",0,32,16777216,");
          for (int k = 0; k < 5; ++k) {
            w.u64(send ? (k < 3 ? rng.next() % 200000 : 0) : (k >= 3 ? rng.next() % 200000 : 0));
            w.lit(k < 4 ? "," : "\n");
          }
        }
      }
    }
    w.maybe_flush();
  }
  w.close_and_sync(path);
  return w.bytes();
}

// probing's nccl.net_qp: one row per IB work request, as NCCL's IB transport reports them. 16
// ranks with 4 queue pairs each post 512 KiB sends (opcode 1) and receives (no length, no
// opcode) in turn; rows come in completion order, as probing's table fills.
uint64_t write_net_qp_csv(const fs::path& path, uint64_t mb, uint64_t seed) {
  Writer w(path);
  Rng rng{seed | 1};
  w.lit("ts,rank,device,qp_num,wr_id,opcode,length,duration_ns\n");
  const uint64_t target = mb << 20;
  uint64_t ts = 1765223116927674080ull;
  for (uint64_t wr = 0; w.bytes() < target; ++wr) {
    for (int rank = 0; rank < 16; ++rank) {
      for (int qp = 0; qp < 4; ++qp) {
        const bool send = (qp & 1) == 0;
        w.u64(ts += 700);
        w.lit(",");
        w.u64(static_cast<uint64_t>(rank));
        w.lit(",");
        w.u64(static_cast<uint64_t>(qp / 2));
        w.lit(",");
        w.u64(static_cast<uint64_t>(1000 + rank * 4 + qp));
        w.lit(",");
        w.u64(wr);
        w.lit(send ? ",1,524288," : ",,,");
        w.u64(40000 + rng.next() % 20000);
        w.lit("\n");
      }
    }
    w.maybe_flush();
  }
  w.close_and_sync(path);
  return w.bytes();
}

double tv_seconds(const timeval& tv) { return static_cast<double>(tv.tv_sec) + tv.tv_usec * 1e-6; }

struct Measure {
  double wall_s = 0, cpu_s = 0;
  long max_rss_kb = 0;
  uint64_t records = 0, rejected = 0;
  char layout[24] = {0};
};

// Runs `read` in a child process; its rusage gives the CPU time and the peak RSS of the
// reading alone (the generator's buffers live in the parent).
template <typename F>
Measure in_child(F&& reader) {
  int fds[2];
  if (pipe(fds) != 0) throw std::runtime_error("pipe failed");
  pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    close(fds[0]);
    Measure m;
    auto t0 = std::chrono::steady_clock::now();
    LocalData data;
    reader(data);
    m.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    for (const InputReport& in : data.inputs) {
      m.records += in.records;
      m.rejected += in.rejected;
      std::snprintf(m.layout, sizeof m.layout, "%s", in.layout.c_str());
    }
    ssize_t n = write(fds[1], &m, sizeof m);
    _exit(n == static_cast<ssize_t>(sizeof m) ? 0 : 1);
  }
  close(fds[1]);
  Measure m;
  ssize_t n = ::read(fds[0], &m, sizeof m);
  close(fds[0]);
  int status = 0;
  rusage ru{};
  wait4(pid, &status, 0, &ru);
  if (n != static_cast<ssize_t>(sizeof m) || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw std::runtime_error("reader child failed");
  m.cpu_s = tv_seconds(ru.ru_utime) + tv_seconds(ru.ru_stime);
  m.max_rss_kb = ru.ru_maxrss;
  return m;
}

void print(const char* label, uint64_t bytes, const Measure& m, unsigned threads) {
  double mb = static_cast<double>(bytes) / (1 << 20);
  std::printf("%-30s %8.0f MB  %7.1f MB/s  %7.1f MB/s/core  peak RSS %6.1f MB  records %9llu  rejected %llu  layout %s  (%u thread%s)\n",
              label, mb, mb / m.wall_s, mb / m.cpu_s, m.max_rss_kb / 1024.0,
              static_cast<unsigned long long>(m.records), static_cast<unsigned long long>(m.rejected),
              m.layout[0] ? m.layout : "-", threads, threads == 1 ? "" : "s");
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  const char* tmp = std::getenv("TMPDIR");
  fs::path dir = fs::path(tmp && *tmp ? tmp : "/tmp") / ("culprit_bench_parse_" + std::to_string(getpid()));
  uint64_t mb227 = 1024, mb_old = 256, mb228 = 256, mb_csv = 256, mb_net_qp = 256;
  unsigned files = 0;
  bool keep = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto num = [&]() -> uint64_t {
      if (i + 1 >= argc) throw std::invalid_argument(a + " needs a value");
      return std::stoull(argv[++i]);
    };
    if (a == "--dir" && i + 1 < argc) dir = argv[++i];
    else if (a == "--mb-2.27") mb227 = num();
    else if (a == "--mb-old") mb_old = num();
    else if (a == "--mb-2.28") mb228 = num();
    else if (a == "--mb-csv") mb_csv = num();
    else if (a == "--mb-net-qp") mb_net_qp = num();
    else if (a == "--files") files = static_cast<unsigned>(num());
    else if (a == "--keep") keep = true;
    else {
      std::fprintf(stderr,
                   "usage: bench_parse [--dir DIR] [--mb-2.27 N] [--mb-old N] [--mb-2.28 N] [--mb-csv N] "
                   "[--mb-net-qp N] [--files N] [--keep]\n");
      return 2;
    }
  }
  fs::create_directories(dir);
  std::printf("bench_parse: %s, %u cores\n", dir.c_str(), std::thread::hardware_concurrency());
  uint64_t total = 0;
  try {
    struct Job { const char* label; fs::path path; Layout layout; uint64_t mb; };
    std::vector<Job> jobs = {{"nccl-json 2.27", dir / "big_12715772615376301750_3.json", Layout::k227, mb227},
                             {"nccl-json 2.24-2.26", dir / "old-hostA-4242.txt", Layout::k224, mb_old},
                             {"nccl-json 2.28-2.29.2", dir / "new_12715772615376301750_3.json", Layout::k228, mb228}};
    for (const Job& j : jobs) {
      if (j.mb == 0) continue;
      uint64_t bytes = write_trace(j.path, j.layout, j.mb, 42);
      total += bytes;
      Measure m = in_child([&](LocalData& d) { read_nccl_trace_file(j.path.string(), "hostA", d); });
      print(j.label, bytes, m, 1);
      fs::remove(j.path);
    }
    // probing's tables: each written by its generator, read by the same CSV reader.
    struct CsvJob {
      const char* label;
      const char* name;
      uint64_t mb;
      uint64_t (*write)(const fs::path&, uint64_t, uint64_t);
      uint64_t seed;
    };
    const CsvJob csv_jobs[] = {{"probing-csv proxy_ops", "proxy_ops.csv", mb_csv, write_csv, 7},
                               {"probing-csv net_qp", "net_qp.csv", mb_net_qp, write_net_qp_csv, 9}};
    for (const CsvJob& j : csv_jobs) {
      if (j.mb == 0) continue;
      fs::path p = dir / j.name;
      uint64_t bytes = j.write(p, j.mb, j.seed);
      total += bytes;
      Measure m = in_child([&](LocalData& d) { read_probing_csv_file(p.string(), "hostA", d); });
      print(j.label, bytes, m, 1);
      fs::remove(p);
    }
    if (files > 0) {
      std::vector<InputFile> inputs;
      uint64_t bytes = 0;
      for (unsigned f = 0; f < files; ++f) {
        fs::path p = dir / ("part_12715772615376301750_" + std::to_string(f) + ".json");
        bytes += write_trace(p, Layout::k227, std::max<uint64_t>(1, mb227 / files), 100 + f);
        inputs.push_back({"hostA", p.string(), "nccl-json"});
      }
      total += bytes;
      unsigned threads = std::max(1u, std::thread::hardware_concurrency());
      Measure m = in_child([&](LocalData& d) { read_input_files(inputs, d, threads); });
      print("nccl-json 2.27, files in parallel", bytes, m, threads);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_parse: %s\n", e.what());
    if (!keep) fs::remove_all(dir);
    return 1;
  }
  std::printf("generated %.2f GB in all\n", static_cast<double>(total) / (1ull << 30));
  if (!keep) fs::remove_all(dir);
  return 0;
}
