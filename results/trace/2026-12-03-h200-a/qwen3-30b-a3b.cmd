$B/bench/moe/layerbench-moe --backend cuda --model qwen3-30b-a3b --tokens 8192 --warmup 5 --iterations 30 --trace ./qwen3-30b-a3b-trace.json --json ./qwen3-30b-a3b.json --markdown ./qwen3-30b-a3b.md
