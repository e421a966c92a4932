"""One rank of the multi-process PyTorch tests: joins through muster://, checks an all_reduce,
then plays its part: "ok" (leave), "victim" (stay until killed or stopped), "crash" (an unhandled exception after 1 s), "blocked" (wait in
an all_reduce that needs the victim), "loop" (all_reduce in a loop, forever)."""

import sys
import time

import torch
import torch.distributed as dist

import muster.torch  # noqa: F401  (registers muster://)

url, rank, world_size, role = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
dist.init_process_group("gloo", init_method=f"{url}&rank={rank}&world_size={world_size}"
                        if "?" in url else f"{url}?rank={rank}&world_size={world_size}")
tensor = torch.tensor([float(rank + 1)])
dist.all_reduce(tensor)
expected = world_size * (world_size + 1) / 2
assert tensor.item() == expected, (tensor.item(), expected)
print(f"rank {rank} all_reduce ok", flush=True)
if role == "ok":
    dist.barrier()
    dist.destroy_process_group()
    sys.exit(0)
if role == "victim":
    print(f"rank {rank} ready", flush=True)
    time.sleep(600)
if role == "crash":
    print(f"rank {rank} ready", flush=True)
    time.sleep(1.0)
    raise RuntimeError("simulated bug in rank code")
if role == "blocked":
    print(f"rank {rank} ready", flush=True)
    dist.all_reduce(tensor)  # needs the victim: only muster ends this
    print(f"rank {rank} all_reduce returned", flush=True)
    sys.exit(3)
if role == "loop":
    step = 0
    while True:
        dist.all_reduce(tensor)
        tensor.fill_(1.0)
        step += 1
        if step == 20:
            print(f"rank {rank} ready", flush=True)
