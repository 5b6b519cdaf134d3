// Placeholder until the catalog loader lands (being written now).
#include "gpuscaler/model/catalog.h"
namespace gpuscaler {
Result<Catalog> LoadCatalogFile(const std::string& path) { return Error::Internal(path + ": catalog loader not built yet"); }
Result<Catalog> ParseCatalog(const std::string&, const std::string& f) { return Error::Internal(f + ": catalog loader not built yet"); }
}
