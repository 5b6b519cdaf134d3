#include "gpuscaler/store/copy.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gpuscaler/store/database_url.h"
#include "gpuscaler/store/sqlite_audit_store.h"
#include "pg_db.h"
#include "schema.h"
#include "sqlite_db.h"

namespace gpuscaler {
namespace {

using store_internal::Connection;
using store_internal::Query;

enum class CopyKind { kInt, kReal, kText, kBlob };

struct CopiedColumn {
  std::string name;
  CopyKind kind = CopyKind::kText;
  // The table whose made key this column refers to ("": none): the value
  // becomes that row's id in the target.
  std::string remap;
};

// One table as the copy moves it. `key`: an INTEGER PRIMARY KEY of its own
// (no reference), which the target makes (RETURNING it when `new_ids`: other
// rows refer to it); `ignore_same`: a row the target has already (shared by
// several stores) is kept as it is.
struct CopiedTable {
  std::string name;
  std::vector<CopiedColumn> columns;
  std::string key;
  bool new_ids = false;
  bool ignore_same = false;
};

// Not copied: the target's own (its schema version and installation id;
// leadership: which replica may write it now; rollup_state: merged by
// CopyRollupMark).
bool TargetsOwnTable(std::string_view table) {
  for (std::string_view own : {"schema_version", "installation", "leadership", "rollup_state"})
    if (table == own) return true;
  return false;
}

// Rows the target keeps when it has them already: rows several stores share
// (price samples of one market, policies by content hash), and a cluster's
// learned state (its controller runs there now: the target's is the newer).
bool TargetKeepsItsRow(std::string_view table) {
  return table == "policies" || table == "price_samples" || table == "learned_state";
}

Result<CopyKind> KindOfDeclared(const std::string& table, const std::string& column, std::string type) {
  for (char& c : type) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (type == "INTEGER") return CopyKind::kInt;
  if (type == "REAL") return CopyKind::kReal;
  if (type == "TEXT") return CopyKind::kText;
  if (type == "BLOB") return CopyKind::kBlob;
  return Error::Internal("copy: " + table + "." + column + " has type '" + type +
                         "', which the copy does not move");
}

// The tables in `tables`' order, each after the tables it refers to.
Result<std::vector<CopiedTable>> ReferencesFirst(
    std::vector<CopiedTable> tables, const std::map<std::string, std::set<std::string>>& refers_to) {
  std::vector<CopiedTable> ordered;
  std::set<std::string> placed;
  while (!tables.empty()) {
    auto ready = std::find_if(tables.begin(), tables.end(), [&](const CopiedTable& t) {
      for (const std::string& other : refers_to.at(t.name))
        if (other != t.name && !placed.count(other)) return false;
      return true;
    });
    if (ready == tables.end())
      return Error::Internal("copy: the audit schema's tables refer to each other in a cycle");
    placed.insert(ready->name);
    ordered.push_back(std::move(*ready));
    tables.erase(ready);
  }
  return ordered;
}

// What the copy moves, read from the schema's one description: the
// migrations, applied to an empty in-memory SQLite database and read back
// through its catalog (columns, their declared types, primary keys and
// references). A new table or column is copied as it is; a reference to a
// made key (runs.id, decisions.id) follows the row to its new id.
Result<std::vector<CopiedTable>> DeriveCopiedTables() {
  const std::string what = "reading the audit schema for the copy";
  Result<std::shared_ptr<Connection>> opened =
      Connection::Open(":memory:", SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, std::chrono::seconds(5));
  if (!opened) return opened.error().WithContext(what);
  Connection& schema = **opened;
  if (Status s = store_internal::Migrate(schema, store_internal::AuditMigrations()); !s.ok())
    return s.error().WithContext(what);
  Result<Query> names = schema.Prepare(
      "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY rowid");
  if (!names) return names.error();
  std::vector<CopiedTable> tables;
  std::map<std::string, std::set<std::string>> refers_to;
  // (table, column) -> referenced table, for references to a table's key.
  std::map<std::pair<std::string, std::string>, std::pair<std::string, std::string>> references;
  for (;;) {
    Result<bool> more = names->Step(what);
    if (!more) return more.error();
    if (!*more) break;
    CopiedTable t{names->Text(0), {}, "", false, false};
    if (TargetsOwnTable(t.name)) continue;
    t.ignore_same = TargetKeepsItsRow(t.name);
    refers_to[t.name];
    Result<Query> keys =
        schema.Prepare("SELECT \"from\", \"table\", \"to\" FROM pragma_foreign_key_list(?1)");
    if (!keys) return keys.error();
    keys->Bind(1, t.name);
    for (;;) {
      Result<bool> row = keys->Step(what);
      if (!row) return row.error();
      if (!*row) break;
      references[{t.name, keys->Text(0)}] = {keys->Text(1), keys->IsNull(2) ? "" : keys->Text(2)};
      refers_to[t.name].insert(keys->Text(1));
    }
    Result<Query> columns = schema.Prepare("SELECT name, type, pk FROM pragma_table_info(?1) ORDER BY cid");
    if (!columns) return columns.error();
    columns->Bind(1, t.name);
    int key_columns = 0;
    std::string integer_key;
    for (;;) {
      Result<bool> row = columns->Step(what);
      if (!row) return row.error();
      if (!*row) break;
      Result<CopyKind> kind = KindOfDeclared(t.name, columns->Text(0), columns->Text(1));
      if (!kind) return kind.error();
      if (columns->Int(2) > 0) {
        ++key_columns;
        if (*kind == CopyKind::kInt) integer_key = columns->Text(0);
      }
      t.columns.push_back({columns->Text(0), *kind, ""});
    }
    if (key_columns == 1 && !integer_key.empty() && !references.count({t.name, integer_key})) {
      t.key = integer_key;
      std::erase_if(t.columns, [&](const CopiedColumn& c) { return c.name == t.key; });
    }
    tables.push_back(std::move(t));
  }
  for (CopiedTable& t : tables) {
    for (CopiedColumn& c : t.columns) {
      auto ref = references.find({t.name, c.name});
      if (ref == references.end()) continue;
      auto target = std::find_if(tables.begin(), tables.end(),
                                 [&](const CopiedTable& o) { return o.name == ref->second.first; });
      if (target == tables.end() || target->key.empty()) continue;
      if (!ref->second.second.empty() && ref->second.second != target->key) continue;
      c.remap = target->name;
      target->new_ids = true;
    }
  }
  return ReferencesFirst(std::move(tables), refers_to);
}

Result<std::shared_ptr<Connection>> OpenCopyConnection(const std::string& db, bool read_only) {
  if (IsPostgresUrl(db)) {
    Result<std::shared_ptr<store_internal::PostgresConnection>> c =
        store_internal::PostgresConnection::Connect({.url = db, .read_only = read_only});
    if (!c) return c.error();
    return std::shared_ptr<Connection>(std::move(*c));
  }
  return Connection::Open(db, read_only ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE,
                          std::chrono::seconds(5));
}

struct Copier {
  Connection& from;
  Connection& to;
  // Made keys: the source's id -> the target's, by table.
  std::map<std::string, std::map<int64_t, int64_t>> ids;
  CopySummary summary;

