// pugixml helpers for the AWS response parsers. Private to src/cloud.
#pragma once

#include <pugixml.hpp>

#include <string>
#include <string_view>
#include <vector>

#include "gpuscaler/status.h"

namespace gpuscaler::cloud::xml {

// Parses `body` into `doc`; the root element must be `<{root}>` (any
// namespace). An AWS error document instead gives that error.
Status Load(pugi::xml_document& doc, std::string_view body, std::string_view root);

inline std::string Text(pugi::xml_node n, const char* child) { return n.child_value(child); }
int Int(pugi::xml_node n, const char* child, int fallback = 0);

// read(item) for each <item> of <{set}> in the EC2 answer <{op}Response>,
// in order.
template <typename Read>
auto ParseItems(std::string_view body, const std::string& op, const char* set, Read read)
    -> Result<std::vector<decltype(read(pugi::xml_node()))>> {
  pugi::xml_document doc;
  if (Status s = Load(doc, body, op + "Response"); !s.ok()) return s.error();
  std::vector<decltype(read(pugi::xml_node()))> out;
  for (pugi::xml_node item : doc.document_element().child(set).children("item")) out.push_back(read(item));
  return out;
}

// The <{op}Result> element of a query-protocol (Auto Scaling) answer.
Result<pugi::xml_node> QueryResult(pugi::xml_document& doc, std::string_view body, const std::string& op);

// A paged answer, EC2's (<{op}Response><{list}><item>…, <nextToken>) or Auto
// Scaling's (<{op}Response><{op}Result><{list}><member>…, <NextToken>):
// read(element, page) for each element of the list, then the next token.
enum class Protocol { kEc2, kAutoScaling };
template <typename Page, typename Read>
Result<Page> ParsePage(std::string_view body, Protocol protocol, const std::string& op, const char* list, Read read) {
  const bool ec2 = protocol == Protocol::kEc2;
  pugi::xml_document doc;
  pugi::xml_node root;
  if (ec2) {
    if (Status s = Load(doc, body, op + "Response"); !s.ok()) return s.error();
    root = doc.document_element();
  } else {
    Result<pugi::xml_node> result = QueryResult(doc, body, op);
    if (!result.ok()) return result.error();
    root = *result;
  }
  Page page;
  for (pugi::xml_node e : root.child(list).children(ec2 ? "item" : "member")) {
    if (Status s = read(e, page); !s.ok()) return s.error();
  }
  page.next_token = root.child_value(ec2 ? "nextToken" : "NextToken");
  return page;
}

}  // namespace gpuscaler::cloud::xml
