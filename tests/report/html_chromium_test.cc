// The HTML report rendered by headless Chromium (Debian `chromium`): a
// screenshot, and the DOM after the page's scripts ran, with its charts and
// tables present and non-empty and no console or script errors. Chromium
// missing: skipped with a message, except in CI (CI=true), where it fails.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <sys/wait.h>

#include "report_test_util.h"
#include "support/chromium.h"

namespace gpuscaler::report {
namespace {

using testing::GoldenParams;
using testing::ReadFile;
using testing::TempDir;
using gpuscaler::testing::FindChromium;

// Runs `command` through the shell; returns its exit status.
int RunShell(const std::string& command) {
  const int status = std::system(command.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// The text between <tag id="id" ...> and the matching close of `tag`.
std::string Element(const std::string& dom, const std::string& tag, const std::string& id) {
  const size_t open = dom.find("<" + tag + " id=\"" + id + "\"");
  if (open == std::string::npos) return "";
  const size_t close = dom.find("</" + tag + ">", open);
  return close == std::string::npos ? "" : dom.substr(open, close - open);
}

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(HtmlReport, RendersInHeadlessChromiumWithChartsTablesAndNoErrors) {
  const std::string chromium = FindChromium();
  if (chromium.empty()) {
    const char* ci = std::getenv("CI");
    if (ci != nullptr && std::string(ci) == "true") FAIL() << "chromium is not installed (scripts/setup.sh installs it)";
    GTEST_SKIP() << "chromium not installed: run scripts/setup.sh (Debian package `chromium`) to run this test";
  }
  TempDir dir;
  testing::WriteGoldenScenario(dir.File("golden.db"));
  Result<ReportQuery> q = ParseReportQuery(GoldenParams("html"));
  ASSERT_TRUE(q.ok());
  q->db_path = dir.File("golden.db");
  Result<RenderedReport> r = RenderReport(*q);
  ASSERT_TRUE(r.ok()) << r.error().ToString();
  EXPECT_EQ(r->content_type, "text/html; charset=utf-8");
  // Self-contained: nothing to fetch.
  for (const char* ref : {"src=\"http", "href=\"http", "url(", "@import", "<link", "<img", "<iframe"}) {
    EXPECT_EQ(r->body.find(ref), std::string::npos) << ref;
  }
  const std::string html = dir.File("report.html");
  std::ofstream(html, std::ios::binary) << r->body;

  const std::string profile = dir.File("profile");
  const std::string flags =
      " --headless --no-sandbox --disable-gpu --no-first-run --disable-background-networking"
      " --disable-component-update --disable-sync --enable-logging=stderr --v=0 --user-data-dir=" +
      profile;
  const std::string dom_file = dir.File("dom.html"), dom_log = dir.File("dom.log");
  ASSERT_EQ(RunShell("timeout 90 " + chromium + flags + " --dump-dom file://" + html + " > " + dom_file + " 2> " + dom_log),
            0)
      << ReadFile(dom_log);
  const std::string png = dir.File("report.png"), shot_log = dir.File("shot.log");
  ASSERT_EQ(RunShell("timeout 90 " + chromium + flags + " --window-size=1280,2400 --screenshot=" + png + " file://" + html +
                " > /dev/null 2> " + shot_log),
            0)
      << ReadFile(shot_log);

  const std::string dom = ReadFile(dom_file);
  ASSERT_FALSE(dom.empty()) << ReadFile(dom_log);
  // The script ran to its end and caught no error.
  EXPECT_NE(dom.find("data-ready=\"true\""), std::string::npos) << "the page's script did not finish";
  EXPECT_NE(dom.find("<pre id=\"js-errors\"></pre>"), std::string::npos) << Element(dom, "pre", "js-errors");
  // Console: no errors, no blocked fetches (a CSP violation logs one).
  for (const std::string& log : {ReadFile(dom_log), ReadFile(shot_log)}) {
    std::istringstream lines(log);
    for (std::string line; std::getline(lines, line);) {
      const bool console = line.find("CONSOLE") != std::string::npos;
      EXPECT_FALSE(console && (line.find("ERROR") != std::string::npos || line.find("Uncaught") != std::string::npos ||
                               line.find("Content Security Policy") != std::string::npos))
          << line;
    }
  }
  // Charts: present and drawn.
  EXPECT_GE(Count(Element(dom, "svg", "chart-daily-cost"), "class=\"bar\""), 2u);
  EXPECT_GE(Count(Element(dom, "svg", "chart-savings"), "<polyline"), 2u);
  EXPECT_GE(Count(Element(dom, "svg", "chart-burndown"), "<polyline"), 2u);
  EXPECT_GE(Count(Element(dom, "svg", "chart-teams"), "class=\"bar\""), 3u);
  EXPECT_GE(Count(Element(dom, "svg", "chart-predictions"), "<polyline"), 2u);
  // Predicted vs realized: the summary cards name the totals and the error.
  const size_t cards_at = dom.find("<div id=\"prediction-totals\"");
  ASSERT_NE(cards_at, std::string::npos);
  const std::string cards = dom.substr(cards_at, dom.find("<h2>Charts</h2>", cards_at) - cards_at);
  EXPECT_GE(Count(cards, "class=\"card\""), 5u) << cards;
  EXPECT_NE(cards.find("median |error| per decision"), std::string::npos) << cards;
  // Tables: present, with data rows, and sortable headers.
  for (const char* table : {"t-allocation", "t-costs", "t-savings", "t-budget", "t-decisions", "t-nodes",
                            "t-prediction_summary", "t-predictions"}) {
    const std::string t = Element(dom, "table", table);
    SCOPED_TRACE(table);
    ASSERT_FALSE(t.empty());
    EXPECT_GE(Count(t, "<tr>"), 2u);
    EXPECT_EQ(t.find("no rows"), std::string::npos);
    EXPECT_NE(t.find("<th"), std::string::npos);
  }
  // The screenshot: a PNG of the requested size, not blank.
  const std::string image = ReadFile(png);
  ASSERT_GT(image.size(), 24u);
  EXPECT_EQ(image.substr(1, 3), "PNG");
  const auto be32 = [&](size_t at) {
    return (static_cast<uint32_t>(static_cast<unsigned char>(image[at])) << 24) |
           (static_cast<uint32_t>(static_cast<unsigned char>(image[at + 1])) << 16) |
           (static_cast<uint32_t>(static_cast<unsigned char>(image[at + 2])) << 8) |
           static_cast<uint32_t>(static_cast<unsigned char>(image[at + 3]));
  };
  EXPECT_EQ(be32(16), 1280u);
  EXPECT_EQ(be32(20), 2400u);
  EXPECT_GT(image.size(), 40000u) << "a near-empty screenshot compresses to a few kB";
  if (const char* keep = std::getenv("GPUSCALER_KEEP_SCREENSHOT")) {
    std::filesystem::copy_file(png, keep, std::filesystem::copy_options::overwrite_existing);
  }
}

}  // namespace
}  // namespace gpuscaler::report
