$BUILD/bench/moe/layerbench-moe --backend cuda --iterations 20 --warmup 5 --model qwen3-30b-a3b --tokens 4096 --advise --gpus 1 --json $OUT/c-advise-auto-t4096-r2.json
