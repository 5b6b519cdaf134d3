#include "pg_db.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <utility>

#include "dialect.h"
#include "gpuscaler/store/database_url.h"

namespace gpuscaler::store_internal {
namespace {

constexpr Oid kPostgresBoolOid = 16;
constexpr Oid kPostgresByteaOid = 17;

std::string TrimmedPostgresMessage(const char* message) {
  std::string text = message != nullptr ? message : "";
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text;
}

// The Error for SQLSTATE `state`, as SqliteError maps SQLite's codes: what
// another attempt may fix (a lost connection, a serialization failure or
// deadlock, a full disk, a shutdown) is kTransient; bad input and constraint
// violations kInvalidInput (kNotFound for a foreign key); logins, missing
// databases, permissions and read-only sessions kConfig; the rest kInternal.
Error PostgresError(std::string_view state, std::string message) {
  auto in_class = [&](std::string_view cls) { return state.substr(0, 2) == cls; };
  if (state.empty() || in_class("08") || in_class("53") || in_class("57") || state == "40001" ||
      state == "40P01" || state == "55P03") {
    return Error::Transient(message);
  }
  if (state == "23503") return Error::NotFound(message + ": refers to a missing row");
  if (in_class("23") || in_class("22")) return Error::InvalidInput(message);
  if (in_class("28") || state == "3D000" || state == "42501" || state == "25006")
    return Error::Config(message);
  return Error::Internal(message);
}

// Writes inside a transaction get a savepoint of their own (PostgresConnection).
bool IsPostgresWrite(std::string_view sql) {
  for (std::string_view word : {"INSERT", "UPDATE", "DELETE"}) {
    if (sql.substr(0, word.size()) == word) return true;
  }
  return false;
}

int PostgresHexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return 0;
}

}  // namespace

void PostgresStatement::Set(int i, std::string value, int format) {
  // A parameter the statement does not use is dropped, as SQLite's bind
  // would fail on it; the statement's Step reports what is missing.
  if (i <= 0 || static_cast<size_t>(i) >= parameters_.size() || parameters_[static_cast<size_t>(i)] == 0)
    return;
  const size_t index = static_cast<size_t>(parameters_[static_cast<size_t>(i)] - 1);
  if (values_.size() <= index) {
    values_.resize(index + 1);
    formats_.resize(index + 1, 0);
  }
  values_[index] = std::move(value);
  formats_[index] = format;
}

void PostgresStatement::BindText(int i, std::string_view v) {
  if (v.find('\0') != std::string_view::npos) has_nul_ = true;
  Set(i, std::string(v), 0);
}

void PostgresStatement::BindNull(int i) {
  Set(i, std::string(), 0);
  if (i > 0 && static_cast<size_t>(i) < parameters_.size() && parameters_[static_cast<size_t>(i)] != 0) {
    values_[static_cast<size_t>(parameters_[static_cast<size_t>(i)] - 1)].reset();
  }
}

void PostgresStatement::BindReal(int i, double v) {
  if (std::isnan(v)) return Set(i, "NaN", 0);
  if (std::isinf(v)) return Set(i, v > 0 ? "Infinity" : "-Infinity", 0);
  // The shortest text that reads back as the same double.
  char buffer[32];
  const auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, v);
  (void)ec;
  Set(i, std::string(buffer, end), 0);
}

Result<bool> PostgresStatement::Step(std::string_view what) {
  if (result_ == nullptr) {
    if (has_nul_) {
      return Error::InvalidInput(std::string(what) +
                                 ": a text value holds a NUL byte, which PostgreSQL text cannot store");
    }
    // Unbound parameters are NULL, as in SQLite.
    int count = 0;
    for (int m : parameters_) count = std::max(count, m);
    values_.resize(static_cast<size_t>(count));
    formats_.resize(static_cast<size_t>(count), 0);
    Result<PGresult*> result = db_->Execute(sql_, is_write_, values_, formats_, what);
    if (!result) return result.error();
    result_ = *result;
    row_ = -1;
  }
  ++row_;
  return row_ < PQntuples(result_);
}

void PostgresStatement::Reset() {
  if (result_ != nullptr) PQclear(result_);
  result_ = nullptr;
  row_ = -1;
  has_nul_ = false;
  values_.clear();
  formats_.clear();
}

int64_t PostgresStatement::Int(int col) const {
  const char* text = PQgetvalue(result_, row_, col);
  // A boolean expression reads as 1 or 0, as in SQLite.
  if (PQftype(result_, col) == kPostgresBoolOid) return text[0] == 't' ? 1 : 0;
  int64_t v = 0;
  std::from_chars(text, text + PQgetlength(result_, row_, col), v);
  return v;
}

