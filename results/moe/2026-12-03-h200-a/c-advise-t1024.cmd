/tmp/lb-build-39/bench/moe/layerbench-moe --backend cuda --iterations 20 --warmup 5 --model qwen3-30b-a3b --tokens 1024 --advise --gpus 1 --json /root/out/c-advise-t1024.json
