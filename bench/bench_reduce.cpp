// Benchmark of the local reduction: records/s of the CPU path (one thread, all threads) and
// of the CUDA path including host-device transfers, on generated ProxyOp records.
//
//   bench_reduce [--sizes 1000000,10000000[,100000000]] [--threads N] [--edges-per-comm N]
//
// Every path's result is checked against the CPU one; a mismatch exits with status 1.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "kernels/reduce_cuda.hpp"
#include "reduce/edge_reduce.hpp"

namespace {

using culprit::CommWindow;
using culprit::EdgeSummary;
using culprit::ProxyOpRecord;

struct Options {
  std::vector<std::size_t> sizes = {1'000'000, 10'000'000};
  unsigned threads = 0;
  int ranks = 64;  // per communicator
  int channels = 8;
  int comms = 4;
};

uint64_t splitmix(uint64_t& s) {
  uint64_t z = (s += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// Ring traffic: every rank sends to rank+1 and receives from rank-1 on every channel, for
// `n / (comms*ranks*channels*2)` sequence numbers; records in the order a reader produces
// them (per file: one rank's ops in sequence order).
std::vector<ProxyOpRecord> generate(std::size_t n, const Options& o) {
  std::vector<ProxyOpRecord> recs(n);
  const std::size_t per_seq = static_cast<std::size_t>(o.comms) * o.ranks * o.channels * 2;
  unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  std::vector<std::thread> workers;
  for (unsigned t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      uint64_t state = 12345 + t;
      for (std::size_t i = n * t / threads; i < n * (t + 1) / threads; ++i) {
        ProxyOpRecord& r = recs[i];
        std::size_t k = i % per_seq;
        const bool send = k % 2 == 0;
        k /= 2;
        r.channel = static_cast<int32_t>(k % o.channels);
        k /= o.channels;
        r.rank = static_cast<int32_t>(k % o.ranks);
        k /= o.ranks;
        r.comm_hash = 0x1000 + k;
        r.seq = i / per_seq;
        r.is_send = send;
        r.peer = send ? (r.rank + 1) % o.ranks : (r.rank + o.ranks - 1) % o.ranks;
        r.is_p2p = r.comm_hash == 0x1000 + static_cast<uint64_t>(o.comms) - 1;  // one p2p comm
        r.steps = 8;
        r.bytes = 8 * 524288;
        uint64_t x = splitmix(state);
        const int base = send ? 0 : 3;
        for (int p = 0; p < 3; ++p) r.phase_ns[base + p] = (x >> (p * 16)) & 0xffff;
        r.start_ns = i * 1000;
      }
    });
  }
  for (auto& w : workers) w.join();
  return recs;
}

bool same(const std::vector<EdgeSummary>& a, const std::vector<EdgeSummary>& b) {
  return a.size() == b.size() &&
         (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(EdgeSummary)) == 0);
}

template <typename Fn>
double seconds(Fn&& fn) {
  auto t0 = std::chrono::steady_clock::now();
  fn();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void line(const char* what, std::size_t n, double s) {
  std::printf("  %-34s %10.1f ms %10.2f M records/s\n", what, s * 1e3, n / s / 1e6);
}

int usage(const char* argv0) {
  std::fprintf(stderr,
               "usage: %s [--sizes N,N,...] [--threads N] [--ranks N] [--channels N] [--comms N]\n",
               argv0);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    try {
      if (a == "--sizes") {
        o.sizes.clear();
        std::stringstream ss(value());
        std::string item;
        while (std::getline(ss, item, ',')) o.sizes.push_back(std::stoull(item));
      } else if (a == "--threads") {
        o.threads = static_cast<unsigned>(std::stoul(value()));
      } else if (a == "--ranks") {
        o.ranks = std::max(2, std::stoi(value()));
      } else if (a == "--channels") {
        o.channels = std::max(1, std::stoi(value()));
      } else if (a == "--comms") {
        o.comms = std::max(1, std::stoi(value()));
      } else if (a == "-h" || a == "--help") {
        usage(argv[0]);
        return 0;
      } else {
        return usage(argv[0]);
      }
    } catch (const std::exception&) {
      std::fprintf(stderr, "bad value for %s\n", a.c_str());
      return 2;
    }
  }

  const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
  const unsigned all = o.threads != 0 ? o.threads : hw;
  culprit::CudaAvailability cuda = culprit::cuda_availability();
  std::printf("bench_reduce: %u hardware threads; record %zu bytes; %d comms x %d ranks x %d "
              "channels\n",
              hw, sizeof(ProxyOpRecord), o.comms, o.ranks, o.channels);
  std::printf("cuda: %s\n", cuda.usable ? cuda.device.c_str() : ("skipped (" + cuda.reason + ")").c_str());

  bool ok = true;
  for (std::size_t n : o.sizes) {
    std::vector<ProxyOpRecord> recs;
    double gen = seconds([&] { recs = generate(n, o); });
    // Window: keep the newer half of the sequences of every collective communicator.
    const uint64_t seqs = recs.empty() ? 0 : recs.back().seq + 1;
    std::vector<CommWindow> windows;
    for (int c = 0; c < o.comms; ++c) windows.push_back({0x1000 + static_cast<uint64_t>(c), seqs / 2});
    std::printf("records %zu (%.2f GB, generated in %.1f s), %llu sequences, window keeps seq >= %llu\n",
                n, n * sizeof(ProxyOpRecord) / 1e9, gen, static_cast<unsigned long long>(seqs),
                static_cast<unsigned long long>(seqs / 2));

    std::vector<EdgeSummary> one, many;
    double t1 = seconds([&] { one = culprit::reduce_edges_cpu(recs, windows, 1); });
    line("cpu, 1 thread", n, t1);
    double tn = seconds([&] { many = culprit::reduce_edges_cpu(recs, windows, all); });
    std::string label = "cpu, " + std::to_string(all) + " threads";
    line(label.c_str(), n, tn);
    std::printf("  edges %zu\n", one.size());
    if (!same(one, many)) {
      std::printf("  MISMATCH: cpu 1 thread vs %u threads\n", all);
      ok = false;
    }
    if (!cuda.usable) {
      std::printf("  cuda: skipped (%s)\n", cuda.reason.c_str());
      continue;
    }
    try {
      std::vector<EdgeSummary> gpu;
      double first = seconds([&] { gpu = culprit::reduce_edges_cuda(recs, windows); });
      line("cuda incl. transfers (first call)", n, first);
      double warm = seconds([&] { gpu = culprit::reduce_edges_cuda(recs, windows); });
      line("cuda incl. transfers (warm)", n, warm);
      if (!same(one, gpu)) {
        std::printf("  MISMATCH: cuda vs cpu\n");
        ok = false;
      } else {
        std::printf("  cuda result identical to cpu (%zu edges)\n", gpu.size());
      }
    } catch (const culprit::CudaReduceError& e) {
      std::printf("  cuda: failed (%s)\n", e.what());
      ok = false;
    }
  }
  return ok ? 0 : 1;
}
