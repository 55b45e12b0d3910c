// Apart from the suite's tests, so that a unit test using load_table() alone does not link (and so register)
// the parameterised suite without an instantiation.
#include <stdexcept>

#include "config/op_table_loader.h"
#include "graphsplit/testing/engine_conformance.h"

namespace graphsplit::testing {

sdk::OpSupportTable load_table(const std::string& path) {
  sdk::OpSupportTable t;
  sdk::Status s = load_op_table(path, &t);
  if (!s.is_ok()) throw std::runtime_error(s.message());
  return t;
}

}  // namespace graphsplit::testing
