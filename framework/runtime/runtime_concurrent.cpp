// Independent steps of a plan at once (GE's multi-stream idea): engine segments and control-flow nodes that
// read nothing from each other run on the thread budget together, each kernel call with a share of it.
// Results are those of the sequential order: every step computes the same values whichever thread and however
// many threads run it, and a step starts only once every step it reads from has finished.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <functional>
#include <mutex>
#include <queue>
#include <set>
#include <thread>

#include "graphsplit/kernels/kernels.h"
#include "runtime/runtime_impl.h"

namespace graphsplit {

// Threads that take jobs only when idle: a job is never queued behind another, so a plan run on a worker that
// finds no idle helper runs its steps itself, and nested plans cannot wait for each other.
class WorkerPool {
 public:
  explicit WorkerPool(int threads) {
    for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { work(); });
  }
  ~WorkerPool() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    for (std::thread& t : threads_) t.join();
  }
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  size_t size() const { return threads_.size(); }

  bool try_run(std::function<void()> job) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (idle_ <= static_cast<int>(jobs_.size())) return false;
      jobs_.push_back(std::move(job));
    }
    wake_.notify_one();
    return true;
  }

 private:
  void work() {
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      ++idle_;
      wake_.wait(lock, [this] { return stop_ || !jobs_.empty(); });
      --idle_;
      if (stop_) return;
      std::function<void()> job = std::move(jobs_.front());
      jobs_.pop_front();
      lock.unlock();
      job();
      lock.lock();
    }
  }

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> jobs_;
  std::vector<std::thread> threads_;
  int idle_ = 0;
  bool stop_ = false;
};

Runtime::Impl::Impl() = default;
Runtime::Impl::~Impl() = default;

namespace {

constexpr size_t kMaxStepsForChainCheck = 4096;
constexpr double kBriefMs = 0.05;  // a step this short costs less than waking a thread for it  // above, the
                                   // check's bit sets cost more than it saves

// True when every step reads, directly or through others, from the step before it: the steps then form one
// chain and nothing can run at once.
bool one_chain(const std::vector<std::vector<int>>& producers) {
  const size_t n = producers.size();
  const size_t words = (n + 63) / 64;
  std::vector<uint64_t> ancestors(n * words, 0);
  for (size_t k = 0; k < n; ++k) {
    uint64_t* mine = &ancestors[k * words];
    for (int p : producers[k]) {
      const uint64_t* theirs = &ancestors[static_cast<size_t>(p) * words];
      for (size_t w = 0; w < words; ++w) mine[w] |= theirs[w];
      mine[p / 64] |= uint64_t{1} << (p % 64);
    }
    if (k > 0 && !(mine[(k - 1) / 64] >> ((k - 1) % 64) & 1)) return false;
  }
  return true;
}

}  // namespace

namespace {

// Control edges from a step's nodes to later steps order them as data does; NoOps (which do not run) are
// followed through.
void add_control_order(const Graph& g, const std::vector<int>& step_of,
                       std::vector<std::vector<int>>* producers) {
  for (const Node* node : g.nodes()) {
    const int from = step_of[node->id()];
    if (from < 0 || !node->any_control_edges()) continue;
    std::vector<const Node*> todo(node->control_outputs().begin(), node->control_outputs().end());
    std::set<const Node*> seen;
    while (!todo.empty()) {
      const Node* n = todo.back();
      todo.pop_back();
      if (!seen.insert(n).second) continue;
      if (const int to = step_of[n->id()]; to >= 0) {
        if (to > from) (*producers)[to].push_back(from);
        continue;
      }
      if (n->type() != sdk::op::kNoOp) continue;
      todo.insert(todo.end(), n->control_outputs().begin(), n->control_outputs().end());
      for (size_t o = 0; o < n->num_outputs(); ++o)
        for (const sdk::InPort& c : n->consumers(o)) todo.push_back(c.node);
    }
  }
}

}  // namespace

std::unique_ptr<StepGraph> make_step_graph(const GraphPlan& plan, const std::vector<int>& step_of) {
  const size_t n = plan.steps.size();
  if (n < 2) return nullptr;
  std::vector<int> producer(plan.num_slots, -1);
  for (size_t k = 0; k < n; ++k)
    for (int s : plan.steps[k].out_slots) producer[s] = static_cast<int>(k);
  auto g = std::make_unique<StepGraph>();
  g->successors.resize(n);
  g->reads.resize(n);
  g->predecessors.assign(n, 0);
  g->readers.assign(plan.num_slots, 0);
  g->last_ms.assign(n, -1);
  std::vector<std::vector<int>> producers(n);
  add_control_order(*plan.graph, step_of, &producers);
  for (size_t k = 0; k < n; ++k) {
    std::vector<int>& slots = g->reads[k];
    for (int s : plan.steps[k].in_slots)
      if (s >= 0) slots.push_back(s);
    std::sort(slots.begin(), slots.end());
    slots.erase(std::unique(slots.begin(), slots.end()), slots.end());
    for (int s : slots) {
      ++g->readers[s];
      if (producer[s] >= 0) producers[k].push_back(producer[s]);
    }
    std::sort(producers[k].begin(), producers[k].end());
    producers[k].erase(std::unique(producers[k].begin(), producers[k].end()), producers[k].end());
    g->predecessors[k] = static_cast<int>(producers[k].size());
    for (int p : producers[k]) g->successors[p].push_back(static_cast<int>(k));
  }
  for (int r : plan.results) g->readers[r] = 0;
  if (n <= kMaxStepsForChainCheck && one_chain(producers)) return nullptr;
  return g;
}

