#include "xml_util.h"

#include <charconv>

#include "gpuscaler/cloud/aws_query.h"

namespace gpuscaler::cloud::xml {

Status Load(pugi::xml_document& doc, std::string_view body, std::string_view root) {
  if (auto e = ParseErrorBody(body)) return ErrorFromResponse(root, 200, body);
  pugi::xml_parse_result r = doc.load_buffer(body.data(), body.size());
  if (!r) return Error::InvalidInput(std::string(root) + ": not XML: " + r.description());
  std::string_view name = doc.document_element().name();
  if (size_t colon = name.find(':'); colon != std::string_view::npos) name.remove_prefix(colon + 1);
  if (name != root) {
    return Error::InvalidInput(std::string(root) + ": unexpected document <" + std::string(name) + ">");
  }
  return Status::Ok();
}

Result<pugi::xml_node> QueryResult(pugi::xml_document& doc, std::string_view body, const std::string& op) {
  if (Status s = Load(doc, body, op + "Response"); !s.ok()) return s.error();
  pugi::xml_node result = doc.document_element().child((op + "Result").c_str());
  if (!result) return Error::InvalidInput(op + ": no " + op + "Result");
  return result;
}

int Int(pugi::xml_node n, const char* child, int fallback) {
  std::string_view s = n.child_value(child);
  int v = fallback;
  if (s.empty() || std::from_chars(s.data(), s.data() + s.size(), v).ec != std::errc()) return fallback;
  return v;
}

}  // namespace gpuscaler::cloud::xml
