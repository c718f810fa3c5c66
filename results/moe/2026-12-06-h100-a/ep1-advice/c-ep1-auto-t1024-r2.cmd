$BUILD/bench/moe/layerbench-moe --backend cuda --iterations 20 --warmup 5 --model qwen3-30b-a3b --tokens 1024 --json $OUT/c-ep1-auto-t1024-r2.json
