/tmp/lb-build-40b/bench/moe/layerbench-moe --backend cuda --model qwen3-30b-a3b --tokens 8192 --iterations 5 --warmup 2 --json /root/out/qwen3-30b-a3b.json --nvtx on
