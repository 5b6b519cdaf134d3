// The operator's dashboard of `gpuscaler run --demo`, at hour 2 and at day 3
// of demo time: the page as served (the budget line, a labelled time axis on
// every chart, every link answering 200, the path decision -> explain page
// -> node row) and, in headless Chromium after its script ran, at 1280 px
// and at phone width (390 px): the DOM's structure against the committed
// fixture tests/cli/testdata/dashboard_structure.txt, and the screenshots.
// GPUSCALER_KEEP_SCREENSHOTS=DIR keeps the PNGs (docs/images/ is made so).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>

#include "cli/http_get.h"
#include "cli/process.h"
#include "support/chromium.h"
#include "gpuscaler/model/time.h"

namespace gpuscaler::testing {
namespace {

using namespace std::chrono_literals;

// The demo policy's global hourly cap (sim/scenario.cc), hard.
constexpr const char* kDemoHourlyCap = "900.00";

// Each text that follows `prefix` in `text`, up to `end` (not included).
// Plain scanning: <regex> draws GCC 12's -Wmaybe-uninitialized in the
// sanitizer builds.
std::vector<std::string> Values(const std::string& text, const std::string& prefix, char end = '"') {
  std::vector<std::string> out;
  for (size_t at = text.find(prefix); at != std::string::npos; at = text.find(prefix, at + prefix.size())) {
    const size_t from = at + prefix.size(), to = text.find(end, from);
    if (to == std::string::npos) break;
    out.push_back(text.substr(from, to - from));
  }
  return out;
}

size_t Count(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + needle.size())) ++n;
  return n;
}

// The element that starts at `open_tag_prefix` up to its closing `tag`
// (the first one: the elements looked at here do not nest in their kind).
std::string Element(const std::string& html, const std::string& open_tag_prefix, const std::string& tag) {
  const size_t open = html.find(open_tag_prefix);
  if (open == std::string::npos) return "";
  const size_t close = html.find("</" + tag + ">", open);
  return close == std::string::npos ? "" : html.substr(open, close + tag.size() + 3 - open);
}

// The server path a link on the page at `base_dir` ("/" or "/decisions/")
// points to: fragments dropped, "../" resolved.
std::string Resolve(const std::string& base_dir, std::string href) {
  if (const size_t hash = href.find('#'); hash != std::string::npos) href.resize(hash);
  std::string dir = base_dir;
  while (href.rfind("../", 0) == 0) {
    href = href.substr(3);
    dir.pop_back();
    dir.resize(dir.rfind('/') + 1);
  }
  if (href.rfind("/", 0) == 0) return href;
  return dir + href;
}

