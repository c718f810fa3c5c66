/tmp/lb-build/bench/attn/layerbench-attn --backend cuda --advise --gpus 1 --heads 24 --head-dim 128 --seqs 32768 --text-tokens 256 --topologies usp1 --warmup 3 --iterations 10
/tmp/lb-build/bench/attn/layerbench-attn --backend cuda --heads 24 --head-dim 128 --seqs 32768 --text-tokens 256 --topologies usp1 --warmup 3 --iterations 10
