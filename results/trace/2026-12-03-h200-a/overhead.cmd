$B/bench/moe/layerbench-moe --backend cuda --tokens 15000 --iterations 30 --warmup 5 --layers 1 --telemetry off --skip-check --json ./overhead-run.json
