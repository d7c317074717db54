// fp8 cuBLASLt probe: which descriptor variants does cublasLtMatmul accept?
#include <cublasLt.h>
#include <cuda_runtime.h>
#include <cstdio>
#include <cstring>
#define CK(x) do { cublasStatus_t s_ = (x); if (s_) { printf("    %s -> status %d\n", #x, (int)s_); return (int)s_; } } while (0)

struct V { const char *name; cudaDataType_t d, c; bool scales, sepScales, cNull, iterate, fast, bias; int m, n, k; };

int run(cublasLtHandle_t lt, void *ws, const V &v) {
  printf("== %s (m %d n %d k %d)\n", v.name, v.m, v.n, v.k);
  void *a, *b, *d, *bias; float *sc, *sa, *sb;
  cudaMalloc(&a, v.m * v.k); cudaMalloc(&b, v.n * v.k); cudaMalloc(&d, v.m * v.n * 4);
  cudaMalloc(&bias, v.n * 4);
  cudaMemset(a, 0x38, v.m * v.k); cudaMemset(b, 0x38, v.n * v.k); cudaMemset(bias, 0, v.n * 4);
  float h[3] = {1, 1, 1};
  cudaMalloc(&sc, 12); cudaMemcpy(sc, h, 12, cudaMemcpyHostToDevice);
  cudaMalloc(&sa, 4); cudaMalloc(&sb, 4); cudaMemcpy(sa, h, 4, cudaMemcpyHostToDevice); cudaMemcpy(sb, h, 4, cudaMemcpyHostToDevice);
  cublasLtMatmulDesc_t op; CK(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  cublasOperation_t t = CUBLAS_OP_T, n = CUBLAS_OP_N;
  CK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &t, sizeof(t)));
  CK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &n, sizeof(n)));
  if (v.scales) {
    const float *pa = v.sepScales ? sa : sc, *pb = v.sepScales ? sb : sc + 1;
    CK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &pa, sizeof(pa)));
    CK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &pb, sizeof(pb)));
  }
  if (v.fast) { int8_t one = 1; CK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_FAST_ACCUM, &one, sizeof(one))); }
  if (v.bias) {
    cublasLtEpilogue_t e = CUBLASLT_EPILOGUE_BIAS; int32_t bt = CUDA_R_16BF;
    if (v.d == CUDA_R_16F) bt = CUDA_R_16F;
    CK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_EPILOGUE, &e, sizeof(e)));
    CK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bt, sizeof(bt)));
    CK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof(bias)));
  }
  if (v.d == CUDA_R_8F_E4M3) {
    const float *pd = sc + 2;
    CK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_D_SCALE_POINTER, &pd, sizeof(pd)));
  }
  cublasLtMatrixLayout_t la, lb, lc, ld;
  CK(cublasLtMatrixLayoutCreate(&la, CUDA_R_8F_E4M3, v.k, v.n, v.k));
  CK(cublasLtMatrixLayoutCreate(&lb, CUDA_R_8F_E4M3, v.k, v.m, v.k));
  CK(cublasLtMatrixLayoutCreate(&lc, v.c, v.n, v.m, v.n));
  CK(cublasLtMatrixLayoutCreate(&ld, v.d, v.n, v.m, v.n));
  cublasLtMatmulPreference_t pref; CK(cublasLtMatmulPreferenceCreate(&pref));
  uint64_t wsb = 32u << 20;
  CK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &wsb, sizeof(wsb)));
  cublasLtMatmulHeuristicResult_t r[8]; int got = 0;
  CK(cublasLtMatmulAlgoGetHeuristic(lt, op, la, lb, lc, ld, pref, 8, r, &got));
  printf("    heuristic: %d algorithms\n", got);
  float one = 1, zero = 0; int ok = 0;
  for (int i = 0; i < (v.iterate ? got : (got > 0 ? 1 : 0)); ++i) {
    void *c = v.cNull ? nullptr : d;
    cublasStatus_t s = cublasLtMatmul(lt, op, &one, b, la, a, lb, &zero, c, lc, d, ld, &r[i].algo, ws, r[i].workspaceSize, 0);
    cudaError_t e = cudaDeviceSynchronize();
    printf("    algo %d (ws %zu): matmul status %d, cuda %s\n", i, r[i].workspaceSize, (int)s, cudaGetErrorString(e));
    ok |= s == 0;
  }
  printf("  RESULT %s: %s\n", v.name, ok ? "works" : "FAILS");
  cudaFree(a); cudaFree(b); cudaFree(d); cudaFree(bias); cudaFree(sc); cudaFree(sa); cudaFree(sb);
  return 0;
}

int main() {
  int ver = 0; cublasLtHandle_t lt; cublasLtCreate(&lt);
  printf("cublasLt version %zu, cudart %zu\n", cublasLtGetVersion(), cublasLtGetCudartVersion());
  void *ws; cudaMalloc(&ws, 32u << 20);
  (void)ver;
  const V vs[] = {
    {"f32 out, adjacent scales (as Sluice)", CUDA_R_32F, CUDA_R_32F, true, false, false, false, false, false, 48, 128, 64},
    {"f32 out, separate scales", CUDA_R_32F, CUDA_R_32F, true, true, false, false, false, false, 48, 128, 64},
    {"f32 out, no scales", CUDA_R_32F, CUDA_R_32F, false, false, false, false, false, false, 48, 128, 64},
    {"f32 out, C null", CUDA_R_32F, CUDA_R_32F, true, true, true, false, false, false, 48, 128, 64},
    {"f32 out, all algos", CUDA_R_32F, CUDA_R_32F, true, false, false, true, false, false, 48, 128, 64},
    {"f32 out, fast accum", CUDA_R_32F, CUDA_R_32F, true, false, false, false, true, false, 48, 128, 64},
    {"f16 out, adjacent scales", CUDA_R_16F, CUDA_R_16F, true, false, false, true, false, false, 64, 96, 128},
    {"f16 out, separate scales", CUDA_R_16F, CUDA_R_16F, true, true, false, true, false, false, 64, 96, 128},
    {"bf16 out + bias, separate", CUDA_R_16BF, CUDA_R_16BF, true, true, false, true, false, true, 64, 96, 128},
    {"bf16 out 256^3 (as NVIDIA sample)", CUDA_R_16BF, CUDA_R_16BF, true, true, false, true, false, false, 256, 256, 256},
    {"e4m3 out, C bf16 aliasing D", CUDA_R_8F_E4M3, CUDA_R_16BF, true, true, false, true, false, false, 64, 64, 128},
    {"e4m3 out, C bf16 null", CUDA_R_8F_E4M3, CUDA_R_16BF, true, true, true, true, false, false, 64, 64, 128},
  };
  for (const V &v : vs) run(lt, ws, v);
  return 0;
}
