/tmp/lb-build/bench/moe/layerbench-moe --backend cuda --tokens 7500 --iterations 30 --warmup 5 --graph --layers 4 --json /tmp/p/moe-np1-t7500.json --markdown /tmp/p/moe-np1-t7500.md
