// `gpuscaler sim sweep --grid GRID.yaml --out DIR [--workers N] [--shard I/N]`
// (docs/simulator.md, "Policy sweeps"; `sim merge` is sim_merge.cc).
//
// A grid is traces x markets x policies x parameter overrides x seeds. Each
// combination is a cell: one deterministic replay, built by the same
// BuildSimScenario as `gpuscaler sim`, whose `--json` output is kept in
// DIR/cells/<cell id>/summary.json together with the cell's inputs and the
// hash of everything that decides its result (trace, market and catalog
// files, the policy after overrides, seed, days, baseline, this binary). A
// cell whose summary holds the same hash is done and skipped, so a sweep
// resumes after a crash and grows with its grid.
//
// Workers are processes (fork), each taking the next cell nobody holds: a
// cell is held by an flock on DIR/cells/<id>/lock, which the kernel drops
// when its holder dies. Shards (--shard I/N) take every N-th cell of the
// grid's order, for N machines sharing DIR (a Kubernetes Indexed Job).
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "commands.h"
#include "gpuscaler/cloud/sigv4.h"
#include "gpuscaler/model/bounded_yaml.h"
#include "gpuscaler/model/text_file.h"
#include "gpuscaler/model/yaml_document.h"
#include "gpuscaler/policy/loader.h"
#include "sim/baselines.h"
#include "sim/report.h"
#include "sim/runner.h"
#include "sim_inputs.h"
#include "sweep_grid.h"

namespace gpuscaler::cli {
namespace {

namespace fs = std::filesystem;
using cloud::Sha256Hex;
using Json = nlohmann::json;
using sweep::CellPolicy;
using sweep::Grid;
using sweep::GridMarket;
using sweep::GridOverride;
using sweep::GridPolicy;
using sweep::GridTrace;
using sweep::ReadGrid;

// ------------------------------------------------------------ the cells

struct Cell {
  std::string id;
  const GridTrace* trace = nullptr;
  const GridMarket* market = nullptr;
  const GridPolicy* policy = nullptr;
  std::vector<std::pair<std::string, YAML::Node>> set;  // overrides of this cell
  uint64_t seed = 1;
};

std::string VariantName(const std::vector<std::pair<std::string, YAML::Node>>& set) {
  if (set.empty()) return "base";
  std::string out;
  for (const auto& [path, value] : set) {
    std::string v = YAML::Dump(value);
    for (char& c : v) {
      if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_')) c = '_';
    }
    out += (out.empty() ? "" : "+") + path + "=" + v;
  }
  for (char& c : out) {
    if (c == '[' || c == ']' || c == '*') c = '_';
  }
  return out;
}

// Every cell of the grid, in a fixed order: traces, markets, policies,
// override combinations (the last override varying fastest), seeds.
std::vector<Cell> Cells(const Grid& g) {
  std::vector<std::vector<std::pair<std::string, YAML::Node>>> variants = {{}};
  for (const GridOverride& o : g.overrides) {
    std::vector<std::vector<std::pair<std::string, YAML::Node>>> more;
    for (const auto& v : variants) {
      for (const YAML::Node& value : o.values) {
        auto with = v;
        with.emplace_back(o.path, value);
        more.push_back(std::move(with));
      }
    }
    variants = std::move(more);
  }
  std::vector<Cell> cells;
  for (const GridTrace& t : g.traces) {
    for (const GridMarket& m : g.markets) {
      // A built-in scenario brings its own market.
      if (!t.in.scenario.empty() && !m.prices_file.empty()) continue;
      for (const GridPolicy& p : g.policies) {
        // Overrides edit a policy file; an entry without one (a baseline on
        // the trace's own policy) runs once.
        const std::vector<std::vector<std::pair<std::string, YAML::Node>>> none = {{}};
        for (const auto& set : p.file.empty() ? none : variants) {
          for (uint64_t seed : g.seeds) {
            Cell c{t.name + "." + m.name + "." + p.name + "." + VariantName(set) + ".s" + std::to_string(seed),
                   &t, &m, &p, set, seed};
            cells.push_back(std::move(c));
          }
        }
      }
    }
  }
  return cells;
}

// Content hashes of input files, each read once per process.
class FileHashes {
 public:
  Result<std::string> Of(const std::string& path) {
    if (path.empty()) return std::string("-");
    auto it = hashes_.find(path);
    if (it != hashes_.end()) return it->second;
    Result<std::string> text = ReadTextFile(path);
    if (!text) return Error::NotFound("cannot read " + path + ": " + text.error().message());
    return hashes_[path] = Sha256Hex(*text);
  }

