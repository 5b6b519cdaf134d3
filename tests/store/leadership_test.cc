// Leadership fencing (SqliteAuditStore::ClaimLeadership) on both backends:
// two stores on one database stand for two replicas. Once the second claims
// a later term, every transaction the first tries rolls back "fenced"
// (intents included, so it acts on nothing), a stale claim is refused, and
// decisions carry the term they were made under.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "gpuscaler/store/audit_reader.h"
#include "gpuscaler/store/sqlite_audit_store.h"
#include "store/backends.h"
#include "store/store_test_util.h"

namespace gpuscaler::leadership_test {
namespace {

using testing_store::FullDecision;
using testing_store::LaunchAction;
using testing_store::T;

class Leadership : public testing_store::BackendTest {
 protected:
  std::unique_ptr<SqliteAuditStore> OpenReplica() {
    Result<std::unique_ptr<SqliteAuditStore>> store = SqliteAuditStore::Open(Db());
    EXPECT_TRUE(store.ok()) << store.error().ToString();
    return store.ok() ? std::move(store).value() : nullptr;
  }

  std::vector<std::pair<int64_t, int64_t>> Terms() {
    Result<std::unique_ptr<AuditReader>> reader = AuditReader::Open(Db());
    EXPECT_TRUE(reader.ok()) << reader.error().ToString();
    if (!reader.ok()) return {};
    Result<std::vector<std::pair<int64_t, int64_t>>> terms = (*reader)->DecisionTerms(0, 100);
    EXPECT_TRUE(terms.ok()) << terms.error().ToString();
    return terms.ok() ? *terms : std::vector<std::pair<int64_t, int64_t>>{};
  }
};
INSTANTIATE_TEST_SUITE_P(Backends, Leadership, testing_store::AllBackends(), testing_store::BackendName);

TEST_P(Leadership, ALaterTermFencesTheEarlierLeadersEveryWrite) {
  std::unique_ptr<SqliteAuditStore> a = OpenReplica();
  std::unique_ptr<SqliteAuditStore> b = OpenReplica();
  ASSERT_TRUE(a && b);
  ASSERT_TRUE(a->ClaimLeadership({"prod", 3, "replica-a", T(100)}).ok());
  ASSERT_TRUE(a->BeginTick().ok());
  Result<int64_t> first = a->RecordDecision(FullDecision(110));
  ASSERT_TRUE(first.ok()) << first.error().ToString();
  ASSERT_TRUE(a->CommitTick().ok());

  // B takes the Lease over: term 4.
  ASSERT_TRUE(b->ClaimLeadership({"prod", 4, "replica-b", T(120)}).ok());

  // A, back from a pause, tries a tick: nothing lands, and its intent
  // (written before any cloud call) fails, so it calls nothing.
  Status begun = a->BeginTick();
  Result<int64_t> late = a->RecordDecision(FullDecision(130));
  Result<int64_t> intent = a->RecordActionIntent(LaunchAction(first.ok() ? *first : 0, "tok-late"));
  Status committed = a->CommitTick();
  EXPECT_FALSE(intent.ok());
  EXPECT_FALSE(committed.ok() && begun.ok() && late.ok()) << "the fenced tick must fail somewhere";
  const std::string why = !intent.ok() ? intent.error().message() : "";
  if (!postgres()) {
    EXPECT_NE(why.find("fenced"), std::string::npos) << why;
    EXPECT_NE(why.find("term 4 (replica-b)"), std::string::npos) << why;
  }
  // (PostgreSQL: B's claim ended A's session, so A's tick found its
  // connection gone; its next write reconnects and is fenced.)
  // Outside a tick too.
  Status outside = a->RecordNodeLaunch(testing_store::NodeLaunch("i-late", first.ok() ? *first : 0, 140));
  ASSERT_FALSE(outside.ok());
  EXPECT_EQ(outside.error().category(), ErrorCategory::kAuth) << outside.error().ToString();
  EXPECT_NE(outside.error().message().find("term 4 (replica-b)"), std::string::npos) << outside.error().ToString();

  // B writes under its term; only A's first decision and B's are there.
  ASSERT_TRUE(b->BeginTick().ok());
  ASSERT_TRUE(b->RecordDecision(FullDecision(150)).ok());
  ASSERT_TRUE(b->CommitTick().ok());
  const std::vector<std::pair<int64_t, int64_t>> terms = Terms();
  ASSERT_EQ(terms.size(), 2u);
  EXPECT_EQ(terms[0].second, 3);
  EXPECT_EQ(terms[1].second, 4);
}

TEST_P(Leadership, AStaleOrDuplicateClaimIsRefusedAndARenewedClaimIsNot) {
  std::unique_ptr<SqliteAuditStore> a = OpenReplica();
  std::unique_ptr<SqliteAuditStore> b = OpenReplica();
  ASSERT_TRUE(a && b);
  ASSERT_TRUE(b->ClaimLeadership({"prod", 5, "replica-b", T(100)}).ok());
  Status stale = a->ClaimLeadership({"prod", 4, "replica-a", T(110)});
  ASSERT_FALSE(stale.ok());
  EXPECT_EQ(stale.error().category(), ErrorCategory::kAuth);
  Status same_term = a->ClaimLeadership({"prod", 5, "replica-a", T(110)});
  ASSERT_FALSE(same_term.ok()) << "two holders never share a term";
  // The holder itself claims again (it led, lost and took the Lease back
  // with no one between): allowed.
  EXPECT_TRUE(b->ClaimLeadership({"prod", 5, "replica-b", T(120)}).ok());
  // Another cluster's term is its own.
  EXPECT_TRUE(a->ClaimLeadership({"staging", 1, "replica-a", T(130)}).ok());
  Status bad = a->ClaimLeadership({"", 1, "replica-a", T(130)});
  EXPECT_EQ(bad.error().category(), ErrorCategory::kInvalidInput);
}

TEST_P(Leadership, WithoutAClaimNothingIsCheckedAndDecisionsCarryTermZero) {
  std::unique_ptr<SqliteAuditStore> a = OpenReplica();
  ASSERT_TRUE(a);
  ASSERT_TRUE(a->BeginTick().ok());
  ASSERT_TRUE(a->RecordDecision(FullDecision(100)).ok());
  ASSERT_TRUE(a->CommitTick().ok());
  const std::vector<std::pair<int64_t, int64_t>> terms = Terms();
  ASSERT_EQ(terms.size(), 1u);
  EXPECT_EQ(terms[0].second, 0);
}

}  // namespace
}  // namespace gpuscaler::leadership_test