double PostgresStatement::Real(int col) const {
  // strtod reads PostgreSQL's NaN and Infinity too.
  return std::strtod(PQgetvalue(result_, row_, col), nullptr);
}

std::string_view PostgresStatement::TextView(int col) const {
  return std::string_view(PQgetvalue(result_, row_, col),
                          static_cast<size_t>(PQgetlength(result_, row_, col)));
}

std::string PostgresStatement::Blob(int col) const {
  const std::string_view text = TextView(col);
  if (PQftype(result_, col) != kPostgresByteaOid || text.substr(0, 2) != "\\x") return std::string(text);
  std::string bytes;
  bytes.reserve((text.size() - 2) / 2);
  for (size_t i = 2; i + 1 < text.size(); i += 2) {
    bytes += static_cast<char>(PostgresHexDigit(text[i]) * 16 + PostgresHexDigit(text[i + 1]));
  }
  return bytes;
}

Result<std::shared_ptr<PostgresConnection>> PostgresConnection::Connect(const PostgresOptions& options) {
  const std::string redacted = RedactDatabaseUrl(options.url);
  const std::string context = "connecting to audit database " + redacted;
  char* parse_error = nullptr;
  PQconninfoOption* parsed = PQconninfoParse(options.url.c_str(), &parse_error);
  if (parsed == nullptr) {
    const std::string why = TrimmedPostgresMessage(parse_error);
    PQfreemem(parse_error);
    return Error::Config(context + ": not a PostgreSQL URL libpq reads: " + why);
  }
  PQconninfoFree(parsed);
  const std::string timeout = std::to_string(options.connect_timeout.count());
  // Keywords before dbname are defaults the URL may override: a dead peer
  // (a partition, a failed-over server) is noticed within about a minute,
  // not the kernel's two hours of TCP keepalive.
  std::vector<const char*> keys = {"connect_timeout", "application_name", "client_encoding", "keepalives_idle",
                                   "keepalives_interval", "keepalives_count", "tcp_user_timeout", "dbname"};
  std::vector<const char*> values = {timeout.c_str(), "gpuscaler", "UTF8", "30", "10", "3", "60000",
                                     options.url.c_str()};
  // After dbname: the session's settings override the URL's options.
  std::string session;
  if (options.read_only) session += "-c default_transaction_read_only=on";
  if (options.lock_timeout.count() > 0) {
    session += std::string(session.empty() ? "" : " ") + "-c lock_timeout=" +
               std::to_string(options.lock_timeout.count());
  }
  if (!session.empty()) {
    keys.push_back("options");
    values.push_back(session.c_str());
  }
  const std::optional<std::string> password = options.password ? options.password : DefaultDatabasePassword();
  if (password) {
    keys.push_back("password");
    values.push_back(password->c_str());
  }
  keys.push_back(nullptr);
  values.push_back(nullptr);
  PGconn* conn = PQconnectdbParams(keys.data(), values.data(), /*expand_dbname=*/1);
  if (conn == nullptr) return Error::Transient(context + ": out of memory");
  if (PQstatus(conn) != CONNECTION_OK) {
    Error error = Error::Transient(context + ": " + TrimmedPostgresMessage(PQerrorMessage(conn)));
    PQfinish(conn);
    return error;
  }
  std::shared_ptr<PostgresConnection> db(new PostgresConnection(conn, redacted));
  // Notices (an index that exists already) are not the store's to print.
  PQsetNoticeProcessor(
      conn, [](void*, const char*) {}, nullptr);
  return db;
}

PostgresConnection::~PostgresConnection() {
  statements_.clear();
  // Closing with a transaction open rolls it back, as a crash would.
  PQfinish(conn_);
}

Result<Query> PostgresConnection::Prepare(const char* sql) {
  auto it = statements_.find(sql);
  if (it == statements_.end()) {
    std::vector<int> parameters;
    std::string rendered = PostgresSql(sql, &parameters);
    const bool is_write = IsPostgresWrite(rendered);
    it = statements_
             .emplace(sql, std::make_unique<PostgresStatement>(this, std::move(rendered),
                                                               std::move(parameters), is_write))
             .first;
  }
  return Query(it->second.get());
}

bool PostgresConnection::Autocommit() const {
  const PGTransactionStatusType status = PQtransactionStatus(conn_);
  return status == PQTRANS_IDLE || status == PQTRANS_UNKNOWN;
}

