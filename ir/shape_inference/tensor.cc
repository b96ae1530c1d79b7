#include "ir/op_schema.h"

namespace rnnc {

void register_tensor_schemas(std::vector<OpSchema>& registry) { (void)registry; }

}  // namespace rnnc
