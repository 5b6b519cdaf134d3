// Inline SVG charts of the HTML report: a frame with axes, stacked bars,
// lines, horizontal bars. Private to src/report (render_html.cc).
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace gpuscaler::report::internal {

struct Series {
  std::string name;
  std::string color;
  std::vector<std::optional<double>> values;
  bool dashed = false;  // drawn dashed (a prediction, a forecast)
};

// Each returns one <svg> element with `id`, titled `title`, one x label per
// value.
std::string StackedBars(const std::string& id, const std::string& title,
                        const std::vector<std::string>& labels, const std::vector<Series>& series);
std::string Lines(const std::string& id, const std::string& title, const std::vector<std::string>& labels,
                  const std::vector<Series>& series);
std::string HorizontalBars(const std::string& id, const std::string& title,
                           const std::vector<std::pair<std::string, double>>& items);

}  // namespace gpuscaler::report::internal
