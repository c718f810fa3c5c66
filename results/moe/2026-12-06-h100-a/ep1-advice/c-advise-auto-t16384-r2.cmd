$BUILD/bench/moe/layerbench-moe --backend cuda --iterations 20 --warmup 5 --model qwen3-30b-a3b --tokens 16384 --advise --gpus 1 --json $OUT/c-advise-auto-t16384-r2.json