 private:
  std::map<std::string, std::string> hashes_;
};

struct PreparedCell {
  SimInputs in;
  std::optional<Policy> policy;
  std::string policy_source;  // the policy file, as `gpuscaler sim --policy` names it
  std::string run_name;  // "gpuscaler" or the baseline
  std::string input_hash;
  Json inputs;           // what the summary records about the cell
};

Result<PreparedCell> Prepare(const Grid& g, const Cell& c, const Catalog& catalog, const std::string& catalog_source,
                             const std::string& code_hash, FileHashes* files) {
  PreparedCell p;
  p.in = c.trace->in;
  p.in.prices_file = c.market->prices_file;
  p.in.prices_format = c.market->prices_format;
  p.in.catalog_file = g.catalog_file;
  p.in.seed = c.seed;
  Result<std::optional<Policy>> policy = CellPolicy(*c.policy, c.set, catalog);
  if (!policy) return policy.error().WithContext("cell " + c.id);
  p.policy = std::move(policy).value();
  p.policy_source = c.policy->file;
  p.run_name = c.policy->baseline.empty() ? "gpuscaler" : c.policy->baseline;
  Json overrides = Json::object();
  for (const auto& [path, value] : c.set) overrides[path] = YAML::Dump(value);
  p.inputs = {{"cell", c.id},
              {"trace", c.trace->name},
              {"market", c.market->name},
              {"policy", c.policy->name},
              {"run", p.run_name},
              {"overrides", overrides},
              {"seed", c.seed},
              {"days", p.in.days}};
  std::string key = "code " + code_hash + "\n";
  // The catalog actually loaded: the grid's, or the default one found.
  const std::string catalog_file = fs::exists(catalog_source) ? catalog_source : std::string();
  for (const std::string& file : {p.in.trace_file, p.in.prices_file, catalog_file}) {
    Result<std::string> h = files->Of(file);
    if (!h) return h.error().WithContext("cell " + c.id);
    key += "file " + *h + "\n";
  }
  key += "scenario " + p.in.scenario + "\nformats " + p.in.trace_format + " " + p.in.prices_format + "\n";
  key += "cbl " + p.in.cbl_instance_types + " " + std::to_string(p.in.cbl_nodes_when_up) + "\n";
  key += "policy " + (p.policy ? p.policy->content_hash : std::string("(scenario's own)")) + "\n";
  key += "run " + p.run_name + "\nseed " + std::to_string(c.seed) + "\ndays " + std::to_string(p.in.days) + "\n";
  p.input_hash = Sha256Hex(key);
  return p;
}

// The JSON `gpuscaler sim --json [--baseline NAME]` prints for these inputs.
Result<std::string> Replay(const PreparedCell& p, const Catalog& catalog, const std::string& catalog_source) {
  std::vector<std::string> warnings;
  Result<sim::Scenario> scenario =
      BuildSimScenario(p.in, catalog, catalog_source, p.policy, p.policy_source, &warnings);
  if (!scenario) return scenario.error();
  Result<std::vector<sim::RunResult>> results = sim::RunMany(*scenario, {p.run_name}, {});
  if (!results) return results.error();
  return sim::FormatJson(*scenario, *results);
}

fs::path CellDir(const std::string& out, const std::string& id) { return fs::path(out) / "cells" / id; }

// The summary of a finished cell with these inputs, if there is one.
std::optional<Json> DoneSummary(const fs::path& dir, const std::string& input_hash) {
  std::ifstream in(dir / "summary.json");
  if (!in) return std::nullopt;
  Json j = Json::parse(in, nullptr, false);
  if (j.is_discarded() || !j.contains("input_hash") || j["input_hash"] != input_hash) return std::nullopt;
  return j;
}

Status WriteAtomically(const fs::path& file, const std::string& text) {
  const fs::path tmp = file.string() + ".tmp." + std::to_string(getpid());
  {
    std::ofstream out(tmp, std::ios::binary);
    out << text;
    out.flush();
    if (!out) return Error::Internal("cannot write " + tmp.string());
  }
  std::error_code ec;
  fs::rename(tmp, file, ec);
  if (ec) return Error::Internal("cannot rename " + tmp.string() + ": " + ec.message());
  return Status::Ok();
}

struct SweepOptions {
  std::string grid_file;
  std::string out_dir;
  int workers = 0;        // 0: the machine's cores
  std::string shard;      // "I/N"
  bool list = false;      // print the cells and whether each is done; run nothing
};

struct SweepPlan {
  Grid grid;
  Catalog catalog;
  std::string catalog_source;
  std::vector<Cell> cells;       // this shard's
  std::vector<PreparedCell> prepared;
  size_t grid_cells = 0;
};

// Runs the cells not done yet that no other worker holds; returns how many
// this worker ran and the first error.
Status WorkOn(const SweepPlan& plan, const std::string& out, size_t first, size_t* ran) {
  const size_t n = plan.cells.size();
  for (size_t k = 0; k < n; ++k) {
    const size_t i = (first + k) % n;
    const Cell& c = plan.cells[i];
    const PreparedCell& p = plan.prepared[i];
    const fs::path dir = CellDir(out, c.id);
    if (DoneSummary(dir, p.input_hash)) continue;
    std::error_code ec;
    fs::create_directories(dir, ec);
    const int lock = ::open((dir / "lock").c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0644);
    if (lock < 0) return Error::Internal("cannot open " + (dir / "lock").string());
    if (::flock(lock, LOCK_EX | LOCK_NB) != 0) {  // another worker has it
      ::close(lock);
      continue;
    }
    Status status = Status::Ok();
    if (!DoneSummary(dir, p.input_hash)) {  // not finished while we waited
      Result<std::string> result = Replay(p, plan.catalog, plan.catalog_source);
      if (!result) {
        status = result.error().WithContext("cell " + c.id);
      } else {
        Json summary = {{"input_hash", p.input_hash}, {"inputs", p.inputs}, {"sim", Json::parse(*result)}};
        status = WriteAtomically(dir / "result.json", *result);
        if (status.ok()) status = WriteAtomically(dir / "summary.json", summary.dump(1) + "\n");
        if (status.ok()) ++*ran;
      }
    }
    ::close(lock);
    if (!status.ok()) return status;
  }
  return Status::Ok();
}

size_t CountDone(const SweepPlan& plan, const std::string& out) {
  size_t done = 0;
  for (size_t i = 0; i < plan.cells.size(); ++i) {
    done += DoneSummary(CellDir(out, plan.cells[i].id), plan.prepared[i].input_hash).has_value();
  }
  return done;
}

void Progress(size_t done, size_t total, double elapsed_s, size_t done_at_start, bool tty, bool final) {
  const size_t new_done = done - done_at_start;
  const double rate = elapsed_s > 0 ? static_cast<double>(new_done) / elapsed_s : 0;
  const double eta = rate > 0 ? static_cast<double>(total - done) / rate : -1;
  if (tty) {
    const int width = 30;
    const int filled = total > 0 ? static_cast<int>(width * done / total) : width;
    std::fprintf(stderr, "\r[%s%s] %zu/%zu cells%s", std::string(static_cast<size_t>(filled), '#').c_str(),
                 std::string(static_cast<size_t>(width - filled), '.').c_str(), done, total,
                 eta >= 0 && !final ? (", ETA " + std::to_string(static_cast<int>(eta)) + " s").c_str() : "");
    if (final) std::fprintf(stderr, "\n");
  } else {
    Json line = {{"cells_done", done}, {"cells", total}, {"elapsed_s", std::round(elapsed_s)}};
    if (eta >= 0 && !final) line["eta_s"] = std::round(eta);
    std::fprintf(stderr, "%s\n", line.dump().c_str());
  }
  std::fflush(stderr);
}

Result<std::pair<int, int>> ParseShard(const std::string& s) {
  if (s.empty()) return std::make_pair(0, 1);
  int i = -1, n = 0;
  char extra = 0;
  if (std::sscanf(s.c_str(), "%d/%d%c", &i, &n, &extra) != 2 || n < 1 || i < 0 || i >= n) {
    return Error::InvalidInput("--shard '" + s + "': expected I/N with 0 <= I < N");
  }
  return std::make_pair(i, n);
}

std::string CodeHash() {
  Result<std::string> self = ReadTextFile("/proc/self/exe");
  return self ? Sha256Hex(*self) : std::string("unknown");
}

int SweepFail(const std::string& message, int code) { return FailCommand("gpuscaler sim", message, code); }

int RunSweep(const SweepOptions& o) {
  Result<Grid> grid = ReadGrid(o.grid_file);
  if (!grid) return SweepFail(grid.error().message(), 2);
  Result<std::pair<int, int>> shard = ParseShard(o.shard);
  if (!shard) return SweepFail(shard.error().message(), 2);
  const char* index_env = std::getenv("JOB_COMPLETION_INDEX");
  if (o.shard.empty() && index_env != nullptr) {
    std::cerr << "gpuscaler sim: JOB_COMPLETION_INDEX is set but --shard is not: running every cell\n";
  }
  SweepPlan plan;
  plan.grid = std::move(grid).value();
  SimInputs catalog_inputs;
  catalog_inputs.catalog_file = plan.grid.catalog_file;
  Result<Catalog> catalog = LoadSimCatalog(catalog_inputs, &plan.catalog_source);
  if (!catalog) return SweepFail(catalog.error().message(), 2);
  plan.catalog = std::move(catalog).value();

  std::vector<Cell> all = Cells(plan.grid);
  plan.grid_cells = all.size();
  const std::string code_hash = CodeHash();
  FileHashes files;
  for (size_t i = 0; i < all.size(); ++i) {
    if (static_cast<int>(i % static_cast<size_t>(shard->second)) != shard->first) continue;
    Result<PreparedCell> p = Prepare(plan.grid, all[i], plan.catalog, plan.catalog_source, code_hash, &files);
    if (!p) return SweepFail(p.error().message(), 2);
    plan.cells.push_back(all[i]);
    plan.prepared.push_back(std::move(p).value());
  }
  if (o.list) {
    for (size_t i = 0; i < plan.cells.size(); ++i) {
      const bool done = DoneSummary(CellDir(o.out_dir, plan.cells[i].id), plan.prepared[i].input_hash).has_value();
      std::cout << plan.cells[i].id << (done ? " done" : " to run") << "\n";
    }
    return 0;
  }
  std::error_code ec;
  fs::create_directories(fs::path(o.out_dir) / "cells", ec);
  if (ec) return SweepFail("cannot create " + o.out_dir + "/cells: " + ec.message(), 1);
  {
    std::ifstream grid_text(o.grid_file, std::ios::binary);
    std::ostringstream copy;
    copy << grid_text.rdbuf();
    (void)WriteAtomically(fs::path(o.out_dir) / "grid.yaml", copy.str());
  }

  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  const int workers = o.workers > 0 ? o.workers : static_cast<int>(cores);
  const bool tty = isatty(STDERR_FILENO);
  const size_t total = plan.cells.size();
  const size_t done_at_start = CountDone(plan, o.out_dir);
  const auto started = std::chrono::steady_clock::now();
  const auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count(); };
  std::cerr << "gpuscaler sim sweep: " << total << " cell(s)"
            << (shard->second > 1 ? " in shard " + o.shard + " of " + std::to_string(plan.grid_cells) : "") << ", "
            << done_at_start << " done already, " << workers << " worker(s), results in " << o.out_dir << "/cells\n";

