#include "lowering/lower_group.h"

#include "ir/error.h"
#include "lowering/lower_conv_transpose.h"
#include "lowering/lower_cumsum.h"
#include "lowering/lower_dense.h"
#include "lowering/lower_dft.h"
#include "lowering/lower_elementwise.h"
#include "lowering/lower_reduce.h"
#include "lowering/lower_resize.h"

namespace rnnc {

std::unique_ptr<ExecutionBlock> lower_nodes(const std::vector<const Node*>& group,
                                            HalideCache& cache) {
  if (group.size() == 1 && group[0]->op_type() == "CumSum" && group[0]->domain().empty()) {
    return lower_cumsum(*group[0], cache);
  }
  if (group.size() == 1 && (group[0]->op_type() == "DFT" || group[0]->op_type() == "STFT") &&
      group[0]->domain().empty()) {
    return lower_dft(*group[0], cache);
  }
  if (group.size() == 1 && (group[0]->op_type() == "Resize" || group[0]->op_type() == "Upsample") &&
      group[0]->domain().empty()) {
    return lower_resize(*group[0], cache);
  }
  FusionGroup structure = analyze_group(group);
  if (structure.root) {
    const std::string& op = structure.root->op_type();
    if (op == "Conv") {
      if (structure.normalizer) {
        raise_unsupported(cat(structure.normalizer->describe(), ": a normalizer after a Conv"));
      }
      return lower_conv_group(structure, cache);
    }
    if (op == "ConvTranspose") {
      if (structure.normalizer) {
        raise_unsupported(
            cat(structure.normalizer->describe(), ": a normalizer after a ConvTranspose"));
      }
      return lower_conv_transpose_group(structure, cache);
    }
    return lower_gemm_group(structure, cache);
  }
  if (structure.normalizer) return lower_normalizer_group(structure, cache);
  if (structure.reduction) return lower_reduction(structure, cache);
  return lower_elementwise_group(structure, cache);
}

}  // namespace rnnc
