// The table of ONNX op converters, and which converter serves an op at a model's opset.
//
// ONNX versions each op separately: at opset N the op's version in force is the newest version
// <= N (frontend/onnx_op_versions.inc, generated from the onnx package). A converter registered
// at opset S implements the op version in force at S. It also serves any other version of the
// op reachable through versions whose signature is unchanged (only their type constraints
// differ, and kiln checks types on its own). So a converter written for Xor at opset 13 (Xor-7)
// serves a model declaring opset 7, and one for Conv at 13 (Conv-11) serves Conv-22.
#include <algorithm>
#include <cstdlib>
#include <map>

#include "frontend/node_importer.h"
#include "ir/error.h"

namespace kiln::onnx_import {
namespace {

struct OpVersion {
  int version;
  bool same_signature_as_previous;
};

struct OpVersionHistory {
  const char* op_type;
  std::vector<OpVersion> versions;
};

#include "frontend/onnx_op_versions.inc"

const std::vector<OpVersion>* version_history(const std::string& op_type) {
  static const std::map<std::string, const std::vector<OpVersion>*> histories = [] {
    std::map<std::string, const std::vector<OpVersion>*> built;
    for (const OpVersionHistory& history : kOpVersionHistories) {
      built[history.op_type] = &history.versions;
    }
    return built;
  }();
  auto it = histories.find(op_type);
  return it == histories.end() ? nullptr : it->second;
}

// Index in `history` of the op version in force at `opset`, or -1 before the op existed.
int version_index_at(const std::vector<OpVersion>& history, int opset) {
  int index = -1;
  for (size_t i = 0; i < history.size(); ++i) {
    if (history[i].version <= opset) index = static_cast<int>(i);
  }
  return index;
}

// Whether every version change between indices a and b kept the signature.
bool signature_unchanged_between(const std::vector<OpVersion>& history, int a, int b) {
  for (int i = std::min(a, b) + 1; i <= std::max(a, b); ++i) {
    if (!history[i].same_signature_as_previous) return false;
  }
  return true;
}

}  // namespace

const ConverterTable& ConverterTable::global() {
  static const ConverterTable table = [] {
    ConverterTable built;
    register_elementwise_converters(built);
    register_quantize_converters(built);
    register_nn_converters(built);
    register_layout_converters(built);
    return built;
  }();
  return table;
}

int ConverterTable::newest_known_opset() { return kNewestKnownOpset; }

void ConverterTable::add(const std::string& op_type, int since_opset, ConvertFn convert) {
  for (const Entry& entry : entries_) {
    if (entry.op_type == op_type && entry.since_opset == since_opset) {
      throw InternalError("ONNX converter for " + op_type + " since opset " +
                          std::to_string(since_opset) + " registered twice");
    }
  }
  entries_.push_back({op_type, since_opset, convert});
}

ConvertFn ConverterTable::find(const std::string& op_type, int opset) const {
  const std::vector<OpVersion>* history = version_history(op_type);
  if (!history) return nullptr;
  const int wanted = version_index_at(*history, opset);
  if (wanted < 0) return nullptr;
  // The converter whose op version is nearest the wanted one, preferring older ones.
  const Entry* best = nullptr;
  int best_distance = 0;
  for (const Entry& entry : entries_) {
    if (entry.op_type != op_type) continue;
    const int served = version_index_at(*history, entry.since_opset);
    if (served < 0 || !signature_unchanged_between(*history, served, wanted)) continue;
    const int distance = served <= wanted ? 2 * (wanted - served) : 2 * (served - wanted) + 1;
    if (!best || distance < best_distance) {
      best = &entry;
      best_distance = distance;
    }
  }
  return best ? best->convert : nullptr;
}

std::vector<std::string> ConverterTable::op_types() const {
  std::vector<std::string> names;
  for (const Entry& entry : entries_) names.push_back(entry.op_type);
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}

}  // namespace kiln::onnx_import
