/tmp/lb-build/bench/moe/layerbench-moe --backend cuda --iterations 20 --warmup 5 --model qwen3-30b-a3b --precision fp8-block --tokens 4096 --json /root/out/adv/c-ep1-auto-fp8-block-t4096-r1.json
