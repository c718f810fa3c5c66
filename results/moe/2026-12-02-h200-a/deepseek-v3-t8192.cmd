/tmp/lb-build/bench/moe/layerbench-moe --backend cuda --model deepseek-v3 --tokens 8192 --iterations 10 --warmup 3 --json /root/out/deepseek-v3-t8192.json --markdown /root/out/deepseek-v3-t8192.md
