// cuBLASLt's matmul for library steps (see the header): the library opened once, a plan per
// step and device.
#include "runtime/library_gemm_plan.h"

#include <cublasLt.h>  // types and constants only: the functions come from dlopen
#include <dlfcn.h>
#include <fmt/format.h>

#include <cstdlib>
#include <mutex>
#include <vector>

#include "ir/error.h"

namespace kiln {
namespace {

// The entry points kiln calls, resolved from the opened library.
struct CublasLt {
  std::string path;
  size_t version = 0;
  decltype(&cublasLtCreate) create = nullptr;
  decltype(&cublasLtDestroy) destroy = nullptr;
  decltype(&cublasLtMatmulDescCreate) desc_create = nullptr;
  decltype(&cublasLtMatmulDescDestroy) desc_destroy = nullptr;
  decltype(&cublasLtMatmulDescSetAttribute) desc_set = nullptr;
  decltype(&cublasLtMatrixLayoutCreate) layout_create = nullptr;
  decltype(&cublasLtMatrixLayoutDestroy) layout_destroy = nullptr;
  decltype(&cublasLtMatrixLayoutSetAttribute) layout_set = nullptr;
  decltype(&cublasLtMatmulPreferenceCreate) preference_create = nullptr;
  decltype(&cublasLtMatmulPreferenceDestroy) preference_destroy = nullptr;
  decltype(&cublasLtMatmulPreferenceSetAttribute) preference_set = nullptr;
  decltype(&cublasLtMatmulAlgoGetHeuristic) heuristic = nullptr;
  decltype(&cublasLtMatmulAlgoConfigGetAttribute) algo_get = nullptr;
  decltype(&cublasLtMatmul) matmul = nullptr;
};

template <class F>
bool resolve(void* handle, const char* symbol, F& function) {
  function = reinterpret_cast<F>(dlsym(handle, symbol));
  return function != nullptr;
}

std::vector<std::string> candidate_paths() {
  if (const char* chosen = std::getenv("KILN_CUBLASLT"); chosen && *chosen) return {chosen};
  const std::string name = fmt::format("libcublasLt.so.{}", CUBLAS_VER_MAJOR);
  std::vector<std::string> paths;
  for (const char* variable : {"CUDA_HOME", "CUDA_PATH"}) {
    if (const char* root = std::getenv(variable); root && *root) {
      paths.push_back(std::string(root) + "/lib64/" + name);
    }
  }
  paths.push_back("/usr/local/cuda/lib64/" + name);
  paths.push_back(name);
  return paths;
}

// The library, opened on first use (null with `why` when it cannot be).
const CublasLt* open_cublaslt(std::string& why) {
  static const std::pair<std::unique_ptr<CublasLt>, std::string> opened =
      []() -> std::pair<std::unique_ptr<CublasLt>, std::string> {
    std::string tried;
    for (const std::string& path : candidate_paths()) {
      void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (!handle) {
        tried += std::string("; ") + dlerror();  // names the path itself
        continue;
      }
      auto api = std::make_unique<CublasLt>();
      api->path = path;
      decltype(&cublasLtGetVersion) get_version = nullptr;
      const bool complete =
          resolve(handle, "cublasLtGetVersion", get_version) &&
          resolve(handle, "cublasLtCreate", api->create) &&
          resolve(handle, "cublasLtDestroy", api->destroy) &&
          resolve(handle, "cublasLtMatmulDescCreate", api->desc_create) &&
          resolve(handle, "cublasLtMatmulDescDestroy", api->desc_destroy) &&
          resolve(handle, "cublasLtMatmulDescSetAttribute", api->desc_set) &&
          resolve(handle, "cublasLtMatrixLayoutCreate", api->layout_create) &&
          resolve(handle, "cublasLtMatrixLayoutDestroy", api->layout_destroy) &&
          resolve(handle, "cublasLtMatrixLayoutSetAttribute", api->layout_set) &&
          resolve(handle, "cublasLtMatmulPreferenceCreate", api->preference_create) &&
          resolve(handle, "cublasLtMatmulPreferenceDestroy", api->preference_destroy) &&
          resolve(handle, "cublasLtMatmulPreferenceSetAttribute", api->preference_set) &&
          resolve(handle, "cublasLtMatmulAlgoGetHeuristic", api->heuristic) &&
          resolve(handle, "cublasLtMatmulAlgoConfigGetAttribute", api->algo_get) &&
          resolve(handle, "cublasLtMatmul", api->matmul);
      if (!complete) {
        tried += "; " + path + ": lacks a cuBLASLt function kiln calls";
        continue;  // the handle stays open: harmless, and dlclose of a CUDA library is not
      }
      api->version = get_version();
      if (api->version / 10000 != CUBLAS_VER_MAJOR) {
        tried += fmt::format("; {}: version {}, kiln was built against {}.x", path, api->version,
                             CUBLAS_VER_MAJOR);
        continue;
      }
      return {std::move(api), ""};
    }
    return {nullptr, "cuBLASLt not found (" + tried.substr(2) + ")"};
  }();
  why = opened.second;
  return opened.first.get();
}

cudaDataType_t cuda_type(DType dtype) {
  switch (dtype) {
    case DType::kF16:
      return CUDA_R_16F;
    case DType::kBF16:
      return CUDA_R_16BF;
    case DType::kF32:
      return CUDA_R_32F;
    default:
      throw InternalError(fmt::format("cuBLASLt call of {}", dtype_name(dtype)));
  }
}

}  // namespace

struct LibraryGemmPlan::State {
  const CublasLt* api = nullptr;
  ProgramLibraryGemm call;
  cublasLtHandle_t handle = nullptr;
  cublasLtMatmulDesc_t operation = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
  cublasLtMatmulAlgo_t algorithm{};
  std::mutex mutex;  // the operation's bias pointer is set for each call

