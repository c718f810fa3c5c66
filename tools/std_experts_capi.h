/* liblayerbench_std_experts: the standard block's expert MLPs (moe/ StdOps::expert_mlp, the same
 * paths the block and layerbench-moe-kernels run) behind a C ABI, so that a peer framework can
 * run them on its own device buffers and stream, interleaved with its own kernels in one process
 * (bench/moe/torch_std.py --ours-lib loads it with ctypes).
 *
 * One handle = one preset's shape (hidden h, intermediate I, E experts, its activation) and one
 * expert path. Buffers are bf16 on the current CUDA device, rows grouped expert-major:
 *   x   (R, h)       input rows, counts[e] rows for expert e (R = sum of counts)
 *   w13 (E, 2I, h)   gate rows then up rows of each expert: nn.Linear's (out, in) layout
 *   wd  (E, h, I)    down projection, (out, in)
 *   y   (R, h)       output: down(glu(gate, up)) with the preset's GLU
 * counts are host int64 values: the cuBLAS paths plan on the host; the wgmma path uploads them
 * only when they change (a repeated load reads counts already on the device, no host read back).
 * Return codes follow the binaries' exit codes: 0 ok, 1 runtime failure (CUDA, cuBLAS, no
 * device), 2 bad input (unknown preset or path, a shape that does not match the handle). The
 * message of the last failure of the calling thread: lbse_last_error(). */
#ifndef LAYERBENCH_TOOLS_STD_EXPERTS_CAPI_H
#define LAYERBENCH_TOOLS_STD_EXPERTS_CAPI_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct lbse_handle lbse_handle;

/* preset: a standard-block preset name (layerbench-moe --list-models). path: "automatic" (the
 * path of `table`'s row for the shape, else the device's default: wgmma where it applies, off
 * sm_90 per-expert at <= 16 local experts and multi-stream above; table may be NULL), "per-expert", "grouped", "multi-stream", "padded" or "wgmma"; "wgmma:<modifiers>" runs
 * the grouped kernels in another launch variant (modifiers joined by '+': paired | unpaired,
 * half-tiles | whole-tiles, plain-order | pair-order, deferred | in-place, spread | at-once (the
 * deferred epilogue), a-evict-first | a-evict-last | a-evict-normal and the same for b- (L2
 * priority of the rows' and the weights' copies); the rest stay the defaults), e.g.
 * "wgmma:unpaired+in-place". Nothing touches the device before the first lbse_run. */
int lbse_create(const char* preset, const char* path, const char* table, lbse_handle** out);
void lbse_destroy(lbse_handle* h);
/* The handle's shape. */
int lbse_shape(const lbse_handle* h, int64_t* hidden, int64_t* inter, int64_t* experts);
/* Enqueues the expert MLPs on `stream` (a cudaStream_t; NULL = the legacy default stream) and
 * returns without synchronising. experts must be the handle's E, rows the sum of counts. The
 * first call creates the device state (cuBLAS handles, workspaces): run it once before timing. */
int lbse_run(lbse_handle* h, const void* x, const void* w13, const void* wd, void* y, const int64_t* counts,
             int64_t experts, int64_t rows, void* stream);
/* The path the handle runs at its shape ("wgmma", "per-expert", ...), and how (after a run: the
 * fallback taken where the path does not apply). Valid until the next call on the handle. */
const char* lbse_path(lbse_handle* h);
const char* lbse_describe(lbse_handle* h);
const char* lbse_last_error(void);

#ifdef __cplusplus
}
#endif

#endif