  Status CopyTable(const CopiedTable& t) {
    std::string names;
    std::string params;
    for (size_t i = 0; i < t.columns.size(); ++i) {
      names += (i > 0 ? ", " : "") + t.columns[i].name;
      params += (i > 0 ? ", ?" : "?") + std::to_string(i + 1);
    }
    const bool keyed = !t.key.empty();
    const std::string select = "SELECT " + (keyed ? t.key + ", " : "") + names + " FROM " + t.name +
                               (keyed ? " ORDER BY " + t.key : "");
    const std::string insert = "INSERT INTO " + t.name + " (" + names + ") VALUES (" + params + ")" +
                               (t.ignore_same ? " ON CONFLICT DO NOTHING" : "") +
                               (t.new_ids ? " RETURNING " + t.key : "");
    const std::string what = "copying table " + t.name;
    Result<Query> in = from.Prepare(select.c_str());
    if (!in) return in.error().WithContext(what);
    int64_t copied = 0;
    while (true) {
      Result<bool> more = in->Step(what);
      if (!more) return more.error();
      if (!*more) break;
      Result<Query> out = to.Prepare(insert.c_str());
      if (!out) return out.error().WithContext(what);
      const int first = keyed ? 1 : 0;
      for (size_t i = 0; i < t.columns.size(); ++i) {
        const CopiedColumn& c = t.columns[i];
        const int col = first + static_cast<int>(i);
        const int param = static_cast<int>(i) + 1;
        if (in->IsNull(col)) {
          out->BindNull(param);
        } else if (!c.remap.empty()) {
          const std::map<int64_t, int64_t>& made = ids[c.remap];
          auto it = made.find(in->Int(col));
          if (it == made.end()) {
            return Error::Internal(what + ": " + c.name + " " + std::to_string(in->Int(col)) +
                                   " refers to no row");
          }
          out->Bind(param, it->second);
        } else if (c.kind == CopyKind::kInt) {
          out->Bind(param, in->Int(col));
        } else if (c.kind == CopyKind::kReal) {
          out->Bind(param, in->Real(col));
        } else if (c.kind == CopyKind::kBlob) {
          out->BindBlob(param, in->Blob(col));
        } else {
          out->Bind(param, in->Text(col));
        }
      }
      Result<bool> inserted = out->Step(what);
      if (!inserted) return inserted.error();
      if (t.new_ids) ids[t.name][in->Int(0)] = out->Int(0);
      ++copied;
    }
    summary.rows[t.name] = copied;
    return Status::Ok();
  }