  std::vector<pid_t> children;
  for (int w = 0; w < workers && done_at_start < total; ++w) {
    std::fflush(nullptr);
    const pid_t pid = fork();
    if (pid < 0) return SweepFail("fork failed", 1);
    if (pid == 0) {
      // A worker dies with the sweep (killed or not), so no replay outlives
      // the command that owns it; the lock it held goes with it.
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() == 1) _exit(1);
      size_t ran = 0;
      const Status s = WorkOn(plan, o.out_dir, total * static_cast<size_t>(w) / static_cast<size_t>(workers), &ran);
      if (!s.ok()) std::cerr << "gpuscaler sim sweep: " << s.error().message() << "\n";
      std::fflush(nullptr);
      _exit(s.ok() ? 0 : 1);
    }
    children.push_back(pid);
  }
  int failed = 0;
  size_t left = children.size();
  auto last_report = std::chrono::steady_clock::now() - std::chrono::hours(1);
  while (left > 0) {
    int status = 0;
    const pid_t pid = waitpid(-1, &status, WNOHANG);
    if (pid > 0) {
      --left;
      if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) ++failed;
      continue;
    }
    const auto now = std::chrono::steady_clock::now();
    if (now - last_report >= (tty ? std::chrono::seconds(1) : std::chrono::seconds(30))) {
      Progress(CountDone(plan, o.out_dir), total, elapsed(), done_at_start, tty, false);
      last_report = now;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  const size_t done = CountDone(plan, o.out_dir);
  Progress(done, total, elapsed(), done_at_start, tty, true);
  if (failed > 0 || done < total) {
    return SweepFail(std::to_string(total - done) + " cell(s) not done (" + std::to_string(failed) +
                         " worker(s) failed); run the same command again to finish them",
                     1);
  }
  return 0;
}

}  // namespace

void RegisterSweepCommands(CLI::App& sim, int* exit_code) {
  auto so = std::make_shared<SweepOptions>();
  CLI::App* sweep = sim.add_subcommand(
      "sweep", "Replay a grid of traces x markets x policies x parameter values x seeds, one cell per replay, "
               "resumable (docs/simulator.md)");
  sweep->add_option("--grid", so->grid_file, "Grid file (YAML)")->required();
  sweep->add_option("--out", so->out_dir, "Directory for the cells' results")->required();
  sweep->add_option("--workers", so->workers, "Replays at once (default: the machine's cores)")
      ->check(CLI::Range(1, 1024));
  sweep->add_option("--shard", so->shard, "Run only the I-th of N partitions of the cells (I/N)");
  sweep->add_flag("--list", so->list,
                  "Check the grid and its inputs, print each cell (of the shard) and whether it is done, run nothing");
  sweep->callback([so, exit_code] { *exit_code = RunSweep(*so); });

  RegisterMergeCommand(sim, exit_code);
}

}  // namespace gpuscaler::cli
