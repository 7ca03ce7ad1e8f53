// Safetensors files, read and written by wit itself (public spec: 8-byte
// little-endian header length N, N bytes of JSON header, then the raw
// little-endian tensor bytes).
// Format notes: docs/safetensors.md.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "wit/base/bytes.h"
#include "wit/base/io.h"

namespace wit {

enum class DType { kF64, kF32, kF16, kBF16, kI64, kI32, kI16, kI8, kU8, kBool };
const char* dtype_name(DType d);  // "F32", ...
size_t dtype_size(DType d);
// Throws wit::Error("unknown dtype ...", where) for names outside the list above.
DType parse_dtype(const std::string& name, const std::string& where);

// A tensor whose bytes live elsewhere (a mapped file, or a caller's buffer).
struct TensorView {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;
  ByteView data;
  uint64_t numel() const;
};

// The encoding of tensors (written in name order; names must be unique) and
// string metadata, as consecutive pieces for a writer that streams them
// without a copy: the 8-byte header length and the header, then each tensor's
// bytes (views into the caller's tensors, which must outlive the pieces). The
// header is compact JSON, "__metadata__" first when present, then tensors in
// name order, padded with spaces to a multiple of 8 bytes. Throws wit::Error
// naming `where` for tensors that cannot be encoded.
struct SafetensorsPieces {
  Bytes head;                  // header length and header
  std::vector<ByteView> data;  // the tensors' bytes, in name order
  uint64_t size = 0;           // of the whole encoding
  std::vector<ByteView> all() const;
};
SafetensorsPieces safetensors_pieces(std::vector<TensorView> tensors, const std::map<std::string, std::string>& metadata,
                                     const std::string& where);
// The pieces joined.
Bytes encode_safetensors(std::vector<TensorView> tensors, const std::map<std::string, std::string>& metadata = {});
// Writes atomically (temp file, fsync, rename).
void write_safetensors(const std::string& path, const std::vector<TensorView>& tensors,
                       const std::map<std::string, std::string>& metadata = {});

// A parsed safetensors image. Validation follows the spec strictly: header
// length within the file and at most 100 MB, header is a JSON object, known
// dtypes, non-negative shapes, data_offsets inside the data section, sizes
// that match dtype x shape, no overlaps and no holes, no duplicate names.
// Any violation throws wit::Error naming the file (and byte offset).
class Safetensors {
 public:
  static Safetensors open(const std::string& path);                    // memory-mapped
  static Safetensors parse(ByteView bytes, const std::string& where);  // bytes must outlive it
  const std::vector<TensorView>& tensors() const { return tensors_; }  // in name order
  const TensorView* find(const std::string& name) const;
  const std::map<std::string, std::string>& metadata() const { return metadata_; }

 private:
  std::shared_ptr<MappedFile> file_;
  std::vector<TensorView> tensors_;
  std::map<std::string, std::string> metadata_;
};

// The root over a state's tensors (tensor_leaf, state_root) is in state_root.h.

}  // namespace wit
