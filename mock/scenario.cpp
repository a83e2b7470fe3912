// Scenario SPEC parsing: comma-separated key=value (CONTRACT.md, "Mock scenario SPEC").
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "mock/simulator.hpp"

namespace culprit::mock {
namespace {

std::string trim(std::string_view s) {
  size_t a = 0, b = s.size();
  while (a < b && (s[a] == ' ' || s[a] == '\t' || s[a] == '\n' || s[a] == '\r')) ++a;
  while (b > a && (s[b - 1] == ' ' || s[b - 1] == '\t' || s[b - 1] == '\n' || s[b - 1] == '\r')) --b;
  return std::string(s.substr(a, b - a));
}

[[noreturn]] void bad(const std::string& key, const std::string& value, const std::string& why) {
  throw std::invalid_argument("mock key '" + key + "': invalid value '" + value + "' (" + why + ")");
}

int64_t parse_int(const std::string& key, const std::string& v, int64_t lo, int64_t hi) {
  int64_t x = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
  if (v.empty() || ec != std::errc() || p != v.data() + v.size()) bad(key, v, "expected an integer");
  if (x < lo || x > hi)
    bad(key, v, "expected " + std::to_string(lo) + ".." + std::to_string(hi));
  return x;
}

uint64_t parse_u64(const std::string& key, const std::string& v) {
  uint64_t x = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
  if (v.empty() || ec != std::errc() || p != v.data() + v.size())
    bad(key, v, "expected an unsigned integer");
  return x;
}

double parse_double(const std::string& key, const std::string& v, double lo, double hi) {
  if (v.empty()) bad(key, v, "expected a number");
  char* end = nullptr;
  errno = 0;
  double x = std::strtod(v.c_str(), &end);
  if (end != v.c_str() + v.size() || errno != 0 || !std::isfinite(x)) bad(key, v, "expected a number");
  if (x < lo || x > hi) bad(key, v, "out of range");
  return x;
}

// 64M, 1G, 512K, 1048576
uint64_t parse_bytes(const std::string& key, const std::string& v) {
  if (v.empty()) bad(key, v, "expected a byte count");
  uint64_t mult = 1;
  std::string num = v;
  char last = v.back();
  if (last == 'K' || last == 'k') mult = 1ull << 10;
  if (last == 'M' || last == 'm') mult = 1ull << 20;
  if (last == 'G' || last == 'g') mult = 1ull << 30;
  if (mult != 1) num = v.substr(0, v.size() - 1);
  uint64_t x = parse_u64(key, num);
  if (x == 0 || x > (1ull << 40) / mult) bad(key, v, "expected 1..1T bytes");
  return x * mult;
}

std::string fmt_double(double x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%g", x);
  return buf;
}

// "dp+world" -> "world+dp": one spelling per set of communicators.
std::string normalise_comms(const std::string& v) {
  std::vector<std::string> parts;
  size_t pos = 0;
  while (pos <= v.size()) {
    size_t plus = v.find('+', pos);
    if (plus == std::string::npos) plus = v.size();
    std::string part = trim(std::string_view(v).substr(pos, plus - pos));
    pos = plus + 1;
    if (part != "world" && part != "dp" && part != "pp")
      bad("comms", v, "expected world, world+dp, pp or pp+world");
    for (const auto& q : parts)
      if (q == part) bad("comms", v, "communicator '" + part + "' named twice");
    parts.push_back(part);
  }
  std::string out;
  for (const char* name : {"pp", "world", "dp"})
    for (const auto& q : parts)
      if (q == name) out += (out.empty() ? "" : "+") + q;
  return out;
}

Fault parse_fault(const std::string& v) {
  const std::string key = "fault";
  Fault f;
  if (v == "none") {
    f.kind = "none";
    return f;
  }
  auto c1 = v.find(':');
  if (c1 == std::string::npos) bad(key, v, "expected kind:rank[:magnitude] or none");
  f.kind = v.substr(0, c1);
  std::string rest = v.substr(c1 + 1);
  std::string mag;
  auto c2 = rest.find(':');
  if (c2 != std::string::npos) {
    mag = rest.substr(c2 + 1);
    rest = rest.substr(0, c2);
  }
  if (f.kind == "slow_gpu" || f.kind == "slow_consumer" || f.kind == "slow_flush") {
    f.rank = int(parse_int(key, rest, 0, 1 << 24));
  } else if (f.kind == "slow_link") {
    auto dash = rest.find('-');
    if (dash == std::string::npos) {
      f.rank = int(parse_int(key, rest, 0, 1 << 24));
    } else {
      f.rank = int(parse_int(key, rest.substr(0, dash), 0, 1 << 24));
      f.peer = int(parse_int(key, rest.substr(dash + 1), 0, 1 << 24));
      if (f.peer == f.rank) bad(key, v, "a link needs two different ranks");
    }
  } else if (f.kind == "hang") {
    auto at = rest.find('@');
    if (at == std::string::npos) {
      f.rank = int(parse_int(key, rest, 0, 1 << 24));
    } else {
      f.rank = int(parse_int(key, rest.substr(0, at), 0, 1 << 24));
      f.seq = int(parse_int(key, rest.substr(at + 1), 0, 1 << 24));
    }
    if (!mag.empty()) bad(key, v, "hang takes no magnitude");
  } else {
    bad(key, v,
        "unknown fault kind '" + f.kind +
            "'; kinds: slow_gpu, slow_consumer, slow_link, slow_flush, hang, none");
  }
  if (!mag.empty()) {
    f.magnitude = parse_double(key, mag, 0, 1e9);
    if (f.magnitude <= 0) bad(key, v, "magnitude must be positive");
  }
  return f;
}

std::string fault_spec(const Fault& f) {
  if (f.kind == "none") return "none";
  std::string s = f.kind;
  s.append(":").append(std::to_string(f.rank));
  if (f.kind == "slow_link" && f.peer >= 0) s.append("-").append(std::to_string(f.peer));
  if (f.kind == "hang" && f.seq >= 0) s.append("@").append(std::to_string(f.seq));
  if (f.magnitude > 0) s.append(":").append(fmt_double(f.magnitude));
  return s;
}

}  // namespace

Scenario Scenario::parse(const std::string& spec) {
  Scenario sc;
  std::string pipeline_key;  // a pipeline-only key that was given
  size_t pos = 0;
  while (pos <= spec.size()) {
    size_t comma = spec.find(',', pos);
    if (comma == std::string::npos) comma = spec.size();
    std::string item = trim(std::string_view(spec).substr(pos, comma - pos));
    pos = comma + 1;
    if (item.empty()) continue;
    auto eq = item.find('=');
    if (eq == std::string::npos) throw std::invalid_argument("mock spec item '" + item + "' is not key=value");
    std::string key = trim(item.substr(0, eq));
    std::string value = trim(item.substr(eq + 1));
    if (key == "topology") {
      if (value != "ring" && value != "tree" && value != "pipeline")
        throw std::invalid_argument("mock key 'topology': unsupported value '" + value +
                                    "' (supported: ring, tree, pipeline)");
      sc.topology = value;
    } else if (key == "comms") {
      sc.comms = normalise_comms(value);
    } else if (key == "hetero") {
      sc.hetero = parse_double(key, value, 0, 1);
    } else if (key == "compute") {
      sc.compute = parse_double(key, value, 0.01, 100);
    } else if (key == "host") {
      if (value != "sync" && value != "ahead")
        throw std::invalid_argument("mock key 'host': unsupported value '" + value + "' (supported: sync, ahead)");
      sc.host = value;
    } else if (key == "proto") {
      if (value != "simple" && value != "ll" && value != "ll128")
        throw std::invalid_argument("mock key 'proto': unsupported value '" + value +
                                    "' (supported: simple, ll, ll128)");
      sc.proto = value;
    } else if (key == "stages") {
      pipeline_key = key;
      sc.stages = int(parse_int(key, value, 2, 1 << 20));
    } else if (key == "microbatches") {
      pipeline_key = key;
      sc.microbatches = int(parse_int(key, value, 1, 1024));
    } else if (key == "backward") {
      pipeline_key = key;
      if (value != "0" && value != "1")
        throw std::invalid_argument("mock key 'backward': invalid value '" + value + "' (expected 0 or 1)");
      sc.backward = value == "1";
    } else if (key == "engine") {
      if (value != "auto" && value != "flow")
        throw std::invalid_argument("mock key 'engine': unsupported value '" + value + "' (supported: auto, flow)");
      sc.engine = value;
    } else if (key == "nodes") {
      sc.nodes = int(parse_int(key, value, 1, 4096));
    } else if (key == "gpus") {
      sc.gpus = int(parse_int(key, value, 1, 64));
    } else if (key == "channels") {
      sc.channels = int(parse_int(key, value, 1, 32));
    } else if (key == "seqs") {
      sc.seqs = int(parse_int(key, value, 1, 100000));
    } else if (key == "seed") {
      sc.seed = parse_u64(key, value);
    } else if (key == "jitter") {
      sc.jitter = parse_double(key, value, 0, 2);
    } else if (key == "bytes") {
      sc.bytes = parse_bytes(key, value);
    } else if (key == "layout") {
      if (value != "2.27" && value != "flat")
        throw std::invalid_argument("mock key 'layout': unsupported value '" + value + "' (supported: 2.27, flat)");
      sc.layout = value;
    } else if (key == "fault") {
      Fault f = parse_fault(value);
      if (f.kind != "none") sc.faults.push_back(f);
    } else {
      throw std::invalid_argument("unknown mock key '" + key + "'");
    }
  }
  if (sc.nodes * sc.gpus < 2)
    throw std::invalid_argument("mock keys 'nodes' x 'gpus': need at least 2 ranks");
  if (!pipeline_key.empty() && sc.topology != "pipeline")
    throw std::invalid_argument("mock key '" + pipeline_key + "' applies to topology=pipeline only");
  if (sc.engine == "flow" && sc.topology != "ring")
    throw std::invalid_argument("mock key 'engine': flow is only a choice for topology=ring (the others always use it)");
  if (!sc.comms.empty()) {
    const bool pipeline = sc.topology == "pipeline";
    if (pipeline ? (sc.comms != "pp" && sc.comms != "pp+world")
                 : (sc.comms != "world" && sc.comms != "world+dp"))
      throw std::invalid_argument("mock key 'comms': '" + sc.comms + "' does not fit topology=" + sc.topology +
                                  (pipeline ? " (supported: pp, pp+world)" : " (supported: world, world+dp)"));
  }
  return sc;
}

std::string Scenario::to_spec() const {
  std::string s = "topology=" + topology + ",nodes=" + std::to_string(nodes) +
                  ",gpus=" + std::to_string(gpus) + ",channels=" + std::to_string(channels) +
                  ",seqs=" + std::to_string(seqs) + ",seed=" + std::to_string(seed) +
                  ",jitter=" + fmt_double(jitter) + ",bytes=" + std::to_string(bytes);
  if (layout != "2.27") s += ",layout=" + layout;
  if (!comms.empty()) s += ",comms=" + comms;
  if (hetero > 0) s += ",hetero=" + fmt_double(hetero);
  if (compute != 1) s += ",compute=" + fmt_double(compute);
  if (host != "sync") s += ",host=" + host;
  if (proto != "simple") s += ",proto=" + proto;
  if (topology == "pipeline") {
    if (stages > 0) s += ",stages=" + std::to_string(stages);
    s += ",microbatches=" + std::to_string(microbatches) + ",backward=" + (backward ? "1" : "0");
  }
  if (engine != "auto") s += ",engine=" + engine;
  if (faults.empty()) s += ",fault=none";
  for (const auto& f : faults) s += ",fault=" + fault_spec(f);
  return s;
}

std::string Scenario::help() {
  return R"(Mock scenario SPEC: comma-separated key=value, e.g.
  topology=ring,nodes=4,gpus=8,channels=2,seqs=20,fault=slow_gpu:13
  topology=tree,nodes=4,gpus=4,comms=world+dp,fault=slow_gpu:5,fault=slow_link:3-8

Keys (default):
  topology=ring     ring     AllReduce RING SIMPLE over all GPUs (channel c rotates the in-node
                             order by c*gpus/channels)
                    tree     AllReduce TREE SIMPLE: NCCL's double binary tree across nodes
                             (channels c < channels/2 use tree 0, the others its mirror),
                             a chain of GPUs inside each node; channels must be even
                    pipeline pipeline parallelism: P2P Send/Recv of activations between
                             consecutive stages, microbatches forward, then gradients back
  nodes=4           nodes (hosts node000, node001, ...)
  gpus=8            GPUs (processes) per node; global rank = node*gpus + local
  channels=2        NCCL channels (rings or trees); pipeline: channels per p2p peer (<= 16)
  seqs=20           iterations: AllReduce collectives per communicator (SeqNum 0..seqs-1);
                    pipeline: training iterations
  seed=1            random seed (jitter, pids, clocks, commHash)
  jitter=0.05       sigma of the log-normal noise on every compute and transfer time
  hetero=0          sigma of the static spread of GPU speed and network link bandwidth
                    (heterogeneous hardware; fixed per GPU and per link for the run)
  bytes=64M         bytes per AllReduce per rank, or per pipeline send (suffix K, M, G)
  compute=1         scale of each GPU's own work between operations (the compute/communication
                    ratio): 1 = ~2 ms before each collective (0.2 ms before a world+dp ring's
                    second), pipeline 0.5 ms forward and 1 ms backward per microbatch
  host=sync         when a host enqueues each operation: sync, 20-200 us before its kernel
                    starts; ahead, 5 us after its previous enqueue (it never waits for its
                    GPU): the proxy starts each op once the one before it on the connection
                    ended, and its waits span the GPU's own work too
  proto=simple      NCCL protocol of the collectives (p2p always SIMPLE): simple (steps of up
                    to 512 KiB, flushed after a GPU Direct receive), ll (32 KiB of data per
                    step in 16-byte lines of 8 data bytes: twice the bytes on the wire) or
                    ll128 (576000 data bytes per step in 128-byte lines of 120); LL and
                    LL128 steps carry their flags and are never flushed
  layout=2.27       trace layout: 2.27 (Group wrapping each operation, as NCCL 2.27 prints)
                    or flat (operations at top level)
  comms=            communicators; ring/tree: world (default) or world+dp (adds one DP
                    communicator per local GPU index across nodes: each iteration runs a DP
                    AllReduce, then a world AllReduce); pipeline: pp (default: one
                    communicator per pipeline) or pp+world (a world AllReduce ends each
                    iteration)
  stages=N          pipeline: stages (default: one per node); must divide nodes*gpus;
                    stage s holds global ranks s*M .. s*M+M-1 (M = nodes*gpus/stages)
  microbatches=4    pipeline: microbatches per iteration
  backward=1        pipeline: 1 = gradients flow back after the forward pass, 0 = forward only
  engine=auto       auto, or flow: run a plain ring through the general engine (for tests)
  fault=KIND:...    inject a fault; repeat the key for several faults, e.g.
                    fault=slow_gpu:5,fault=slow_link:11-12; fault=none: healthy

Fault kinds (R, S, D are global ranks; magnitude optional):
  slow_gpu:R[:f]        straggler GPU: all of R's compute (the work before each operation
                        and every reduction/copy step) is f times slower (default 3)
                                                                              -> gpu_producer
  slow_consumer:R[:f]   R frees its receive slots late: each slot release takes f x the healthy
                        network time of one message, serially (default 5)     -> gpu_consumer
  slow_link:S-D[:f]     the network connection S->D (all channels, all communicators) has 1/f
                        the bandwidth (default 8); slow_link:S uses S's first network
                        successor                                               -> network_link
  slow_flush:R[:f]      R's GPU-direct flush of received data takes f x longer, serially
                        (default 100)                                          -> flush
  hang:R[@SEQ]          R never starts iteration SEQ (default seqs/2); peers wait; traces
                        end there as if dumped when the job was killed          -> hang
)";
}

}  // namespace culprit::mock
