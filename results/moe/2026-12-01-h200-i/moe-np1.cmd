/tmp/lb-build/bench/moe/layerbench-moe --backend cuda --tokens 15000 --iterations 30 --warmup 5 --graph --layers 4 --json /tmp/p/moe-np1.json --markdown /tmp/p/moe-np1.md
