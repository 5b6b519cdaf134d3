// Reading a sweep's grid and building a cell's policy (sweep_grid.h).
#include "sweep_grid.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "gpuscaler/model/bounded_yaml.h"
#include "gpuscaler/model/text_file.h"
#include "gpuscaler/model/yaml_document.h"
#include "gpuscaler/policy/loader.h"

namespace gpuscaler::cli::sweep {
namespace {

namespace fs = std::filesystem;

YAML::Node ToYaml(const DocNode& n) {
  switch (n.kind) {
    case DocNode::Kind::kNull: return YAML::Node();
    case DocNode::Kind::kScalar: return YAML::Node(n.scalar);
    case DocNode::Kind::kSequence: {
      YAML::Node seq(YAML::NodeType::Sequence);
      for (const DocNode& i : n.items) seq.push_back(ToYaml(i));
      return seq;
    }
    case DocNode::Kind::kMapping: {
      YAML::Node map(YAML::NodeType::Map);
      for (const DocEntry& e : n.entries) map[e.key.scalar] = ToYaml(e.value);
      return map;
    }
  }
  return YAML::Node();
}

// A name usable as a path component: letters, digits, '.', '_', '=', '-'.
bool IsCellName(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '=' || c == '-';
  });
}

// Paths in the grid are relative to the grid file.
std::string Resolve(const Grid& g, const std::string& path) {
  if (path.empty() || fs::path(path).is_absolute()) return path;
  return (fs::path(g.file).parent_path() / path).lexically_normal().string();
}

// Sets `path` ("spot.max_pool_share", "classes[0].max_spot_share",
// "classes[*].max_spot_share") in `doc` to `value`; an error names the part
// of the path that does not exist.
Status SetPath(YAML::Node doc, const std::string& path, const YAML::Node& value) {
  std::vector<std::string> parts;
  std::stringstream ss(path);
  for (std::string part; std::getline(ss, part, '.');) parts.push_back(part);
  if (parts.empty()) return Error::InvalidInput("empty override path");
  std::vector<YAML::Node> nodes = {doc};
  std::string seen;
  for (size_t i = 0; i < parts.size(); ++i) {
    std::string key = parts[i];
    std::optional<std::string> index;
    if (const size_t open = key.find('['); open != std::string::npos && key.back() == ']') {
      index = key.substr(open + 1, key.size() - open - 2);
      key = key.substr(0, open);
    }
    seen += (seen.empty() ? "" : ".") + parts[i];
    const bool last = i + 1 == parts.size();
    std::vector<YAML::Node> next;
    for (YAML::Node n : nodes) {
      if (!n.IsMap()) return Error::InvalidInput("override " + path + ": '" + seen + "' is not inside a mapping");
      if (!index) {
        if (last) {
          n[key] = value;
        } else {
          if (!n[key]) n[key] = YAML::Node(YAML::NodeType::Map);
          next.push_back(n[key]);
        }
        continue;
      }
      YAML::Node list = n[key];
      if (!list || !list.IsSequence()) {
        return Error::InvalidInput("override " + path + ": '" + key + "' is not a list in the policy");
      }
      std::vector<size_t> picks;
      if (*index == "*") {
        for (size_t k = 0; k < list.size(); ++k) picks.push_back(k);
      } else {
        char* end = nullptr;
        const unsigned long k = std::strtoul(index->c_str(), &end, 10);
        if (index->empty() || *end != '\0' || k >= list.size()) {
          return Error::InvalidInput("override " + path + ": no item [" + *index + "] in '" + key + "' (it has " +
                                     std::to_string(list.size()) + ")");
        }
        picks.push_back(k);
      }
      for (size_t k : picks) {
        if (last) {
          list[k] = value;
        } else {
          next.push_back(list[k]);
        }
      }
    }
    nodes = std::move(next);
  }
  return Status::Ok();
}

}  // namespace

