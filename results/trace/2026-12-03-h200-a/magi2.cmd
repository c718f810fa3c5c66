$B/bench/moe/layerbench-moe --backend cuda --tokens 15000 --iterations 30 --warmup 5 --layers 4 --graph --trace ./magi2-trace.json --json ./magi2.json --markdown ./magi2.md
