#include "lowering/block.h"

#include <cstdlib>
#include <cstring>

namespace rnnc {

void Workspace::Free::operator()(uint8_t* p) const { std::free(p); }

size_t Workspace::capacity() const {
  size_t total = 0;
  for (const Chunk& chunk : chunks_) total += chunk.size;
  return total;
}

void Workspace::reset() {
  if (chunks_.size() > 1) {
    // The last run needed several chunks: one chunk of their total serves the next runs.
    const size_t total = capacity();
    chunks_.clear();
    allocate_bytes(total, /*zero=*/false);
  }
  used_ = 0;
}

void* Workspace::allocate_bytes(size_t bytes, bool zero) {
  bytes = (bytes + 63) / 64 * 64;
  if (chunks_.empty() || used_ + bytes > chunks_.back().size) {
    const size_t size = std::max(bytes, 2 * capacity());
    void* memory = std::aligned_alloc(64, size);
    if (!memory) raise(ErrorKind::kIo, cat("out of memory allocating ", size, " bytes of scratch"));
    chunks_.push_back(Chunk{std::unique_ptr<uint8_t, Free>(static_cast<uint8_t*>(memory)), size});
    used_ = 0;
  }
  uint8_t* result = chunks_.back().memory.get() + used_;
  used_ += bytes;
  if (zero) std::memset(result, 0, bytes);
  return result;
}

const Tensor* ExecutionBlock::input_tensor(const BlockIO& io, const Value* value) const {
  if (!value) return nullptr;
  if (value->is_constant() && !value->is_graph_input()) return value->constant().get();
  for (size_t k = 0; k < inputs.size() && k < io.inputs.size(); ++k) {
    if (inputs[k] == value) return io.inputs[k];
  }
  return nullptr;
}

int64_t ExecutionBlock::begin_chunks(BlockIO&) const {
  RNNC_CHECK(false, kind(), " cannot run in chunks");
}
void ExecutionBlock::run_chunk(BlockIO&, int64_t, int64_t) const {
  RNNC_CHECK(false, kind(), " cannot run in chunks");
}
void ExecutionBlock::end_chunks(BlockIO&) const { RNNC_CHECK(false, kind(), " cannot run in chunks"); }
int64_t ExecutionBlock::batch_size(BlockIO&) const { return -1; }
bool ExecutionBlock::begin_batch_slices(BlockIO&, const int64_t*, int) const {
  RNNC_CHECK(false, kind(), " has no batch slices");
}
void ExecutionBlock::run_batch_slice(BlockIO&, int) const {
  RNNC_CHECK(false, kind(), " has no batch slices");
}
ExecutionBlock::SliceLayout ExecutionBlock::batch_slice_layout(const BlockIO&) const {
  RNNC_CHECK(false, kind(), " has no batch slices");
}
void ExecutionBlock::begin_parts(BlockIO&) const { RNNC_CHECK(false, kind(), " has no parts"); }
void ExecutionBlock::run_part(BlockIO&, int) const { RNNC_CHECK(false, kind(), " has no parts"); }
void ExecutionBlock::end_parts(BlockIO&) const { RNNC_CHECK(false, kind(), " has no parts"); }

}  // namespace rnnc
