"""One worker of the torchrun tests (started by muster.torchrun): joins its gloo group through
env://, as every torchrun worker does, records its pid (OUT/pid-<agent pid>-<local rank>), and
runs all_reduce steps. While the world is smaller than MIN_WORLD it keeps stepping (until its
agent restarts it in a larger round); then it runs STEPS steps and records
OUT/done-<rank>-<restart count> with the world size. With a fifth argument "quiet" its steps
make no collective call (workers that a dead peer cannot fail). With "hang" every step is
reported (muster.torch.report_progress), and the last rank hangs after step 3, once per job
(it leaves OUT/hung behind), while the others wait for it in all_reduce."""

import os
import sys
import time

import torch
import torch.distributed as dist

import muster.torch

out, min_world, steps, pause = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
mode = sys.argv[5] if len(sys.argv) > 5 else ""
quiet, hang = mode == "quiet", mode == "hang"
dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
restart = int(os.environ["TORCHELASTIC_RESTART_COUNT"])
with open(os.path.join(out, f"pid-{os.getppid()}-{os.environ['LOCAL_RANK']}"), "w") as f:
    f.write(f"{os.getpid()} {world} {time.time()}\n")
deadline = time.monotonic() + 120
step = 0
while step < steps or world < min_world:
    if hang:
        muster.torch.report_progress(step)
        marker = os.path.join(out, "hung")
        if step == 3 and rank == world - 1 and not os.path.exists(marker):
            open(marker, "w").close()
            time.sleep(600)  # hung: its node's hang watch kills it
    if not quiet:
        tensor = torch.tensor([1.0])
        dist.all_reduce(tensor)
        assert tensor.item() == world, (tensor.item(), world)
    time.sleep(pause)
    step += 1
    if time.monotonic() > deadline:
        sys.exit(f"rank {rank}: still in a world of {world} < {min_world} after 120 s")
if hang:
    muster.torch.report_progress(step, done=True)  # waits for the others: no longer watched
with open(os.path.join(out, f"done-{rank}-{restart}"), "w") as f:
    f.write(f"{world}\n")
dist.destroy_process_group()
