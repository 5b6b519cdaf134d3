// The one CSV tokenizer every trace reader uses (RFC 4180: quoted fields,
// doubled quotes, CRLF or LF, quoted line breaks), and a Table on top of it
// that checks the header and parses typed fields with "file:line: column 'x':
// ..." errors. Not thread-safe; one Table per file.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpuscaler/status.h"

namespace gpuscaler::sim::csv {

// Splits `text` into records. Views stay valid until the next call to Next()
// (quoted fields are unescaped into an internal buffer) and while `text`
// lives. Blank lines are skipped; a UTF-8 byte-order mark is ignored.
class Tokenizer {
 public:
  explicit Tokenizer(std::string_view text);

  // Reads the next record into fields(). False at the end of the input or on
  // a malformed quote (then error() is non-empty).
  bool Next();
  const std::vector<std::string_view>& fields() const { return fields_; }
  // Physical line (1-based) the current record starts on.
  int64_t line() const { return record_line_; }
  // "unterminated quoted field" etc., without a file or line prefix.
  const std::string& error() const { return error_; }

 private:
  std::string_view text_;
  size_t pos_ = 0;
  int64_t next_line_ = 1;
  int64_t record_line_ = 0;
  std::vector<std::string_view> fields_;
  // Unescaped quoted fields of the current record: offsets into scratch_,
  // turned into views once the record is complete (scratch_ may grow).
  std::string scratch_;
  struct Span {
    bool in_scratch;
    size_t begin;
    size_t size;
  };
  std::vector<Span> spans_;
  std::string error_;
};

// A CSV file with a header row, read row by row. Typed getters record the
// first problem of the current row instead of returning it, so a reader can
// fetch every column and check failed() once:
//   int64_t gpus = table.Int(c_gpus);
//   if (table.failed()) return table.error();
class Table {
 public:
  // Reads the header. An empty file or a duplicate column is an error.
  static Result<Table> Open(std::string_view text, std::string file_name);

  // Column index of `name`, or -1.
  int Find(std::string_view name) const;
  // Column index of `name`; on absence records "file:1: missing column 'x'"
  // (see failed()/error()) and returns -1.
  int Require(std::string_view name);
  const std::vector<std::string>& header() const { return header_; }
  const std::string& file_name() const { return file_name_; }

  // Next data row; false at the end or on an error (failed()). A row with a
  // different number of fields than the header is an error.
  bool Next();
  int64_t line() const { return tok_.line(); }
  int64_t rows_read() const { return rows_read_; }
  // Data rows the file probably holds (its line count), for reserving.
  size_t EstimatedRows() const;

  // Raw field (empty for col < 0).
  std::string_view Field(int col) const;
  bool Empty(int col) const { return Field(col).empty(); }
  // Typed fields. A bad value records "column 'x': 'v' is not an integer".
  int64_t Int(int col);
  double Double(int col);  // finite values only
  // Typed fields with a range: outside [lo, hi] records
  // "column 'x': must be in [lo, hi], got 'v'". Counts that end up in an
  // int (GPUs, milli-GPUs, nodes) must be read through these: converting an
  // out-of-range double to an integer is undefined behaviour.
  int64_t IntIn(int col, int64_t lo, int64_t hi);
  double NumberIn(int col, double lo, double hi);
  // true/false, 1/0, yes/no (any case).
  bool Bool(int col);
  // Whole seconds from a number of seconds (fractions rounded to nearest).
  int64_t SecondsValue(int col) { return Round(Double(col)); }
  // RFC 3339 / "YYYY-MM-DD hh:mm:ss" as Unix seconds.
  int64_t Timestamp(int col);

  // Records "file:LINE: column 'x': message" (or "file:LINE: message" for
  // col < 0) unless a problem is already recorded for this row.
  void Fail(int col, std::string_view message);
  // Records "file:1: message", a problem of the header (as Require does).
  void FailHeader(std::string_view message);
  bool failed() const { return error_.has_value(); }
  const Error& error() const { return *error_; }

  static int64_t Round(double v);

 private:
  Table(std::string_view text, std::string file_name)
      : text_(text), tok_(text), file_name_(std::move(file_name)) {}
  void FailBadValue(int col, std::string_view what);
  // Parses the whole field (spaces around it and a leading '+' allowed) as
  // a T; records "... is not <what>" and returns 0 when it is not one.
  template <typename T>
  T Parse(int col, std::string_view what);

  std::string_view text_;
  Tokenizer tok_;
  std::string file_name_;
  std::vector<std::string> header_;
  int64_t rows_read_ = 0;
  std::optional<Error> error_;
};

// "'value'", for messages that name a value.
std::string Quote(std::string_view value);

// Splits "a|b|c" (empty input: no parts; empty parts dropped).
std::vector<std::string> SplitList(std::string_view text, char separator);

}  // namespace gpuscaler::sim::csv
