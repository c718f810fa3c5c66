python3 bench/moe/torch_std.py --dir $SCRATCH/shapes --models glm-4.5-air,qwen3-30b-a3b,deepseek-v3 --tokens 8192 --iterations 20 --warmup 5 --json $SCRATCH/torch-std.json --ours $SCRATCH/ours.md
