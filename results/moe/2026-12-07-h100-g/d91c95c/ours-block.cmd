/tmp/lb-build/tools/layerbench-moe-kernels --models deepseek-v3 --precision fp8-block --std-tokens 8192 --iterations 20 --warmup 5 --counts-dir /tmp/moe-fp8.vrprOg/shapes
