// The HTML report's inline SVG charts (html_charts.h).
#include "html_charts.h"

#include <algorithm>
#include <cmath>

#include "gpuscaler/model/money.h"
#include "tables.h"

namespace gpuscaler::report::internal {
namespace {

constexpr double kWidth = 760;
constexpr double kHeight = 260;
constexpr double kLeft = 70;
constexpr double kRight = 20;
constexpr double kTop = 30;
constexpr double kBottom = 40;

std::string F1(double v) { return FormatFixed(v, 1); }

std::string Usd(double v) { return FormatUsd(v, MoneyStyle::kCompact); }

// 1, 2 or 5 times a power of ten, at least v.
double NiceCeiling(double v) {
  if (v <= 0) return 1;
  const double p = std::pow(10.0, std::floor(std::log10(v)));
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (m * p >= v) return m * p;
  }
  return 10 * p;
}


std::string Frame(const std::string& id, const std::string& title, double ymax, const std::vector<std::string>& labels,
                  double step) {
  std::string s = "<svg id=\"" + id + "\" class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 " +
                  F1(kWidth) + " " + F1(kHeight) + "\" role=\"img\" aria-label=\"" + HtmlEscape(title) + "\">";
  s += "<title>" + HtmlEscape(title) + "</title>";
  s += "<text x=\"" + F1(kLeft) + "\" y=\"18\" class=\"ct\">" + HtmlEscape(title) + "</text>";
  const double plot_h = kHeight - kTop - kBottom;
  for (int k = 0; k <= 4; ++k) {
    const double y = kTop + plot_h - plot_h * k / 4.0;
    s += "<line x1=\"" + F1(kLeft) + "\" x2=\"" + F1(kWidth - kRight) + "\" y1=\"" + F1(y) + "\" y2=\"" + F1(y) +
         "\" class=\"grid\"/>";
    s += "<text x=\"" + F1(kLeft - 6) + "\" y=\"" + F1(y + 4) + "\" class=\"yl\">" + Usd(ymax * k / 4.0) + "</text>";
  }
  const size_t every = std::max<size_t>(1, (labels.size() + 7) / 8);
  for (size_t i = 0; i < labels.size(); i += every) {
    s += "<text x=\"" + F1(kLeft + step * (static_cast<double>(i) + 0.5)) + "\" y=\"" + F1(kHeight - kBottom + 16) +
         "\" class=\"xl\">" + HtmlEscape(labels[i]) + "</text>";
  }
  return s;
}

std::string Legend(const std::vector<Series>& series) {
  std::string s;
  double x = kLeft;
  for (const Series& se : series) {
    s += "<rect x=\"" + F1(x) + "\" y=\"" + F1(kHeight - 14) + "\" width=\"10\" height=\"10\" fill=\"" + se.color +
         "\"/><text x=\"" + F1(x + 14) + "\" y=\"" + F1(kHeight - 5) + "\" class=\"lg\">" + HtmlEscape(se.name) +
         "</text>";
    x += 24 + 7.0 * static_cast<double>(se.name.size());
  }
  return s;
}

}  // namespace

std::string StackedBars(const std::string& id, const std::string& title, const std::vector<std::string>& labels,
                        const std::vector<Series>& series) {
  double max_sum = 0;
  for (size_t i = 0; i < labels.size(); ++i) {
    double sum = 0;
    for (const Series& se : series) sum += std::max(0.0, se.values[i].value_or(0));
    max_sum = std::max(max_sum, sum);
  }
  const double ymax = NiceCeiling(max_sum);
  const double plot_w = kWidth - kLeft - kRight, plot_h = kHeight - kTop - kBottom;
  const double step = labels.empty() ? plot_w : plot_w / static_cast<double>(labels.size());
  std::string s = Frame(id, title, ymax, labels, step);
  for (size_t i = 0; i < labels.size(); ++i) {
    double base = 0;
    for (const Series& se : series) {
      const double v = std::max(0.0, se.values[i].value_or(0));
      if (v <= 0) continue;
      const double h = plot_h * v / ymax;
      const double y = kTop + plot_h - plot_h * base / ymax - h;
      s += "<rect class=\"bar\" x=\"" + F1(kLeft + step * static_cast<double>(i) + step * 0.1) + "\" y=\"" + F1(y) +
           "\" width=\"" + F1(std::max(1.0, step * 0.8)) + "\" height=\"" + F1(h) + "\" fill=\"" + se.color +
           "\"><title>" + HtmlEscape(labels[i] + " " + se.name + ": " + Usd(v)) + "</title></rect>";
      base += v;
    }
  }
  return s + Legend(series) + "</svg>";
}

