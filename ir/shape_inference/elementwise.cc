#include "ir/op_schema.h"

namespace rnnc {

void register_elementwise_schemas(std::vector<OpSchema>& registry) { (void)registry; }

}  // namespace rnnc