Status PostgresConnection::EnsureConnected(std::string_view what) {
  if (PQstatus(conn_) == CONNECTION_OK) return Status::Ok();
  PQreset(conn_);
  if (PQstatus(conn_) == CONNECTION_OK) return Status::Ok();
  return Error::Transient(
      std::string(what) + ": the connection to " + redacted_url_ +
      " is lost and could not be re-established: " + TrimmedPostgresMessage(PQerrorMessage(conn_)));
}

Error PostgresConnection::Fail(PGresult* result, std::string_view what) {
  std::string message(what);
  message += ": ";
  std::string state;
  if (result != nullptr) {
    const char* code = PQresultErrorField(result, PG_DIAG_SQLSTATE);
    if (code != nullptr) state = code;
    message += TrimmedPostgresMessage(PQresultErrorMessage(result));
    PQclear(result);
  } else {
    message += TrimmedPostgresMessage(PQerrorMessage(conn_));
  }
  if (!state.empty()) message += " (SQLSTATE " + state + ")";
  if (PQstatus(conn_) != CONNECTION_OK) {
    message += " (" + redacted_url_ + ")";
    state.clear();  // the connection is gone: transient whatever the code
  }
  // An aborted transaction accepts nothing but ROLLBACK: end it, as SQLite
  // ends a transaction it cannot go on with.
  if (PQstatus(conn_) == CONNECTION_OK && PQtransactionStatus(conn_) == PQTRANS_INERROR) {
    PQclear(PQexec(conn_, "ROLLBACK"));
  }
  return PostgresError(state, message);
}

Status PostgresConnection::Simple(const char* sql, std::string_view what) {
  PGresult* result = PQexec(conn_, sql);
  if (result == nullptr || PQresultStatus(result) != PGRES_COMMAND_OK) return Fail(result, what);
  PQclear(result);
  return Status::Ok();
}

Result<PGresult*> PostgresConnection::Execute(const std::string& sql, bool is_write,
                                              const std::vector<std::optional<std::string>>& values,
                                              const std::vector<int>& formats, std::string_view what) {
  if (Autocommit()) {
    if (Status s = EnsureConnected(what); !s.ok()) return s.error();
  }
  const bool guarded = is_write && PQtransactionStatus(conn_) == PQTRANS_INTRANS;
  if (guarded) {
    if (Status s = Simple("SAVEPOINT gpuscaler_statement", what); !s.ok()) return s.error();
  }
  std::vector<const char*> pointers(values.size());
  std::vector<int> lengths(values.size());
  std::vector<Oid> types(values.size(), 0);
  for (size_t i = 0; i < values.size(); ++i) {
    pointers[i] = values[i] ? values[i]->data() : nullptr;
    lengths[i] = values[i] ? static_cast<int>(values[i]->size()) : 0;
    if (formats[i] == 1) types[i] = kPostgresByteaOid;
  }
  PGresult* result = PQexecParams(conn_, sql.c_str(), static_cast<int>(values.size()), types.data(),
                                  pointers.data(), lengths.data(), formats.data(), /*resultFormat=*/0);
  const ExecStatusType status = result != nullptr ? PQresultStatus(result) : PGRES_FATAL_ERROR;
  if (status != PGRES_TUPLES_OK && status != PGRES_COMMAND_OK) {
    if (guarded && PQstatus(conn_) == CONNECTION_OK && PQtransactionStatus(conn_) == PQTRANS_INERROR) {
      // Undo the failed write only; the transaction goes on.
      PQclear(
          PQexec(conn_, "ROLLBACK TO SAVEPOINT gpuscaler_statement; RELEASE SAVEPOINT gpuscaler_statement"));
    }
    return Fail(result, what);
  }
  const char* tuples = PQcmdTuples(result);
  changes_ = tuples != nullptr && *tuples != '\0' ? std::atoll(tuples) : 0;
  if (guarded) {
    if (Status s = Simple("RELEASE SAVEPOINT gpuscaler_statement", what); !s.ok()) {
      PQclear(result);
      return s.error();
    }
  }
  return result;
}

Status PostgresConnection::Exec(const char* sql, std::string_view what) {
  if (Autocommit()) {
    if (Status s = EnsureConnected(what); !s.ok()) return s;
  }
  const std::string rendered = PostgresSchema(sql);
  PGresult* result = PQexec(conn_, rendered.c_str());
  const ExecStatusType status = result != nullptr ? PQresultStatus(result) : PGRES_FATAL_ERROR;
  if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) return Fail(result, what);
  PQclear(result);
  return Status::Ok();
}

}  // namespace gpuscaler::store_internal
