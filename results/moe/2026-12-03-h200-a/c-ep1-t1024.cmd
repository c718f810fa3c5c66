/tmp/lb-build-39/bench/moe/layerbench-moe --backend cuda --iterations 20 --warmup 5 --model qwen3-30b-a3b --tokens 1024 --json /root/out/c-ep1-t1024.json
