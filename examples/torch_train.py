"""A small CPU DistributedDataParallel job over gloo, bootstrapped with muster://.

Run it on one machine (it starts its own ranks):

    PYTHONPATH=build/python /usr/bin/python3 examples/torch_train.py --world-size 4

or one process per rank, on any machines (rank 0 hosts the Muster leader at HOST:PORT):

    MASTER_ADDR=HOST MASTER_PORT=29500 RANK=r WORLD_SIZE=n \\
        /usr/bin/python3 examples/torch_train.py --rank-from-env

or under torchrun with Muster's rendezvous (one command per node; the first hosts the leader at
HOST:PORT; torchrun sets RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT):

    PYTHONPATH=build/python /usr/bin/python3 -m muster.torchrun --nnodes=1:2 \\
        --nproc_per_node=2 --rdzv_backend=muster --rdzv_endpoint=HOST:PORT --rdzv_id=job1 \\
        examples/torch_train.py

or under `muster run`, which hosts the leader, starts the ranks and restarts what fails (each
rank finds its identity and the leader in the environment the launcher sets):

    PYTHONPATH=build/python build/tools/muster run --job worker=4 --restart one-for-all -- \\
        /usr/bin/python3 examples/torch_train.py

Every rank is a Muster task: if one dies or hangs, the others print which one and exit with
code 1 at once instead of waiting in a collective until gloo's timeout. Under torchrun, where
the ranks are torch's workers, `--rdzv_conf hang_timeout=SECONDS` has each node stop a rank
whose step stood still that long (muster.torch.report_progress), and the job starts again.
"""

import argparse
import os
import socket

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel

import muster
import muster.torch  # registers the muster:// rendezvous


def train(rank: int, world_size: int, url: str, steps: int) -> None:
    dist.init_process_group("gloo", init_method=url, rank=rank, world_size=world_size)
    torch.manual_seed(0)
    model = DistributedDataParallel(torch.nn.Linear(8, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    target_weights = torch.arange(8, dtype=torch.float32) / 8
    generator = torch.Generator().manual_seed(rank)
    for step in range(steps):
        x = torch.randn(32, 8, generator=generator)
        y = x @ target_weights
        loss = torch.nn.functional.mse_loss(model(x).squeeze(1), y)
        optimizer.zero_grad()
        loss.backward()  # DDP averages the gradients of every rank over gloo
        optimizer.step()
        muster.torch.report_progress(step)  # for torchrun's --rdzv_conf hang_timeout
        if rank == 0 and (step % 10 == 0 or step == steps - 1):
            print(f"step {step:3d}  loss {loss.item():.5f}", flush=True)
    # Every rank holds the same weights: DDP kept them in step.
    weights = model.module.weight.detach().clone()
    dist.broadcast(weights, src=0)
    assert torch.allclose(weights, model.module.weight.detach())
    dist.destroy_process_group()
    if rank == 0:
        print(f"trained {world_size} ranks for {steps} steps; final loss {loss.item():.5f}")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--world-size", type=int, default=2)
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--rank-from-env", action="store_true",
                        help="one rank per process: RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT")
    args = parser.parse_args()
    if "TORCHELASTIC_RUN_ID" in os.environ:  # started by torchrun: its env:// store
        train(int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]), "env://", args.steps)
        return
    # A spare of `muster run --spares` (torch already imported) waits here for its task.
    muster.take_spare_assignment()
    if args.rank_from_env or muster.launch_identity() is not None:
        train(int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]), "muster://", args.steps)
        return
    url = f"muster://127.0.0.1:{free_port()}"
    mp.start_processes(train, args=(args.world_size, url, args.steps), nprocs=args.world_size,
                       start_method="spawn")


if __name__ == "__main__":
    main()
