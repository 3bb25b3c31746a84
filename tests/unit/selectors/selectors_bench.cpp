// Selector matching cost per object, the figure that bounds LIST filtering and watch
// fan-out. Prints ns/op of thread CPU time (the build machine is shared, so wall
// time would mostly measure the scheduler); not a test.
#include <time.h>

#include <cstdio>

#include "cache/selectors/field_selector.h"
#include "cache/selectors/label_selector.h"

namespace {

double threadCpuNanos() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e9 + static_cast<double>(ts.tv_nsec);
}

template <class Fn>
double nsPerOp(long iterations, Fn&& fn) {
  const double start = threadCpuNanos();
  long hits = 0;
  for (long i = 0; i < iterations; ++i) hits += fn() ? 1 : 0;
  const double elapsed = threadCpuNanos() - start;
  if (hits == -1) std::puts("");  // keeps the loop observable
  return elapsed / static_cast<double>(iterations);
}

}  // namespace

int main() {
  constexpr long kIterations = 5'000'000;
  const cache::Labels labels{{"app", "web"},           {"app.kubernetes.io/part-of", "shop"},
                             {"pod-template-hash", "7d9f8b6c5"}, {"release", "stable"},
                             {"tier", "front"},        {"version", "3"}};
  auto selector = cache::LabelSelector::parse("app=web,tier in (front,back),!canary");
  auto miss = cache::LabelSelector::parse("app=web,tier in (db,cache),!canary");
  if (!selector || !miss) return 1;
  std::printf("label selector, 3 requirements vs 6 labels (match): %.1f ns/op\n",
              nsPerOp(kIterations, [&] { return selector->matches(labels); }));
  std::printf("label selector, 3 requirements vs 6 labels (miss):  %.1f ns/op\n",
              nsPerOp(kIterations, [&] { return miss->matches(labels); }));

  auto pods = cache::FieldSpec::forBuiltin("", "v1", "pods", true);
  auto fields_selector = cache::FieldSelector::parse("spec.nodeName=node-1,status.phase!=Failed", *pods);
  const cache::Fields fields{{"spec.nodeName", "node-1"}, {"spec.restartPolicy", "Always"}, {"status.phase", "Running"}};
  if (!fields_selector) return 1;
  std::printf("field selector, 2 terms vs 3 fields:                %.1f ns/op\n",
              nsPerOp(kIterations, [&] { return fields_selector->matches(fields, "web-0", "default"); }));
  std::printf("label selector parse, 3 requirements:               %.1f ns/op\n",
              nsPerOp(200'000, [&] { return cache::LabelSelector::parse("app=web,tier in (front,back),!canary").has_value(); }));
  return 0;
}
