$BUILD/bench/moe/layerbench-moe --backend cuda --iterations 20 --warmup 5 --model qwen3-30b-a3b --tokens 16384 --json $OUT/c-ep1-auto-t16384-r1.json
