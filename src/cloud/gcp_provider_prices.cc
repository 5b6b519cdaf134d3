// GcpProvider: Spot prices from the Cloud Billing Catalog.
#include <algorithm>
#include <tuple>

#include "gcp_provider_impl.h"
#include "gpuscaler/cloud/gcp_billing_catalog.h"
#include "gpuscaler/net/url.h"

namespace gpuscaler::cloud {

namespace {

// Google's largest page: a read of Compute Engine's few thousand SKUs takes
// a handful of calls.
constexpr int kSkuPageSize = 5000;
// A catalog that never ends (a token that repeats) is not read forever.
constexpr int kMaxSkuPages = 100;

}  // namespace

Status GcpProvider::ReadBillingCatalog() {
  std::vector<GcpSpotSku> skus;
  std::string page;
  int pages = 0;
  do {
    if (++pages > kMaxSkuPages) {
      return Error::Transient("Cloud Billing Catalog: more than " + std::to_string(kMaxSkuPages) + " pages");
    }
    std::string path = std::string("services/") + kComputeEngineServiceId +
                       "/skus?currencyCode=USD&pageSize=" + std::to_string(kSkuPageSize);
    if (!page.empty()) path += "&pageToken=" + net::PercentEncode(page);
    Result<nlohmann::json> got = billing_->Call("GET", path);
    if (!got) return got.error();
    Result<std::string> next = ParseGcpSkuPage(*got, &skus);
    if (!next) return next.error();
    page = *next;
  } while (!page.empty());

  std::vector<GcpMachinePricing> machines;
  std::vector<std::string> unpriced;
  for (const InstanceType& t : options_.billing_catalog.machine_types) {
    if (std::optional<GcpMachinePricing> m = GcpMachinePricingFor(t)) {
      machines.push_back(std::move(*m));
    } else {
      unpriced.push_back(t.name + ": machine family without known Spot SKUs");
    }
  }
  GcpSpotPriceBook book = ComposeGcpSpotPrices(skus, machines, options_.region);
  unpriced.insert(unpriced.end(), book.unpriced.begin(), book.unpriced.end());

  std::vector<std::string> zones = options_.billing_catalog.zones;
  if (zones.empty()) zones = options_.zones;
  if (zones.empty()) zones = {options_.region};  // a regional price (SpotPrice::zone may be a region)
  std::vector<SpotPrice> prices;
  for (const GcpComposedPrice& p : book.prices) {
    for (const std::string& zone : zones) {
      prices.push_back({p.machine_type, zone, CapacityType::kSpot, p.usd_per_hour, p.effective});
    }
  }
  std::sort(prices.begin(), prices.end(), [](const SpotPrice& a, const SpotPrice& b) {
    return std::tie(a.time, a.instance_type, a.zone) < std::tie(b.time, b.instance_type, b.zone);
  });
  spot_prices_ = std::move(prices);
  unpriced_ = std::move(unpriced);
  ++billing_reads_;
  return Status::Ok();
}

Result<std::vector<SpotPrice>> GcpProvider::SpotPrices(WallTime) {
  if (billing_ == nullptr) return std::vector<SpotPrice>{};
  // The catalog publishes only the prices in force, each stamped with when
  // it took effect: every one is either the price at `since` or a change
  // after it, so the whole set answers every call.
  const SteadyTime now = client_.clock().Now();
  if (!next_catalog_read_ || now >= *next_catalog_read_) {
    const GcpBillingCatalogOptions& o = options_.billing_catalog;
    if (Status s = ReadBillingCatalog(); !s.ok()) {
      next_catalog_read_ = now + std::min(o.retry, o.refresh);
      return s.error().WithContext("Cloud Billing Catalog, the last prices stay in force");
    }
    next_catalog_read_ = now + o.refresh;
  }
  return spot_prices_;
}

}  // namespace gpuscaler::cloud
