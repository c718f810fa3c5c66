/* liblayerbench_fp8_experts: the standard block's FP8 (e4m3) grouped expert GEMMs on Hopper,
 * rowwise-scaled (moe/hopper/fp8_grouped_sm90.cuh) and block-scaled (moe/hopper/fp8_block_sm90.cuh),
 * behind a C ABI, so that a peer framework can run them on
 * its own device buffers and stream, interleaved with its own kernels in one process
 * (bench/moe/torch_fp8.py loads it with ctypes).
 *
 * One handle = one preset's shape (hidden h, intermediate I, E experts, its activation) and a row
 * capacity. Buffers on the current CUDA device, rows grouped expert-major (counts[e] rows of
 * expert e):
 *   x (R, h), a (R, I)         e4m3 rows; x_scale, a_scale fp32 (R): one scale per row
 *   w13 (E, 2I, h), wd (E, h, I)  e4m3, nn.Linear's (out, in) layout; scales fp32 (E, 2I), (E, h),
 *                              one per output channel, 16-byte aligned
 *   act (R, I), y (R, h)       bf16 outputs: act = glu(gate, up) of the scaled products (the
 *                              preset's GLU), y = the scaled product of a and Wd
 * Return codes follow the binaries' exit codes: 0 ok, 1 runtime failure (CUDA, no device), 2 bad
 * input (unknown preset, a shape the kernels do not take, rows over the capacity). The message
 * of the last failure of the calling thread: lbf8_last_error(). */
#ifndef LAYERBENCH_TOOLS_FP8_EXPERTS_CAPI_H
#define LAYERBENCH_TOOLS_FP8_EXPERTS_CAPI_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct lbf8_handle lbf8_handle;

/* preset: a standard-block preset name; rows_cap: the most rows a call may pass. Allocates the
 * tile lists on the current device. */
int lbf8_create(const char* preset, int64_t rows_cap, lbf8_handle** out);
void lbf8_destroy(lbf8_handle* h);
int lbf8_shape(const lbf8_handle* h, int64_t* hidden, int64_t* inter, int64_t* experts);
/* Builds both tile lists on `stream` from device int32 counts (E of them, summing to the rows
 * the GEMM calls pass): no host read, so the calls can be captured in a graph. */
int lbf8_tiles(lbf8_handle* h, const int32_t* counts, void* stream);
/* The GEMMs over the last lists built, enqueued on `stream` without synchronising. */
int lbf8_gate_up(lbf8_handle* h, const void* x, const float* x_scale, const void* w13, const float* w13_scale,
                 void* act, int64_t rows, void* stream);
int lbf8_down(lbf8_handle* h, const void* a, const float* a_scale, const void* wd, const float* wd_scale, void* y,
              int64_t rows, void* stream);

/* Block-scaled (DeepSeek-V3's recipe, moe/hopper/fp8_block_sm90.cuh): x (R, h) e4m3 with 1x128 scales
 * (R, ceil(h/128)); w13 (E, 2I, h) e4m3 with 128x128 scales of each gate and up matrix
 * (2E, ceil(I/128), ceil(h/128)); wd (E, h, I) with (E, ceil(h/128), ceil(I/128)); a (R, I) e4m3
 * with (R, ceil(I/128)). lbf8_block_tiles builds the block kernels' own lists (128-column blocks for
 * gate/up, 256-column for down).
 * lbf8_block_gate_up writes bf16 act when act_q is null, else e4m3 act_q and its 1x128 act_scale
 * (the quantization fused into the epilogue). */
int lbf8_block_tiles(lbf8_handle* h, const int32_t* counts, void* stream);
int lbf8_block_gate_up(lbf8_handle* h, const void* x, const float* x_scale, const void* w13, const float* w13_scale,
                       void* act, void* act_q, float* act_scale, int64_t rows, void* stream);
int lbf8_block_down(lbf8_handle* h, const void* a, const float* a_scale, const void* wd, const float* wd_scale,
                    void* y, int64_t rows, void* stream);
/* The device quantizers of the recipe (bf16 in; cols a multiple of 16): 1x128 of (rows, cols),
 * and 128x128 of (groups, rows, cols). */
int lbf8_quantize_1x128(const void* x, int64_t rows, int64_t cols, void* q, float* scales, void* stream);
int lbf8_quantize_128x128(const void* w, int64_t groups, int64_t rows, int64_t cols, void* q, float* scales,
                          void* stream);
/* The rowwise kernels' launch variant for the calls that follow, process-wide: modifiers joined by
 * '+' (moe/hopper/std_grouped_sm90.cuh: paired, unpaired, pair-order, at-once, ...) applied to
 * the default, or "" for the default. Rebuild the tile lists after it (their order may change). */
int lbf8_set_variant(const char* modifiers);
const char* lbf8_last_error(void);

#ifdef __cplusplus
}
#endif

#endif
