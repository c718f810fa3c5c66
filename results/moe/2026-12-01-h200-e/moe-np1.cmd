build/bench/moe/layerbench-moe --backend cuda --tokens 15000 --iterations 20 --warmup 5 --json $OUT/moe-np1.json --markdown $OUT/moe-np1.md
