// What the audit store tests of sqlite_audit_store_records, _intents, _files and
// _reader_test.cc share: the fixtures Store and Reader, each test run on both
// backends (backends.h), and OpenStore / OpenReader, which fail the test when
// the store or reader cannot be opened. A parameterized suite is instantiated
// once in the binary: Store in sqlite_audit_store_records_test.cc, Reader in
// sqlite_audit_store_reader_test.cc.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <utility>

#include "gpuscaler/store/audit_reader.h"
#include "gpuscaler/store/sqlite_audit_store.h"
#include "store/backends.h"

namespace gpuscaler::sqlite_audit_store_testing {

inline std::unique_ptr<SqliteAuditStore> OpenStore(const std::string& path,
                                                   SqliteAuditStoreOptions options = {}) {
  Result<std::unique_ptr<SqliteAuditStore>> store = SqliteAuditStore::Open(path, options);
  EXPECT_TRUE(store.ok()) << store.error().ToString();
  return store.ok() ? std::move(*store) : nullptr;
}

inline std::unique_ptr<AuditReader> OpenReader(const std::string& path, AuditReaderOptions options = {}) {
  Result<std::unique_ptr<AuditReader>> reader = AuditReader::Open(path, options);
  EXPECT_TRUE(reader.ok()) << reader.error().ToString();
  return reader.ok() ? std::move(*reader) : nullptr;
}

// One suite per subject, both run on every backend (GetParam()).
class Store : public testing_store::BackendTest {};
class Reader : public testing_store::BackendTest {};

}  // namespace gpuscaler::sqlite_audit_store_testing