  // The rollup mark: the earlier of the two (months before it are rolled
  // up in both stores).
  Status CopyRollupMark() {
    Result<Query> q = from.Prepare("SELECT rolled_up_before FROM rollup_state WHERE id = 1");
    if (!q) return q.error();
    Result<bool> row = q->Step("reading the rollup mark");
    if (!row) return row.error();
    if (!*row) return Status::Ok();
    return to.Run(
        "INSERT INTO rollup_state (id, rolled_up_before) VALUES (1, ?1) ON CONFLICT (id) DO UPDATE SET "
        "rolled_up_before = CASE WHEN excluded.rolled_up_before < rollup_state.rolled_up_before "
        "THEN excluded.rolled_up_before ELSE rollup_state.rolled_up_before END",
        "copying the rollup mark", q->Int(0));
  }
};

// kInvalidInput when the target holds any of the source's actions or nodes.
Status CheckNotCopiedBefore(Connection& from, Connection& to) {
  for (const auto& [table, key] :
       {std::pair{"actions", "idempotency_token"}, std::pair{"nodes", "instance_id"}}) {
    const std::string sql = std::string("SELECT ") + key + " FROM " + table;
    Result<Query> q = from.Prepare(sql.c_str());
    if (!q) return q.error();
    const std::string probe = std::string("SELECT count(*) FROM ") + table + " WHERE " + key + " = ?1";
    while (true) {
      Result<bool> more = q->Step("reading the source's keys");
      if (!more) return more.error();
      if (!*more) break;
      Result<Query> p = to.Prepare(probe.c_str());
      if (!p) return p.error();
      Result<bool> found = p->Bind(1, q->Text(0)).Step("looking for the source's rows in the target");
      if (!found) return found.error();
      if (*found && p->Int(0) > 0) {
        return Error::InvalidInput(std::string("the target holds ") + table + " row '" + q->Text(0) +
                                   "' of the source already: it was copied there before; nothing copied");
      }
    }
  }
  return Status::Ok();
}

}  // namespace

Result<CopySummary> CopyAuditStore(const std::string& from, const std::string& to) {
  const std::string context =
      "copying audit store " + RedactDatabaseUrl(from) + " to " + RedactDatabaseUrl(to);
  Result<std::shared_ptr<Connection>> source = OpenCopyConnection(from, /*read_only=*/true);
  if (!source) return source.error().WithContext(context);
  Result<int> version = store_internal::ReadSchemaVersion(**source);
  if (!version) return version.error().WithContext(context);
  if (*version != SqliteAuditStore::CurrentSchemaVersion()) {
    return Error::Config(context + ": the source is at schema version " + std::to_string(*version) +
                         ", not " + std::to_string(SqliteAuditStore::CurrentSchemaVersion()) +
                         "; open it once with this gpuscaler's daemon (or sim --db) to migrate it");
  }
  {
    Result<std::unique_ptr<SqliteAuditStore>> created = SqliteAuditStore::Open(to);
    if (!created) return created.error().WithContext(context);
  }
  Result<std::shared_ptr<Connection>> target = OpenCopyConnection(to, /*read_only=*/false);
  if (!target) return target.error().WithContext(context);
  Connection& in = **source;
  Connection& out = **target;
  Status s = in.Exec("BEGIN", "reading the source");
  if (s.ok()) s = out.Exec("BEGIN IMMEDIATE", "writing the target");
  if (s.ok()) s = CheckNotCopiedBefore(in, out);
  Result<std::vector<CopiedTable>> tables = DeriveCopiedTables();
  if (!tables) return tables.error().WithContext(context);
  Copier copier{in, out, {}, {}};
  for (size_t i = 0; s.ok() && i < tables->size(); ++i) s = copier.CopyTable((*tables)[i]);
  if (s.ok()) s = copier.CopyRollupMark();
  if (s.ok()) s = out.Exec("COMMIT", "committing the copy");
  if (!s.ok() && !out.Autocommit()) (void)out.Exec("ROLLBACK", "rolling back the copy");
  if (!in.Autocommit()) (void)in.Exec("COMMIT", "ending the read");
  if (!s.ok()) return s.error().WithContext(context);
  return copier.summary;
}

}  // namespace gpuscaler