std::string ReadText(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

int RunShell(const std::string& command) {
  const int status = std::system(command.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// The page's structure: its sections and charts in order, one per line
// ("section sec-kpis", "chart chart-cost"), as the fixture lists them.
std::string Structure(const std::string& html) {
  std::vector<std::pair<size_t, std::string>> found;
  for (size_t at = html.find("<section id=\""); at != std::string::npos; at = html.find("<section id=\"", at + 1)) {
    found.emplace_back(at, "section " + Values(html.substr(at), "<section id=\"").front());
  }
  for (size_t at = html.find("<svg id=\""); at != std::string::npos; at = html.find("<svg id=\"", at + 1)) {
    const std::string id = Values(html.substr(at, 200), "<svg id=\"").front();
    const std::string chart = "\" class=\"chart\"";
    if (html.compare(at + 9 + id.size(), chart.size(), chart) == 0) found.emplace_back(at, "chart " + id);
  }
  std::sort(found.begin(), found.end());
  std::string out;
  for (const auto& [at, line] : found) out += line + "\n";
  return out;
}

// A fixture file without its comment lines ("#...").
std::string Fixture(const std::string& relative) {
  std::istringstream in(ReadText(std::filesystem::path(GPUSCALER_SOURCE_DIR) / relative));
  std::string out;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line[0] != '#') out += line + "\n";
  }
  return out;
}

class Dashboard : public CliTest {
 protected:
  void TearDown() override {
    if (daemon_) {
      daemon_->Signal(SIGTERM);
      std::optional<int> code = daemon_->Wait(30s);
      EXPECT_TRUE(code.has_value()) << "still running 30 s after SIGTERM";
      if (code) {
        EXPECT_EQ(*code, 0) << ReadAll(dir_ / "err.log");
      }
    }
    CliTest::TearDown();
  }

  // Starts a 3-day demo at `speed` with a token for pause/resume.
  uint16_t Start(const std::string& speed) {
    Write("token", "dashboard-test-token\n");
    daemon_ = std::make_unique<ChildProcess>(
        std::vector<std::string>{GPUSCALER_BINARY, "run", "--demo", "--listen", "127.0.0.1:0", "--port-file",
                                 (dir_ / "port").string(), "--db", (dir_ / "audit.db").string(), "--speed", speed,
                                 "--days", "3", "--api-token-file", (dir_ / "token").string()},
        dir_ / "out.log", dir_ / "err.log");
    EXPECT_TRUE(daemon_->started());
    const uint16_t port = WaitForPortFile(dir_ / "port", 30s);
    EXPECT_NE(port, 0) << ReadAll(dir_ / "err.log");
    return port;
  }

  nlohmann::json Status(uint16_t port) {
    const HttpReply r = HttpGet(port, "/api/v1/status");
    return r.status == 200 ? nlohmann::json::parse(r.body) : nlohmann::json::object();
  }

  // Demo time two hours after the start, then paused (the page holds still).
  uint16_t AtHourTwo() {
    const uint16_t port = Start("3600");
    if (port == 0) return 0;
    for (int i = 0; i < 3000; ++i) {
      const nlohmann::json s = Status(port);
      WallTime started{}, now{};
      if (s.contains("time") && s["time"].is_string() && ParseRfc3339(s["started_at"].get<std::string>(), &started) &&
          ParseRfc3339(s["time"].get<std::string>(), &now) && now >= started + 2h) {
        EXPECT_EQ(HttpRequestTo(port, "POST", "/api/v1/pause", "Authorization: Bearer dashboard-test-token\r\n").status,
                  200);
        // A tick in flight when the pause came lands after it.
        std::this_thread::sleep_for(200ms);
        return port;
      }
      std::this_thread::sleep_for(10ms);
    }
    ADD_FAILURE() << "the demo did not reach hour 2 in 30 s";
    return 0;
  }

  // The demo's horizon (the end of day 3), where it stops ticking.
  uint16_t AtDayThree() {
    const uint16_t port = Start("1000000");
    if (port == 0) return 0;
    for (int i = 0; i < 2400; ++i) {
      const nlohmann::json s = Status(port);
      if (s.value("finished", false)) {
        WallTime started{}, now{};
        EXPECT_TRUE(ParseRfc3339(s["started_at"].get<std::string>(), &started));
        EXPECT_TRUE(ParseRfc3339(s["time"].get<std::string>(), &now));
        EXPECT_GE(now, started + 71h) << s["time"];
        return port;
      }
      std::this_thread::sleep_for(100ms);
    }
    ADD_FAILURE() << "the demo did not reach day 3 in 240 s";
    return 0;
  }

  // What the issue asks the page to show, on the page as served.
  void CheckPage(uint16_t port) {
    const HttpReply page = HttpGet(port, "/");
    ASSERT_EQ(page.status, 200);
    const std::string& html = page.body;
    // Self-contained: nothing fetched from elsewhere.
    for (const char* ref : {"src=\"http", "href=\"http", "href=\"//", "url(", "@import", "<link", "<img", "<iframe"}) {
      EXPECT_EQ(html.find(ref), std::string::npos) << ref;
    }

    // The budget: the headline against the demo's hard 900 USD/h cap, the
    // global row, and the cap drawn as a line on the spend chart.
    const std::string line = Element(html, "<p id=\"budget-line\"", "p");
    ASSERT_FALSE(line.empty());
    EXPECT_NE(line.find(std::string("data-hourly-cap=\"") + kDemoHourlyCap + "\""), std::string::npos) << line;
    EXPECT_NE(line.find("hard cap <b>$900.00/h</b>"), std::string::npos) << line;
    EXPECT_NE(line.find("projected month end"), std::string::npos) << line;
    EXPECT_NE(html.find("<tr class=\"budget\" data-scope=\"global\""), std::string::npos);
    const std::string spend = Element(html, "<svg id=\"chart-cost\"", "svg");
    EXPECT_NE(spend.find("class=\"level budget-cap hourly-cap\" data-value=\"900.0\""), std::string::npos) << spend;
    EXPECT_NE(spend.find("hard cap $900.00/h"), std::string::npos);
    EXPECT_NE(html.find("<svg id=\"chart-burndown\""), std::string::npos);

    // Every chart has a time axis with at least two labelled, parseable
    // times, in order, and a value axis.
    std::vector<std::string> charts;
    for (const std::string& line : Values(Structure(html), "chart ", '\n')) charts.push_back(line);
    EXPECT_EQ(charts, (std::vector<std::string>{"chart-cost", "chart-burndown", "chart-nodes", "chart-queue"}));
    for (const std::string& id : charts) {
      SCOPED_TRACE(id);
      const std::string svg = Element(html, "<svg id=\"" + id + "\"", "svg");
      EXPECT_NE(svg.find("class=\"axis x-axis\""), std::string::npos);
      EXPECT_NE(svg.find("time (UTC)"), std::string::npos);
      EXPECT_NE(svg.find("class=\"axis y-axis\""), std::string::npos);
      const std::vector<std::string> times = Values(svg, "class=\"tick-label time-label\" data-time=\"");
      ASSERT_GE(times.size(), 2u) << svg.substr(0, 2000);
      WallTime previous{};
      for (const std::string& t : times) {
        WallTime at{};
        ASSERT_TRUE(ParseRfc3339(t, &at)) << t;
        EXPECT_GT(at, previous);
        previous = at;
      }
      EXPECT_GE(Count(svg, "class=\"series\""), 1u);
    }

    // Rollups by pool, zone, capacity type and class; pending demand with
    // waits; the spot market per offering.
    for (const char* dim : {"pool", "zone", "capacity type", "class"}) {
      const std::string t = Element(html, std::string("<table class=\"rollup\" data-dimension=\"") + dim + "\"", "table");
      EXPECT_GE(Count(t, "<tr>"), 2u) << dim;
    }
    EXPECT_NE(Element(html, "<table id=\"pending\"", "table").find("wait p50"), std::string::npos);
    const std::string market = Element(html, "<table id=\"market\"", "table");
    EXPECT_GE(Count(market, "<tr class=\"offering"), 10u);
    EXPECT_NE(market.find("interruptions /node-h (learned)"), std::string::npos);
    EXPECT_NE(html.find("<ul id=\"notices\">"), std::string::npos);

    // Every link on the page answers 200, and every link on the explain
    // pages it links to.
    std::set<std::string> checked;
    std::vector<std::pair<std::string, std::string>> links;  // (page dir, href)
    for (const std::string& href : Values(html, "href=\"")) links.emplace_back("/", href);
    for (const char* must : {"reports", "metrics", "healthz", "readyz", "api/v1/dashboard"}) {
      EXPECT_NE(html.find(std::string("href=\"") + must + "\""), std::string::npos) << must;
    }
    for (size_t i = 0; i < links.size(); ++i) {
      const std::string path = Resolve(links[i].first, links[i].second);
      if (!checked.insert(path).second) continue;
      const HttpReply r = HttpRequestTo(port, "GET", path, "", "", 60000);
      EXPECT_EQ(r.status, 200) << links[i].second << " on " << links[i].first << " -> " << path << ": "
                               << r.body.substr(0, 300);
      if (path.rfind("/decisions/", 0) == 0) {
        for (const std::string& href : Values(r.body, "href=\"")) links.emplace_back("/decisions/", href);
      }
    }
    EXPECT_GE(checked.size(), 14u);

    // decision -> explain -> node. The pairs (decision, node it launched
    // that still runs) the page links: from the decisions listed (which link
    // their explain page and the node's row), else from the fleet's rows
    // (which link the decision that launched them).
    std::vector<std::pair<std::string, std::string>> pairs;  // (decision id, node anchor)
    for (const std::string& id : Values(html, "<article class=\"decision\" id=\"decision-")) {
      const std::string article = Element(html, "<article class=\"decision\" id=\"decision-" + id + "\"", "article");
      EXPECT_NE(article.find("href=\"decisions/" + id + "\""), std::string::npos) << id;
      for (const std::string& node : Values(article, "class=\"node-link mono\" href=\"#")) {
        pairs.emplace_back(id, node);
      }
    }
    const bool from_decisions = !pairs.empty();
    const std::string fleet = Element(html, "<table id=\"fleet\"", "table");
    for (const std::string& node : Values(fleet, "<tr id=\"")) {
      const std::vector<std::string> by = Values(Element(fleet, "<tr id=\"" + node + "\"", "tr"), "href=\"decisions/");
      if (!by.empty()) pairs.emplace_back(by.front(), node);
    }
    ASSERT_FALSE(pairs.empty()) << "no node on the page links the decision that launched it";
    RecordProperty("path_from", from_decisions ? "decisions" : "fleet");
    const auto& [id, node] = pairs.front();
    SCOPED_TRACE("decision " + id + ", " + node);
    // The node's row names the decision.
    const std::string row = Element(html, "<tr id=\"" + node + "\"", "tr");
    ASSERT_FALSE(row.empty());
    EXPECT_NE(row.find("href=\"decisions/" + id + "\""), std::string::npos) << row;
    // The explain page shows the recorded plan's launches and links back to
    // the node's row.
    const HttpReply explain = HttpGet(port, "/decisions/" + id);
    ASSERT_EQ(explain.status, 200) << explain.body;
    EXPECT_NE(explain.body.find("href=\"../#" + node + "\""), std::string::npos);
    const std::string plan = Element(explain.body, "<div id=\"plan\"", "div");
    std::vector<std::string> shown;
    for (const std::string& row : Values(plan, "<tr class=\"launch\" ", '>')) {
      shown.push_back(Values(row, "data-offering=\"").at(0) + " x" + Values(row, "data-count=\"").at(0));
    }
    // The decision as the decisions API has it.
    std::vector<std::string> recorded;
    const nlohmann::json replay = nlohmann::json::parse(HttpGet(port, "/api/v1/decisions/" + id + "/explain").body);
    EXPECT_EQ(replay["decision_id"].get<int64_t>(), std::stoll(id));
    EXPECT_EQ(replay["matches_recorded"], true);
    const nlohmann::json listed = nlohmann::json::parse(
        HttpGet(port, "/api/v1/decisions?detail=1&limit=50&since=" + replay["time"].get<std::string>()).body);
    for (const nlohmann::json& d : listed["decisions"]) {
      if (d["id"].get<int64_t>() != std::stoll(id)) continue;
      for (const nlohmann::json& l : d["plan"]["launches"]) {
        const nlohmann::json& o = l["offering"];
        recorded.push_back(o["instance_type"].get<std::string>() + "/" + o["zone"].get<std::string>() + "/" +
                           o["capacity_type"].get<std::string>() + " x" + std::to_string(l["count"].get<int>()));
      }
    }
    ASSERT_FALSE(recorded.empty()) << "decision " << id << " launched nothing, says the decisions API";
    EXPECT_EQ(shown, recorded);
    if (from_decisions) {
      // The same launches on the dashboard's entry for the decision.
      const std::string article = Element(html, "<article class=\"decision\" id=\"decision-" + id + "\"", "article");
      EXPECT_EQ(Values(article, "<tr class=\"launch\" ", '>'), Values(plan, "<tr class=\"launch\" ", '>'));
    }

    // The JSON the page polls carries every section it re-renders.
    const HttpReply api = HttpGet(port, "/api/v1/dashboard");
    ASSERT_EQ(api.status, 200);
    const nlohmann::json dash = nlohmann::json::parse(api.body);
    for (const std::string& section : Values(html, "<section id=\"sec-")) {
      EXPECT_TRUE(dash["sections"].contains(section)) << section;
    }
    EXPECT_TRUE(dash["sections"].contains("status"));
    ASSERT_FALSE(dash["budgets"].empty());
    EXPECT_EQ(dash["budgets"][0]["scope"], "global");
    EXPECT_EQ(dash["budgets"][0]["hourly_cap_usd"].get<double>(), 900.0);
    EXPECT_EQ(dash["budgets"][0]["hard"], true);
  }

  // Headless Chromium: the page after its script ran, at `width` px, and a
  // screenshot.
  void CheckInChromium(uint16_t port, int width, const std::string& moment) {
    const std::string chromium = FindChromium();
    if (chromium.empty()) {
      const char* ci = std::getenv("CI");
      if (ci != nullptr && std::string(ci) == "true") FAIL() << "chromium is not installed (scripts/setup.sh installs it)";
      GTEST_SKIP() << "chromium not installed: run scripts/setup.sh (Debian package `chromium`) to run this test";
    }
    SCOPED_TRACE(moment + " at " + std::to_string(width) + " px");
    const std::string url = "http://127.0.0.1:" + std::to_string(port) + "/";
    const std::string tag = moment + "-" + std::to_string(width);
    const std::filesystem::path dom_file = dir_ / (tag + ".dom.html"), png = dir_ / (tag + ".png");
    const std::string flags =
        " --headless --no-sandbox --disable-gpu --no-first-run --disable-background-networking"
        " --disable-component-update --disable-sync --hide-scrollbars --enable-logging=stderr --v=0 --user-data-dir=" +
        (dir_ / ("profile-" + tag)).string() + " --window-size=" + std::to_string(width) + ",2400";
    ASSERT_EQ(RunShell("timeout 90 " + chromium + flags + " --virtual-time-budget=4000 --dump-dom " + url + " > " +
                       dom_file.string() + " 2> " + (dir_ / (tag + ".dom.log")).string()),
              0)
        << ReadText(dir_ / (tag + ".dom.log"));
    ASSERT_EQ(RunShell("timeout 90 " + chromium + flags + " --virtual-time-budget=4000 --screenshot=" + png.string() +
                       " " + url + " > /dev/null 2> " + (dir_ / (tag + ".shot.log")).string()),
              0)
        << ReadText(dir_ / (tag + ".shot.log"));
    const std::string dom = ReadText(dom_file);
    ASSERT_FALSE(dom.empty());
    // The script ran and its refresh from api/v1/dashboard succeeded.
    EXPECT_NE(dom.find("<body data-refreshed=\"20"), std::string::npos) << dom.substr(0, 600);
    EXPECT_NE(dom.find("<span id=\"refresh-error\" class=\"bad\"></span>"), std::string::npos)
        << Element(dom, "<span id=\"refresh-error\"", "span");
    for (const std::filesystem::path& log : {dir_ / (tag + ".dom.log"), dir_ / (tag + ".shot.log")}) {
      std::istringstream lines(ReadText(log));
      for (std::string l; std::getline(lines, l);) {
        const bool console = l.find("CONSOLE") != std::string::npos;
        EXPECT_FALSE(console && (l.find("ERROR") != std::string::npos || l.find("Uncaught") != std::string::npos)) << l;
      }
    }
    // Structure, against the committed fixture.
    EXPECT_EQ(Structure(dom), Fixture("tests/cli/testdata/dashboard_structure.txt"));
    EXPECT_EQ(Count(dom, "class=\"axis x-axis\""), 4u);
    EXPECT_GE(Count(dom, "class=\"tick-label time-label\""), 8u);
    EXPECT_NE(dom.find("<p id=\"budget-line\""), std::string::npos);
    // The screenshot: a PNG of the requested width, not blank.
    const std::string image = ReadText(png);
    ASSERT_GT(image.size(), 24u);
    EXPECT_EQ(image.substr(1, 3), "PNG");
    const auto be32 = [&](size_t at) {
      return (static_cast<uint32_t>(static_cast<unsigned char>(image[at])) << 24) |
             (static_cast<uint32_t>(static_cast<unsigned char>(image[at + 1])) << 16) |
             (static_cast<uint32_t>(static_cast<unsigned char>(image[at + 2])) << 8) |
             static_cast<uint32_t>(static_cast<unsigned char>(image[at + 3]));
    };
    EXPECT_EQ(be32(16), static_cast<uint32_t>(width));
    EXPECT_GT(image.size(), 30000u) << "a near-empty screenshot compresses to a few kB";
    if (const char* keep = std::getenv("GPUSCALER_KEEP_SCREENSHOTS")) {
      std::filesystem::copy_file(png, std::filesystem::path(keep) / ("dashboard-" + tag + ".png"),
                                 std::filesystem::copy_options::overwrite_existing);
    }
  }

  std::unique_ptr<ChildProcess> daemon_;
};

TEST_F(Dashboard, AtHourTwoShowsTheBudgetTimeAxesWorkingLinksAndTheDecisionToNodePath) {
  const uint16_t port = AtHourTwo();
  ASSERT_NE(port, 0);
  CheckPage(port);
  CheckInChromium(port, 1280, "hour2");
  CheckInChromium(port, 390, "hour2");
}

TEST_F(Dashboard, AtDayThreeShowsTheBudgetTimeAxesWorkingLinksAndTheDecisionToNodePath) {
  const uint16_t port = AtDayThree();
  ASSERT_NE(port, 0);
  CheckPage(port);
  CheckInChromium(port, 1280, "day3");
  CheckInChromium(port, 390, "day3");
}

}  // namespace
}  // namespace gpuscaler::testing