std::string Lines(const std::string& id, const std::string& title, const std::vector<std::string>& labels,
                  const std::vector<Series>& series) {
  double vmax = 0;
  for (const Series& se : series) {
    for (const auto& v : se.values) vmax = std::max(vmax, v.value_or(0));
  }
  const double ymax = NiceCeiling(vmax);
  const double plot_w = kWidth - kLeft - kRight, plot_h = kHeight - kTop - kBottom;
  const double step = labels.empty() ? plot_w : plot_w / static_cast<double>(labels.size());
  std::string s = Frame(id, title, ymax, labels, step);
  for (const Series& se : series) {
    std::string points;
    size_t count = 0;
    double last_x = 0, last_y = 0;
    for (size_t i = 0; i < se.values.size(); ++i) {
      if (!se.values[i]) continue;
      const double x = kLeft + step * (static_cast<double>(i) + 0.5);
      const double y = kTop + plot_h - plot_h * std::max(0.0, *se.values[i]) / ymax;
      if (!points.empty()) points += ' ';
      points += F1(x);
      points += ',';
      points += F1(y);
      ++count;
      last_x = x;
      last_y = y;
    }
    if (points.empty()) continue;
    // A line of one point draws nothing: mark it.
    if (count == 1) {
      s += "<circle class=\"point\" cx=\"" + F1(last_x) + "\" cy=\"" + F1(last_y) + "\" r=\"4\" fill=\"" + se.color +
           "\"><title>" + HtmlEscape(se.name) + "</title></circle>";
    }
    s += "<polyline class=\"line\" fill=\"none\" stroke=\"" + se.color + "\" stroke-width=\"2\"" +
         (se.dashed ? " stroke-dasharray=\"6 4\"" : "") + " points=\"" + points + "\"><title>" + HtmlEscape(se.name) +
         "</title></polyline>";
  }
  return s + Legend(series) + "</svg>";
}

std::string HorizontalBars(const std::string& id, const std::string& title,
                           const std::vector<std::pair<std::string, double>>& items) {
  const double row_h = 22;
  const double height = kTop + row_h * static_cast<double>(std::max<size_t>(items.size(), 1)) + 20;
  double vmax = 0;
  for (const auto& [name, v] : items) vmax = std::max(vmax, v);
  const double xmax = NiceCeiling(vmax);
  const double label_w = 170, plot_w = kWidth - label_w - kRight - 70;
  std::string s = "<svg id=\"" + id + "\" class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 " +
                  F1(kWidth) + " " + F1(height) + "\" role=\"img\" aria-label=\"" + HtmlEscape(title) + "\">";
  s += "<title>" + HtmlEscape(title) + "</title><text x=\"10\" y=\"18\" class=\"ct\">" + HtmlEscape(title) + "</text>";
  for (size_t i = 0; i < items.size(); ++i) {
    const double y = kTop + row_h * static_cast<double>(i);
    const double w = std::max(0.0, plot_w * items[i].second / xmax);
    s += "<text x=\"" + F1(label_w - 6) + "\" y=\"" + F1(y + 15) + "\" class=\"yl\">" + HtmlEscape(items[i].first) +
         "</text>";
    s += "<rect class=\"bar\" x=\"" + F1(label_w) + "\" y=\"" + F1(y + 3) + "\" width=\"" + F1(w) +
         "\" height=\"16\" fill=\"" + std::string(items[i].first == kIdle ? "#b0b7c3" : "#4c72b0") + "\"><title>" +
         HtmlEscape(items[i].first + ": " + Usd(items[i].second)) + "</title></rect>";
    s += "<text x=\"" + F1(label_w + w + 6) + "\" y=\"" + F1(y + 15) + "\" class=\"lg\">" + Usd(items[i].second) +
         "</text>";
  }
  return s + "</svg>";
}

}  // namespace gpuscaler::report::internal
