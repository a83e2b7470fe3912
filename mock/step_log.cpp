#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "mock/records.hpp"
#include "mock/sim_internal.hpp"

namespace culprit::mock {

SimStep StepSummary::step(int k) const {
  if (k >= started) return SimStep{k, kInf, kInf, kInf, kInf};
  if (k < started - kKept) throw std::logic_error("mock: step " + std::to_string(k) + " is no longer kept");
  return recent[size_t(k % kKept)];
}

StepLog::StepLog(int n_steps, bool keep_all) {
  sum_.n_steps = n_steps;
  if (keep_all) {
    all_.resize(size_t(n_steps));
    for (int k = 0; k < n_steps; ++k) all_[size_t(k)] = SimStep{k, kInf, kInf, kInf, kInf};
  }
}

void StepLog::see(double t) {
  if (std::isfinite(t)) sum_.last = std::max(sum_.last, t);
}

bool StepLog::start(int k, double posted) {
  if (k == sum_.started && std::isfinite(posted)) ++sum_.started;
  return k < sum_.started;
}

namespace {

// A step that never started can have no other time either: its data never moved. (What the
// renderers print of such a step relies on it.)
void check_never_started(int k, std::initializer_list<double> times) {
  for (double t : times)
    if (std::isfinite(t))
      throw std::logic_error("mock: step " + std::to_string(k) + " has times but never started (simulator bug)");
}

}  // namespace

void StepLog::sent(int k, const SimStep& s) {
  if (!all_.empty()) all_[size_t(k)] = s;
  sum_.phase[0] += s.t1 - s.t0;
  sum_.phase[1] += s.t2 - s.t1;
  sum_.phase[2] += s.t3 - s.t2;
  if (std::isfinite(s.t2)) ++sum_.transferred;
  for (double t : {s.t0, s.t1, s.t2, s.t3}) see(t);
  if (start(k, s.t0)) sum_.recent[size_t(k % StepSummary::kKept)] = s;
  else check_never_started(k, {s.t1, s.t2, s.t3});
}

void StepLog::received(int k, double posted, double arrived, double flushed) {
  if (!all_.empty()) {
    SimStep& st = all_[size_t(k)];
    st.t0 = posted;
    st.t1 = arrived;
    st.t2 = flushed;
  }
  sum_.phase[3] += arrived - posted;
  sum_.phase[4] += flushed - arrived;
  if (std::isfinite(arrived)) ++sum_.transferred;
  for (double t : {posted, arrived, flushed}) see(t);
  if (start(k, posted)) sum_.recent[size_t(k % StepSummary::kKept)] = SimStep{k, posted, arrived, flushed, kInf};
  else check_never_started(k, {arrived, flushed});
}

void StepLog::freed(int k, double t) {
  if (!all_.empty()) all_[size_t(k)].t3 = t;
  see(t);
  if (k >= sum_.started) {
    check_never_started(k, {t});
  } else {
    if (k < sum_.started - StepSummary::kKept)
      throw std::logic_error("mock: step " + std::to_string(k) + " released after it left the kept window");
    sum_.recent[size_t(k % StepSummary::kKept)].t3 = t;
  }
}

const OperationRecord* NodeTimeline::operation(int index) const {
  auto it = std::lower_bound(operations.begin(), operations.end(), index,
                             [](const OperationRecord& r, int i) { return r.index < i; });
  return it != operations.end() && it->index == index ? &*it : nullptr;
}

const ProxyOpRecord* NodeTimeline::proxy_op(int index) const {
  auto it = std::lower_bound(proxy_ops.begin(), proxy_ops.end(), index,
                             [](const ProxyOpRecord& r, int i) { return r.index < i; });
  return it != proxy_ops.end() && it->index == index ? &*it : nullptr;
}

}  // namespace culprit::mock
