build/bench/attn/layerbench-attn --backend cuda --heads 14 --head-dim 128 --seqs 16384,32768,65536 --topologies usp1 --iterations 20 --warmup 5 --json $OUT/attn-np1.json --markdown $OUT/attn-np1.md