  ~State() {
    if (!api) return;
    for (cublasLtMatrixLayout_t layout : {a, b, d}) {
      if (layout) api->layout_destroy(layout);
    }
    if (operation) api->desc_destroy(operation);
    if (handle) api->destroy(handle);
  }

  // Sets up the descriptors; the cuBLASLt function that failed, or "".
  std::string describe_call(DType type, DType bias_type) {
    if (api->create(&handle) != CUBLAS_STATUS_SUCCESS) return "cublasLtCreate";
    if (api->desc_create(&operation, CUBLAS_COMPUTE_32F, CUDA_R_32F) != CUBLAS_STATUS_SUCCESS) {
      return "cublasLtMatmulDescCreate";
    }
    const cublasOperation_t transpose_a = call.transpose_a ? CUBLAS_OP_T : CUBLAS_OP_N;
    const cublasOperation_t transpose_b = call.transpose_b ? CUBLAS_OP_T : CUBLAS_OP_N;
    const bool bias = call.bias >= 0;
    const cublasLtEpilogue_t epilogue = bias && call.relu ? CUBLASLT_EPILOGUE_RELU_BIAS
                                        : bias            ? CUBLASLT_EPILOGUE_BIAS
                                        : call.relu       ? CUBLASLT_EPILOGUE_RELU
                                                          : CUBLASLT_EPILOGUE_DEFAULT;
    bool set = api->desc_set(operation, CUBLASLT_MATMUL_DESC_TRANSA, &transpose_a,
                             sizeof(transpose_a)) == CUBLAS_STATUS_SUCCESS &&
               api->desc_set(operation, CUBLASLT_MATMUL_DESC_TRANSB, &transpose_b,
                             sizeof(transpose_b)) == CUBLAS_STATUS_SUCCESS &&
               api->desc_set(operation, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue,
                             sizeof(epilogue)) == CUBLAS_STATUS_SUCCESS;
    if (set && bias) {
      const int32_t bias_data_type = cuda_type(bias_type);
      // The heuristic reads the pointer's alignment: kiln's buffers are 16-byte aligned.
      const void* aligned = reinterpret_cast<const void*>(uintptr_t{16});
      set = api->desc_set(operation, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bias_data_type,
                          sizeof(bias_data_type)) == CUBLAS_STATUS_SUCCESS &&
            api->desc_set(operation, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &aligned,
                          sizeof(aligned)) == CUBLAS_STATUS_SUCCESS;
    }
    if (!set) return "cublasLtMatmulDescSetAttribute";
    const cudaDataType_t data_type = cuda_type(type);
    if (!layout(a, data_type, call.transpose_a ? call.k : call.m,
                call.transpose_a ? call.m : call.k, call.lda, call.batch_stride_a) ||
        !layout(b, data_type, call.transpose_b ? call.n : call.k,
                call.transpose_b ? call.k : call.n, call.ldb, call.batch_stride_b) ||
        !layout(d, data_type, call.m, call.n, call.ldd, call.batch_stride_d)) {
      return "cublasLtMatrixLayoutCreate";
    }
    return "";
  }

  bool layout(cublasLtMatrixLayout_t& made, cudaDataType_t type, int64_t rows, int64_t columns,
              int64_t ld, int64_t batch_stride) const {
    if (api->layout_create(&made, type, static_cast<uint64_t>(rows), static_cast<uint64_t>(columns),
                           ld) != CUBLAS_STATUS_SUCCESS) {
      return false;
    }
    if (call.batch == 1) return true;
    const auto count = static_cast<int32_t>(call.batch);
    return api->layout_set(made, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof(count)) ==
               CUBLAS_STATUS_SUCCESS &&
           api->layout_set(made, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &batch_stride,
                           sizeof(batch_stride)) == CUBLAS_STATUS_SUCCESS;
  }

