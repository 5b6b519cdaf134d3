#include "gpuscaler/model/escape.h"

namespace gpuscaler {
namespace {

std::string EscapeMarkup(std::string_view text, std::string_view apostrophe) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += apostrophe; break;
      default: out.push_back(c);
    }
  }
  return out;
}

}  // namespace

std::string XmlEscape(std::string_view text) { return EscapeMarkup(text, "&apos;"); }

std::string HtmlEscape(std::string_view text) { return EscapeMarkup(text, "&#39;"); }

std::string CsvField(std::string_view text) {
  if (text.find_first_of(",\"\r\n") == std::string_view::npos) return std::string(text);
  std::string out = "\"";
  for (char c : text) {
    if (c == '"') out += '"';
    out += c;
  }
  out += '"';
  return out;
}

}  // namespace gpuscaler
