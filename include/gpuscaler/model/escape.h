// Escaping text for XML and HTML (& < > " and ' become character
// references, so the result is safe in element content and in quoted
// attribute values) and for CSV. Other bytes pass through unchanged (no
// UTF-8 checks). Pure and thread-safe.
#pragma once

#include <string>
#include <string_view>

namespace gpuscaler {

// ' becomes &apos;, XML's predefined entity (what AWS's XML APIs send).
std::string XmlEscape(std::string_view text);
// ' becomes &#39;: HTML 4 has no &apos;.
std::string HtmlEscape(std::string_view text);
// One CSV field (RFC 4180): quoted, with " doubled, when it holds a comma, a
// quote or a line break; else as it is.
std::string CsvField(std::string_view text);

}  // namespace gpuscaler