Result<Grid> ReadGrid(const std::string& file) {
  Result<std::string> text = ReadConfigFile(file);
  if (!text) return Error::NotFound("cannot read the grid " + file + ": " + text.error().message());
  DocReader r(file);
  DocNode root;
  Grid g;
  g.file = file;
  if (r.Parse(*text, &root)) {
    MapReader top(r, root, "", {"catalog", "days", "traces", "markets", "policies", "overrides", "seeds"});
    top.Require({"traces", "policies"});
    // A file named relative to the grid file.
    const auto read_file = [&](MapReader& m, std::string_view key, std::string* file) {
      m.ReadString(key, file);
      *file = Resolve(g, *file);
    };
    read_file(top, "catalog", &g.catalog_file);
    int days = 0;
    if (top.ReadInt("days", &days) && days <= 0) r.ReportAt("days", "must be >= 1");
    std::set<std::string> names;
    const auto unique = [&](const std::string& path, const std::string& name, const char* what) {
      if (!IsCellName(name)) {
        r.ReportAt(path + ".name", std::string("a ") + what + " name is letters, digits, '.', '_', '=' or '-', got '" +
                                       name + "'");
      } else if (!names.insert(std::string(what) + "/" + name).second) {
        r.ReportAt(path + ".name", std::string("duplicate ") + what + " name '" + name + "'");
      }
    };
    // The required name of a trace, market or policy.
    const auto read_name = [&](MapReader& m, const std::string& path, const char* what, std::string* name) {
      m.Require({"name"});
      m.ReadString("name", name);
      unique(path, *name, what);
    };
    top.ForEachItem("traces", [&](const DocNode& n, const std::string& path) {
      MapReader m(r, n, path,
                  {"name", "scenario", "trace", "format", "days", "cbl_instance_types", "cbl_nodes_when_up"});
      GridTrace t;
      read_name(m, path, "trace", &t.name);
      m.ReadString("scenario", &t.in.scenario);
      read_file(m, "trace", &t.in.trace_file);
      m.ReadString("format", &t.in.trace_format);
      t.in.days = days;
      if (m.ReadInt("days", &t.in.days) && t.in.days <= 0) r.ReportAt(m.PathOf("days"), "must be >= 1");
      m.ReadString("cbl_instance_types", &t.in.cbl_instance_types);
      m.ReadInt("cbl_nodes_when_up", &t.in.cbl_nodes_when_up);
      if (t.in.scenario.empty() == t.in.trace_file.empty()) r.ReportAt(path, "give exactly one of scenario or trace");
      if (!t.in.trace_file.empty() && t.in.trace_format.empty()) r.ReportAt(path, "a trace needs its format");
      g.traces.push_back(std::move(t));
    });
    top.ForEachItem("markets", [&](const DocNode& n, const std::string& path) {
      MapReader m(r, n, path, {"name", "prices", "format"});
      GridMarket mk;
      read_name(m, path, "market", &mk.name);
      read_file(m, "prices", &mk.prices_file);
      m.ReadString("format", &mk.prices_format);
      if (mk.prices_file.empty() != mk.prices_format.empty()) r.ReportAt(path, "prices and format go together");
      g.markets.push_back(std::move(mk));
    });
    if (g.markets.empty()) g.markets.push_back({"none", "", ""});
    top.ForEachItem("policies", [&](const DocNode& n, const std::string& path) {
      MapReader m(r, n, path, {"name", "file", "baseline"});
      GridPolicy p;
      read_name(m, path, "policy", &p.name);
      read_file(m, "file", &p.file);
      if (m.ReadString("baseline", &p.baseline)) {
        std::vector<std::string> known = sim::BaselineNames();
        known.push_back("gpuscaler-reactive");
        known.push_back("gpuscaler-oracle");
        if (std::find(known.begin(), known.end(), p.baseline) == known.end()) {
          std::string list;
          for (const std::string& k : known) list += (list.empty() ? "" : ", ") + k;
          r.ReportAt(m.PathOf("baseline"), "unknown baseline '" + p.baseline + "' (known: " + list + ")");
        }
      }
      g.policies.push_back(std::move(p));
    });
    if (const DocNode* n = top.Find("overrides")) {
      MapReader m(r, *n, "overrides", {});
      for (const auto& [key, value] : m.entries()) {
        const std::string path = m.PathOf(key->scalar);
        if (!value->IsSequence() || value->items.empty()) {
          r.Report(*value, path, "expected a non-empty list of values");
          continue;
        }
        GridOverride o;
        o.path = key->scalar;
        for (const DocNode& v : value->items) o.values.push_back(ToYaml(v));
        g.overrides.push_back(std::move(o));
      }
    }
    std::vector<std::string> seeds;
    if (top.Has("seeds")) {
      top.ForEachItem("seeds", [&](const DocNode& n, const std::string& path) {
        int64_t seed = 0;
        if (r.ToInt(n, path, &seed)) {
          if (seed < 0) r.Report(n, path, "must be >= 0");
          g.seeds.push_back(static_cast<uint64_t>(seed));
        }
      });
    }
    if (g.seeds.empty()) g.seeds.push_back(1);
  }
  if (!r.ok()) return Error::Config(JoinProblems(r.SortedProblems()));
  return g;
}

// ------------------------------------------------------ policy overrides

// The policy of a cell: the file (or the built-in default policy's text for
// a trace without one) with the overrides applied, loaded and checked like
// any policy file.
Result<std::optional<Policy>> CellPolicy(const GridPolicy& p, const std::vector<std::pair<std::string, YAML::Node>>& set,
                                         const Catalog& catalog) {
  if (p.file.empty()) return std::optional<Policy>();
  Result<std::string> text = ReadConfigFile(p.file);
  if (!text) return Error::NotFound("cannot read the policy " + p.file + ": " + text.error().message());
  if (set.empty()) {
    PolicyLoadResult loaded = LoadPolicyFile(p.file, &catalog);
    if (!loaded.ok()) return loaded.status().error();
    return std::optional<Policy>(std::move(loaded.policy));
  }
  // The overrides are applied to yaml-cpp's tree, so a .json file is checked
  // as strict JSON first.
  DocReader strict(p.file);
  DocNode root;
  if (FormatOf(p.file) == DocFormat::kJson && !strict.Parse(*text, &root))
    return Error::Config(JoinProblems(strict.SortedProblems()));
  Result<YAML::Node> doc = LoadBoundedYaml(*text);
  if (!doc) return doc.error().WithContext(p.file);
  std::string label;
  for (const auto& [path, value] : set) {
    if (Status s = SetPath(*doc, path, value); !s.ok()) return s.error();
    label += " " + path + "=" + YAML::Dump(value);
  }
  YAML::Emitter out;
  out << *doc;
  PolicyLoadOptions options;
  options.catalog = &catalog;
  PolicyLoadResult loaded = ParsePolicy(out.c_str(), p.file + " with" + label, options);
  if (!loaded.ok()) return loaded.status().error();
  return std::optional<Policy>(std::move(loaded.policy));
}

}  // namespace gpuscaler::cli::sweep