namespace {

// One concurrent run of a plan: the steps whose inputs are ready, lowest index first, taken by the calling
// thread and by the pool's idle workers until all have run or one has failed.
struct Schedule {
  const GraphPlan& plan;
  std::vector<Tensor>& values;
  const int budget;
  std::mutex mutex;
  std::condition_variable changed;
  std::vector<int> waiting, readers;
  std::priority_queue<int, std::vector<int>, std::greater<>> ready;
  size_t done = 0;
  int running = 0, helpers = 0, lent = 0;
  int failed_step = -1;
  Status failure;

  Schedule(const GraphPlan& p, std::vector<Tensor>& v, int threads)
      : plan(p), values(v), budget(threads), waiting(p.parallel->predecessors), readers(p.parallel->readers) {
    for (size_t k = 0; k < waiting.size(); ++k)
      if (waiting[k] == 0) ready.push(static_cast<int>(k));
  }

  bool over() const { return failed_step >= 0 || done == plan.steps.size(); }

  // Takes and runs ready steps until the schedule is over. The threads of the budget not lent to running
  // steps are shared among the ready ones (a step alone gets all of them); a step waits while none is free,
  // so the kernels never ask for more threads than the budget (oversubscribed OpenMP teams spin against each
  // other). A step that ran briefly last time runs on one thread without taking a share, and so does every
  // step of a helper: only the calling thread's OpenMP team grows, because idle teams spin on the cores a
  // while before they sleep (two teams on two cores ran PP-OCRv4 det cut into 272 segments 30% slower than
  // one).
  void work(const std::function<Status(const Step&)>& run, bool helper) {
    std::unique_lock<std::mutex> lock(mutex);
    for (;;) {
      changed.wait(lock,
                   [this] { return over() || (!ready.empty() && (lent < budget || brief(ready.top()))); });
      if (over()) return;
      const int k = ready.top();
      ready.pop();
      const int share = brief(k) || helper ? 1 : std::max(1, (budget - lent) / (1 + long_ready()));
      const int lend = brief(k) ? 0 : share;
      lent += lend;
      ++running;
      lock.unlock();
      const int before = kernels::set_thread_share(share);
      const auto t0 = std::chrono::steady_clock::now();
      Status s = run(plan.steps[k]);
      const double ms =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      kernels::set_thread_share(before);
      lock.lock();
      plan.parallel->last_ms[k] = ms;
      lent -= lend;
      --running;
      ++done;
      if (!s.is_ok()) {
        if (failed_step < 0 || k < failed_step) {
          failed_step = k;
          failure = std::move(s);
        }
      } else {
        finish(k);
      }
      changed.notify_all();
    }
  }

  bool brief(int k) const {
    const double ms = plan.parallel->last_ms[k];
    return ms >= 0 && ms < kBriefMs;
  }

  // Ready steps (the one being taken excluded) that will want threads of their own.
  int long_ready() const {
    int n = 0;
    auto q = ready;
    for (; !q.empty(); q.pop()) n += brief(q.top()) ? 0 : 1;
    return n;
  }

  // Under the lock: successors whose inputs are all there become ready; values nobody else reads are freed.
  void finish(int k) {
    for (int next : plan.parallel->successors[k])
      if (--waiting[next] == 0) ready.push(next);
    for (int s : plan.parallel->reads[k])
      if (readers[s] > 0 && --readers[s] == 0) values[s] = Tensor();
  }
};

}  // namespace

namespace {
constexpr int kTrialRuns = 4;       // of each kind, the first untimed
constexpr double kTrialGain = 0.8;  // at once only when clearly faster: timings of one run vary by 10-20%
}  // namespace

