/tmp/lb-build-40b/bench/moe/layerbench-moe --backend cuda --tokens 15000 --iterations 5 --warmup 2 --layers 4 --graph --json /root/out/magi2.json --nvtx on
