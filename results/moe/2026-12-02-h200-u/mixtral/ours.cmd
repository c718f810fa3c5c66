$BUILD/tools/layerbench-moe-kernels --models mixtral-8x7b --std-tokens 8192 --iterations 20 --warmup 5 --expert-table $SCRATCH/std-expert-paths.tsv --counts-dir $SCRATCH/shapes
