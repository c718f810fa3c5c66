$BUILD/bench/moe/layerbench-moe --backend cuda --iterations 20 --warmup 5 --expert-table $OUT/tables/per-expert.tsv --model qwen3-30b-a3b --tokens 4096 --json $OUT/c-ep1-per-expert-t4096-r1.json