  // The heuristic's first algorithm within the workspace; its description, or "" with `why`.
  std::string choose_algorithm(std::string& why) {
    cublasLtMatmulPreference_t preference = nullptr;
    if (api->preference_create(&preference) != CUBLAS_STATUS_SUCCESS) {
      why = "cublasLtMatmulPreferenceCreate failed";
      return "";
    }
    const auto workspace = static_cast<uint64_t>(call.workspace_bytes);
    const uint32_t alignment = 16;
    bool set = api->preference_set(preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace,
                                   sizeof(workspace)) == CUBLAS_STATUS_SUCCESS;
    for (const cublasLtMatmulPreferenceAttributes_t attribute :
         {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
          CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES}) {
      set = set && api->preference_set(preference, attribute, &alignment, sizeof(alignment)) ==
                       CUBLAS_STATUS_SUCCESS;
    }
    cublasLtMatmulHeuristicResult_t result{};
    int found = 0;
    const cublasStatus_t status =
        set ? api->heuristic(handle, operation, a, b, d, d, preference, 1, &result, &found)
            : CUBLAS_STATUS_INVALID_VALUE;
    api->preference_destroy(preference);
    if (status != CUBLAS_STATUS_SUCCESS || found == 0) {
      why = fmt::format("cuBLASLt has no algorithm for this call on this GPU (status {})",
                        static_cast<int>(status));
      return "";
    }
    algorithm = result.algo;
    int id = 0, tile = 0, stages = 0, splits = 1;
    api->algo_get(&algorithm, CUBLASLT_ALGO_CONFIG_ID, &id, sizeof(id), nullptr);
    api->algo_get(&algorithm, CUBLASLT_ALGO_CONFIG_TILE_ID, &tile, sizeof(tile), nullptr);
    api->algo_get(&algorithm, CUBLASLT_ALGO_CONFIG_STAGES_ID, &stages, sizeof(stages), nullptr);
    api->algo_get(&algorithm, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &splits, sizeof(splits), nullptr);
    return fmt::format("cuBLASLt {}, algorithm {} (tile id {}, stages id {}{})", api->version, id,
                       tile, stages, splits > 1 ? fmt::format(", split {}", splits) : "");
  }
};

LibraryGemmPlan::LibraryGemmPlan(std::unique_ptr<State> state) : state_(std::move(state)) {}
LibraryGemmPlan::~LibraryGemmPlan() = default;

std::unique_ptr<LibraryGemmPlan> LibraryGemmPlan::create(const ProgramLibraryGemm& call, DType type,
                                                         DType bias_type, std::string& why) {
  const CublasLt* api = open_cublaslt(why);
  if (!api) return nullptr;
  auto state = std::make_unique<State>();
  state->api = api;
  state->call = call;
  if (const std::string failed = state->describe_call(type, bias_type); !failed.empty()) {
    why = failed + " failed";
    return nullptr;
  }
  const std::string description = state->choose_algorithm(why);
  if (description.empty()) return nullptr;
  std::unique_ptr<LibraryGemmPlan> plan(new LibraryGemmPlan(std::move(state)));
  plan->description_ = description;
  return plan;
}

void LibraryGemmPlan::enqueue(const LibraryGemmPointers& pointers, cudaStream_t stream) const {
  State& state = *state_;
  const ProgramLibraryGemm& call = state.call;
  const std::lock_guard lock(state.mutex);
  if (call.bias >= 0 &&
      state.api->desc_set(state.operation, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &pointers.bias,
                          sizeof(pointers.bias)) != CUBLAS_STATUS_SUCCESS) {
    throw InternalError("cuBLASLt: setting the bias pointer failed");
  }
  // Without C, D stands in for it (read with beta 0).
  const void* c = call.c >= 0 ? pointers.c : pointers.d;
  const cublasStatus_t status =
      state.api->matmul(state.handle, state.operation, &call.alpha, pointers.a, state.a, pointers.b,
                        state.b, &call.beta, c, state.d, pointers.d, state.d, &state.algorithm,
                        pointers.workspace, static_cast<size_t>(call.workspace_bytes), stream);
  if (status != CUBLAS_STATUS_SUCCESS) {
    throw InternalError(fmt::format("cublasLtMatmul failed: status {}", static_cast<int>(status)));
  }
}

}  // namespace kiln