// Runs a plan's steps, at once where they are independent and that was chosen; kAuto's trial is kept here.
Status Runtime::Impl::run_steps(const GraphPlan& plan, std::vector<Tensor>& values) {
  // A trace records steps one after another (its sink is not shared between threads).
  const bool may = plan.parallel && !trace && concurrency != RuntimeOptions::Concurrency::kNever &&
                   kernels::thread_budget() >= 2;
  StepGraph::Trial* trial =
      may && concurrency == RuntimeOptions::Concurrency::kAuto && plan.parallel->trial.choice < 0
          ? &plan.parallel->trial
          : nullptr;
  const bool concurrent = may && (concurrency == RuntimeOptions::Concurrency::kAlways ||
                                  (trial ? trial->runs >= kTrialRuns : plan.parallel->trial.choice == 1));
  const auto t0 = std::chrono::steady_clock::now();
  if (concurrent) {
    GS_RETURN_IF_ERROR(run_concurrently(plan, values));
  } else {
    for (const Step& step : plan.steps) {
      GS_RETURN_IF_ERROR(run_step(step, values));
      for (int r : step.release) values[r] = Tensor();
    }
  }
  if (!trial) return Status::ok();
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  if (trial->runs % kTrialRuns > 0) {
    double& best = concurrent ? trial->concurrent_ms : trial->sequential_ms;
    best = std::min(best, ms);
  }
  if (++trial->runs == 2 * kTrialRuns)
    trial->choice = trial->concurrent_ms < kTrialGain * trial->sequential_ms ? 1 : 0;
  return Status::ok();
}

Status Runtime::Impl::run_concurrently(const GraphPlan& plan, std::vector<Tensor>& values) {
  const int budget = kernels::thread_budget();
  // Made (or grown) only by the outermost concurrent run: nested ones run on its workers.
  if (schedules_running.fetch_add(1) == 0 && (!pool || static_cast<int>(pool->size()) < budget - 1)) {
    pool.reset();
    pool = std::make_unique<WorkerPool>(budget - 1);
  }
  struct Leave {
    std::atomic<int>& count;
    ~Leave() { --count; }
  } leave{schedules_running};
  Schedule schedule(plan, values, budget);
  ++plan.parallel->concurrent_runs;
  const std::function<Status(const Step&)> run = [&](const Step& step) {
    try {
      return run_step(step, values);
    } catch (const std::exception& e) {
      return Status::internal(source + ": " +
                              (step.node ? runtime_detail::describe(*step.node) : "a segment") +
                              " threw: " + e.what());
    }
  };
  // Helpers are asked for no more than the steps that could ever run beside this thread.
  const int wanted = std::min<int>(budget - 1, static_cast<int>(plan.steps.size()) - 1);
  for (int h = 0; h < wanted; ++h) {
    {
      std::lock_guard<std::mutex> lock(schedule.mutex);
      ++schedule.helpers;
    }
    const bool taken = pool->try_run([&schedule, &run] {
      schedule.work(run, true);
      std::lock_guard<std::mutex> lock(schedule.mutex);
      --schedule.helpers;
      schedule.changed.notify_all();
    });
    if (!taken) {
      std::lock_guard<std::mutex> lock(schedule.mutex);
      --schedule.helpers;
      break;
    }
  }
  schedule.work(run, false);
  std::unique_lock<std::mutex> lock(schedule.mutex);
  schedule.changed.wait(lock, [&] { return schedule.running == 0 && schedule.helpers == 0; });
  return schedule.failed_step >= 0 ? schedule.failure : Status::ok();
}

std::vector<ConcurrencyStats> Runtime::concurrency_stats() const {
  std::vector<ConcurrencyStats> out;
  for (const auto& [graph, plan] : impl_->plans) {
    if (!plan->parallel) continue;
    const StepGraph::Trial& t = plan->parallel->trial;
    ConcurrencyStats c;
    c.graph = graph->name();
    c.steps = plan->steps.size();
    c.concurrent_runs = plan->parallel->concurrent_runs;
    c.sequential_ms = t.sequential_ms < 1e300 ? t.sequential_ms : 0;
    c.concurrent_ms = t.concurrent_ms < 1e300 ? t.concurrent_ms : 0;
    c.choice = t.choice;
    out.push_back(std::move(c));
  }
  std::sort(out.begin(), out.end(),
            [](const ConcurrencyStats& a, const ConcurrencyStats& b) { return a.graph < b.graph; });
  return out;
}

std::string Runtime::concurrency_summary() const {
  std::string out;
  char line[512];
  for (const ConcurrencyStats& c : concurrency_stats()) {
    std::string why;
    if (impl_->concurrency == RuntimeOptions::Concurrency::kAlways) {
      why = "always (--concurrent=always)";
    } else if (impl_->concurrency == RuntimeOptions::Concurrency::kNever) {
      why = "never (--concurrent=never)";
    } else if (c.choice < 0) {
      why = "still timing both ways";
    } else {
      std::snprintf(line, sizeof line, "%s: fastest run %.3f ms at once, %.3f ms one after another",
                    c.choice == 1 ? "at once" : "one after another", c.concurrent_ms, c.sequential_ms);
      why = line;
    }
    std::snprintf(line, sizeof line, "  %-40s %4zu steps %8llu runs at once   %s\n",
                  c.graph.substr(0, 40).c_str(), c.steps, static_cast<unsigned long long>(c.concurrent_runs),
                  why.c_str());
    out += line;
  }
  return out.empty() ? out : "independent steps:\n" + out;
}

}  // namespace graphsplit
