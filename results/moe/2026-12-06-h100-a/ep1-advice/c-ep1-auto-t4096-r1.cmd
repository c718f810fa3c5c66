$BUILD/bench/moe/layerbench-moe --backend cuda --iterations 20 --warmup 5 --model qwen3-30b-a3b --tokens 4096 --json $OUT/c-ep1-auto-t4096-r1.json
