#include "sim/traces/csv.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace gpuscaler::sim::csv {
namespace {

struct Record {
  int64_t line;
  std::vector<std::string> fields;
  bool operator==(const Record&) const = default;
};

std::vector<Record> Tokenize(std::string_view text, std::string* error = nullptr) {
  Tokenizer tok(text);
  std::vector<Record> out;
  while (tok.Next()) {
    Record r{tok.line(), {}};
    for (std::string_view f : tok.fields()) r.fields.emplace_back(f);
    out.push_back(std::move(r));
  }
  if (error) *error = tok.error();
  return out;
}

TEST(CsvTokenizer, SplitsRecordsOnLfCrlfAndSkipsBlankLines) {
  const std::vector<Record> want = {{1, {"a", "b"}}, {2, {"1", ""}}, {4, {"", "2"}}};
  EXPECT_EQ(Tokenize("a,b\n1,\n\n,2\n"), want);
  EXPECT_EQ(Tokenize("a,b\r\n1,\r\n\r\n,2"), want);
}

TEST(CsvTokenizer, UnquotesRfc4180Fields) {
  struct Case {
    std::string name;
    std::string text;
    std::vector<Record> want;
  } cases[] = {
      {"comma inside quotes", "\"a,b\",c\n", {{1, {"a,b", "c"}}}},
      {"doubled quote", "\"say \"\"hi\"\"\",x\n", {{1, {"say \"hi\"", "x"}}}},
      {"empty quoted field", "\"\",x\n", {{1, {"", "x"}}}},
      {"line break inside quotes moves the line count on", "\"two\nlines\",x\nnext,y\n",
       {{1, {"two\nlines", "x"}}, {3, {"next", "y"}}}},
      {"crlf inside quotes is kept", "\"a\r\nb\",c\r\n", {{1, {"a\r\nb", "c"}}}},
      {"quote inside an unquoted field is literal", "5\"disk,x\n", {{1, {"5\"disk", "x"}}}},
      {"byte-order mark ignored", "\xEF\xBB\xBFid,v\n", {{1, {"id", "v"}}}},
      {"last record without a newline", "a,b", {{1, {"a", "b"}}}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    std::string error;
    EXPECT_EQ(Tokenize(c.text, &error), c.want);
    EXPECT_EQ(error, "");
  }
}

TEST(CsvTokenizer, ReportsMalformedQuotes) {
  std::string error;
  Tokenize("a,b\n\"open,x\n", &error);
  EXPECT_EQ(error, "unterminated quoted field");
  Tokenize("\"a\"b,c\n", &error);
  EXPECT_EQ(error, "unexpected character after a closing quote: 'b'");
}

TEST(CsvTokenizer, KeepsQuotedViewsValidWhileTheBufferGrows) {
  std::string text;
  for (int i = 0; i < 200; ++i) text += "\"field number " + std::to_string(i) + " with \"\"quotes\"\"\",";
  text += "end\n";
  Tokenizer tok(text);
  ASSERT_TRUE(tok.Next());
  ASSERT_EQ(tok.fields().size(), 201u);
  EXPECT_EQ(tok.fields()[0], "field number 0 with \"quotes\"");
  EXPECT_EQ(tok.fields()[199], "field number 199 with \"quotes\"");
  EXPECT_EQ(tok.fields()[200], "end");
}

TEST(CsvTable, RejectsEmptyFilesAndDuplicateColumns) {
  Result<Table> empty = Table::Open("", "e.csv");
  ASSERT_FALSE(empty.ok());
  EXPECT_EQ(empty.error().message(), "e.csv:1: empty file, expected a header row");
  EXPECT_EQ(empty.error().category(), ErrorCategory::kInvalidInput);
  Result<Table> dup = Table::Open("a,b,a\n", "d.csv");
  ASSERT_FALSE(dup.ok());
  EXPECT_EQ(dup.error().message(), "d.csv:1: duplicate column 'a'");
}

TEST(CsvTable, NamesTheMissingColumn) {
  Result<Table> t = Table::Open("a,b\n", "m.csv");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->Require("b"), 1);
  EXPECT_FALSE(t->failed());
  EXPECT_EQ(t->Require("c"), -1);
  ASSERT_TRUE(t->failed());
  EXPECT_EQ(t->error().message(), "m.csv:1: missing column 'c'");
}

TEST(CsvTable, RejectsRowsWithTheWrongFieldCount) {
  const std::string text = "a,b\n1,2\n1,2,3\n";
  Result<Table> t = Table::Open(text, "f.csv");
  ASSERT_TRUE(t.ok());
  EXPECT_TRUE(t->Next());
  EXPECT_FALSE(t->Next());
  ASSERT_TRUE(t->failed());
  EXPECT_EQ(t->error().message(), "f.csv:3: expected 2 fields, got 3");
}

TEST(CsvTable, ParsesTypedFieldsAndNamesBadValues) {
  const std::string text = "i,d,b,ts\n 42 ,1.5e3,Yes,2020-05-01 00:01:00\n4x,nan,maybe,soon\n";
  Result<Table> t = Table::Open(text, "v.csv");
  ASSERT_TRUE(t.ok());
  ASSERT_TRUE(t->Next());
  EXPECT_EQ(t->Int(0), 42);
  EXPECT_DOUBLE_EQ(t->Double(1), 1500.0);
  EXPECT_TRUE(t->Bool(2));
  EXPECT_EQ(t->Timestamp(3), 1588291260);
  EXPECT_FALSE(t->failed());
  ASSERT_TRUE(t->Next());
  struct Case {
    int col;
    std::string want;
  } cases[] = {
      {0, "v.csv:3: column 'i': '4x' is not an integer"},
      {1, "v.csv:3: column 'd': 'nan' is not a number"},
      {2, "v.csv:3: column 'b': 'maybe' is not a boolean (true/false)"},
      {3, "v.csv:3: column 'ts': 'soon' is not an RFC 3339 time"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.want);
    Result<Table> fresh = Table::Open(text, "v.csv");
    ASSERT_TRUE(fresh.ok());
    ASSERT_TRUE(fresh->Next());
    ASSERT_TRUE(fresh->Next());
    switch (c.col) {
      case 0: (void)fresh->Int(0); break;
      case 1: (void)fresh->Double(1); break;
      case 2: (void)fresh->Bool(2); break;
      default: (void)fresh->Timestamp(3); break;
    }
    ASSERT_TRUE(fresh->failed());
    EXPECT_EQ(fresh->error().message(), c.want);
  }
}

TEST(CsvTable, KeepsTheFirstProblemOfARow) {
  Result<Table> t = Table::Open("a,b\nx,y\n", "k.csv");
  ASSERT_TRUE(t.ok());
  ASSERT_TRUE(t->Next());
  (void)t->Int(0);
  (void)t->Int(1);
  EXPECT_EQ(t->error().message(), "k.csv:2: column 'a': 'x' is not an integer");
}

TEST(CsvSplitList, DropsEmptyParts) {
  EXPECT_EQ(SplitList("", '|'), std::vector<std::string>{});
  EXPECT_EQ(SplitList("a| b ||c|", '|'), (std::vector<std::string>{"a", "b", "c"}));
}

}  // namespace
}  // namespace gpuscaler::sim::csv
