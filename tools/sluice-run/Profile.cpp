//===- Profile.cpp - sluice-run --profile and --json ----------------------===//
//
// See Profile.h. The table is meant for a terminal (one line per step, the
// node list cut short); the JSON keeps every node.
//
//===----------------------------------------------------------------------===//

#include "tools/sluice-run/Profile.h"

#include "lib/support/Json.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cstdio>

namespace sluice::tools {

LatencyStats latencyStats(std::vector<double> ms) {
  LatencyStats s;
  std::sort(ms.begin(), ms.end());
  s.iters = (int)ms.size();
  if (ms.empty())
    return s;
  for (double t : ms)
    s.totalMs += t;
  auto at = [&](double q) { return ms[std::min(ms.size() - 1, (size_t)(ms.size() * q))]; };
  s.mean = s.totalMs / ms.size();
  s.min = ms.front();
  s.max = ms.back();
  s.median = ms[ms.size() / 2];
  s.p90 = at(0.9);
  s.p99 = at(0.99);
  return s;
}

std::vector<StepInfo> stepsOf(const std::string &bundle, const std::vector<StepInfo> &fallback) {
  // The manifest has each step's full node list; the runtime's C API one
  // node. Any doubt about the manifest (unreadable, another rank's list)
  // keeps the runtime's list: the profile is still right, only terser.
  auto buffer = llvm::MemoryBuffer::getFile(bundle + "/manifest.json");
  if (!buffer)
    return fallback;
  llvm::Expected<llvm::json::Value> root = llvm::json::parse((*buffer)->getBuffer());
  if (!root) {
    llvm::consumeError(root.takeError());
    return fallback;
  }
  const llvm::json::Object *object = root->getAsObject();
  const llvm::json::Array *kernels = object ? object->getArray("kernels") : nullptr;
  if (!kernels || kernels->size() != fallback.size())
    return fallback;
  std::vector<StepInfo> steps = fallback;
  for (size_t i = 0; i < kernels->size(); ++i) {
    const llvm::json::Object *k = (*kernels)[i].getAsObject();
    if (!k || k->getString("name").value_or("") != fallback[i].name)
      return fallback;
    steps[i].compute = k->getString("compute").value_or("").str();
    std::vector<std::string> nodes;
    if (const llvm::json::Array *list = k->getArray("nodes"))
      for (const llvm::json::Value &n : *list)
        if (auto s = n.getAsString(); s && !s->empty())
          nodes.push_back(s->str());
    if (!nodes.empty())
      steps[i].nodes = std::move(nodes);
  }
  return steps;
}

StepProfile::StepProfile(std::vector<StepInfo> steps)
    : info(std::move(steps)), totalUs(info.size(), 0.0), calls(info.size(), 0) {}

void StepProfile::addRun(const SluiceTraceEvent *events, size_t count, double us) {
  for (size_t i = 0; i < count; ++i) {
    const SluiceTraceEvent &e = events[i];
    if (e.step < 0 || (size_t)e.step >= info.size())
      continue; // the runtime numbers steps from the manifest; never here
    totalUs[e.step] += std::max(0.0, e.end_us - e.begin_us);
    ++calls[e.step];
  }
  runUs += us;
  ++runCount;
}

double StepProfile::stepMsPerRun() const {
  double sum = 0;
  for (double us : totalUs)
    sum += us;
  return runCount ? sum / runCount / 1000 : 0;
}

double StepProfile::runMsMean() const { return runCount ? runUs / runCount / 1000 : 0; }

std::vector<StepProfile::Row> StepProfile::rows() const {
  std::vector<Row> rows;
  double summed = 0;
  for (double us : totalUs)
    summed += us;
  for (size_t i = 0; i < info.size(); ++i)
    if (calls[i] > 0)
      rows.push_back({i, runCount ? totalUs[i] / runCount / 1000 : 0,
                      runCount ? double(calls[i]) / runCount : 0,
                      summed > 0 ? totalUs[i] / summed : 0});
  std::stable_sort(rows.begin(), rows.end(),
                   [](const Row &a, const Row &b) { return a.msPerRun > b.msPerRun; });
  return rows;
}

std::vector<StepProfile::OpRow> StepProfile::byOp() const {
  std::vector<OpRow> ops;
  for (const Row &row : rows()) {
    std::string op = info[row.step].op.empty() ? "-" : info[row.step].op;
    auto it = std::find_if(ops.begin(), ops.end(), [&](const OpRow &o) { return o.op == op; });
    if (it == ops.end())
      it = ops.insert(ops.end(), {op, 0, 0, 0});
    ++it->steps;
    it->msPerRun += row.msPerRun;
    it->share += row.share;
  }
  std::stable_sort(ops.begin(), ops.end(),
                   [](const OpRow &a, const OpRow &b) { return a.msPerRun > b.msPerRun; });
  return ops;
}

namespace {

/// The first few nodes, then how many more: a fused step of a transformer
/// holds a dozen, and the table keeps one line per step.
std::string nodeSummary(const std::vector<std::string> &nodes) {
  constexpr size_t kShown = 3;
  std::string text;
  for (size_t i = 0; i < nodes.size() && i < kShown; ++i)
    text += (i ? ", " : "") + nodes[i];
  if (nodes.size() > kShown)
    text += " +" + std::to_string(nodes.size() - kShown) + " more";
  return text.empty() ? "-" : text;
}

/// `text` cut to `width` characters (with "~" at the cut), so that the
/// columns after it stay aligned.
std::string fit(const std::string &text, size_t width) {
  if (text.size() <= width)
    return text;
  return text.substr(0, width - 1) + "~";
}

/// Milliseconds as JSON, to the nanosecond (writeJsonFixed3's microsecond
/// milliseconds would round a fast kernel to zero).
void writeMs(llvm::json::OStream &json, llvm::StringRef key, double ms) {
  json.attributeBegin(key);
  if (!std::isfinite(ms))
    json.value(nullptr);
  else
    json.rawValue([&](llvm::raw_ostream &os) { os << llvm::format("%.6f", ms); });
  json.attributeEnd();
}

} // namespace

void printProfile(const StepProfile &profile, int top, const std::string &target) {
  std::vector<StepProfile::Row> rows = profile.rows();
  size_t ran = rows.size(), idle = profile.steps().size() - ran;
  std::printf("profile over %d traced runs (%s): %zu step%s ran, summed step "
              "time %.4g ms per run, traced run %.4g ms\n",
              profile.runs(), target.c_str(), ran, ran == 1 ? "" : "s", profile.stepMsPerRun(),
              profile.runMsMean());
  size_t shown = top > 0 ? std::min(rows.size(), (size_t)top) : rows.size();
  std::printf("%4s  %-28s %-8s %-22s %10s %6s %7s  %s\n", "rank", "step", "kind", "op", "ms/run",
              "share", "calls", "onnx nodes");
  for (size_t r = 0; r < shown; ++r) {
    const StepProfile::Row &row = rows[r];
    const StepInfo &step = profile.steps()[row.step];
    std::printf("%4zu  %-28s %-8s %-22s %10.4g %5.1f%% %7.4g  %s\n", r + 1,
                fit(step.name, 28).c_str(), fit(step.kind, 8).c_str(),
                fit(step.op.empty() ? "-" : step.op, 22).c_str(), row.msPerRun, 100 * row.share,
                row.callsPerRun, nodeSummary(step.nodes).c_str());
  }
  if (shown < rows.size()) {
    double ms = 0, share = 0;
    for (size_t r = shown; r < rows.size(); ++r) {
      ms += rows[r].msPerRun;
      share += rows[r].share;
    }
    std::printf("      (%zu more steps: %.4g ms/run, %.1f%%; --profile=all "
                "lists them)\n",
                rows.size() - shown, ms, 100 * share);
  }
  // By op, one line: the five heaviest.
  std::vector<StepProfile::OpRow> ops = profile.byOp();
  std::string line;
  for (size_t i = 0; i < ops.size() && i < 5; ++i) {
    char text[160];
    std::snprintf(text, sizeof text, "%s%s %.1f%% (%zu step%s)", i ? ", " : "", ops[i].op.c_str(),
                  100 * ops[i].share, ops[i].steps, ops[i].steps == 1 ? "" : "s");
    line += text;
  }
  if (ops.size() > 5)
    line += ", ...";
  if (!ops.empty())
    std::printf("by op: %s\n", line.c_str());
  if (idle)
    std::printf("      (%zu step%s did not run: control flow not taken)\n", idle,
                idle == 1 ? "" : "s");
}

bool writeBenchJson(const std::string &path, const BenchReport &report, std::string &error) {
  std::error_code ec;
  llvm::raw_fd_ostream file(path, ec);
  if (ec) {
    error = path + ": cannot write: " + ec.message();
    return false;
  }
  llvm::json::OStream json(file, /*IndentSize=*/2);
  const LatencyStats &l = report.latency;
  json.object([&] {
    json.attribute("model", jsonText(report.model));
    json.attribute("target", jsonText(report.target));
    json.attribute("device", jsonText(report.device));
    json.attribute("iters", l.iters);
    json.attribute("warmup", report.warmup);
    json.attributeObject("latency_ms", [&] {
      writeMs(json, "mean", l.mean);
      writeMs(json, "min", l.min);
      writeMs(json, "median", l.median);
      writeMs(json, "p90", l.p90);
      writeMs(json, "p99", l.p99);
      writeMs(json, "max", l.max);
    });
    json.attributeBegin("throughput_runs_per_s");
    if (l.totalMs > 0)
      json.rawValue(
          [&](llvm::raw_ostream &os) { os << llvm::format("%.3f", l.iters * 1000.0 / l.totalMs); });
    else
      json.value(nullptr);
    json.attributeEnd();
    if (report.cudaGraph)
      json.attribute("cuda_graph", jsonText(*report.cudaGraph));
    else
      json.attribute("cuda_graph", nullptr);
    json.attributeBegin("split_ms");
    if (report.split)
      json.object([&] {
        writeMs(json, "host_to_device", report.split->hostToDevice);
        writeMs(json, "compute", report.split->compute);
        writeMs(json, "device_to_host", report.split->deviceToHost);
      });
    else
      json.value(nullptr);
    json.attributeEnd();
    json.attributeBegin("profile");
    if (const StepProfile *p = report.profile) {
      json.object([&] {
        json.attribute("runs", p->runs());
        writeMs(json, "step_ms_per_run", p->stepMsPerRun());
        writeMs(json, "run_ms", p->runMsMean());
        json.attributeArray("by_op", [&] {
          for (const StepProfile::OpRow &o : p->byOp())
            json.object([&] {
              json.attribute("op", jsonText(o.op));
              json.attribute("steps", (int64_t)o.steps);
              writeMs(json, "ms_per_run", o.msPerRun);
              json.attributeBegin("share");
              json.rawValue([&](llvm::raw_ostream &os) { os << llvm::format("%.6f", o.share); });
              json.attributeEnd();
            });
        });
        json.attributeArray("steps", [&] {
          std::vector<StepProfile::Row> rows = p->rows();
          for (size_t r = 0; r < rows.size(); ++r) {
            const StepInfo &step = p->steps()[rows[r].step];
            json.object([&] {
              json.attribute("rank", (int64_t)r + 1);
              json.attribute("index", (int64_t)rows[r].step);
              json.attribute("name", jsonText(step.name));
              json.attribute("kind", jsonText(step.kind));
              json.attribute("op", jsonText(step.op));
              json.attribute("compute", jsonText(step.compute));
              writeMs(json, "ms_per_run", rows[r].msPerRun);
              writeMs(json, "ms_per_call",
                      rows[r].callsPerRun > 0 ? rows[r].msPerRun / rows[r].callsPerRun : 0);
              json.attributeBegin("calls_per_run");
              json.rawValue(
                  [&](llvm::raw_ostream &os) { os << llvm::format("%.4f", rows[r].callsPerRun); });
              json.attributeEnd();
              json.attributeBegin("share");
              json.rawValue(
                  [&](llvm::raw_ostream &os) { os << llvm::format("%.6f", rows[r].share); });
              json.attributeEnd();
              writeJsonStrings(json, "nodes", step.nodes);
            });
          }
        });
      });
    } else {
      json.value(nullptr);
    }
    json.attributeEnd();
  });
  file << "\n";
  file.close();
  if (std::error_code writeError = file.error()) {
    file.clear_error(); // raw_fd_ostream aborts on an error left unchecked
    error = path + ": cannot write: " + writeError.message();
    return false;
  }
  return true;
}

} // namespace sluice::tools
