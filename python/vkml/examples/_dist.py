"""Data-parallel training for the examples (python -m vkml.distributed.run -n N -m vkml.examples.X).

Every rank draws the same global batch (a pure function of the seed and the step, as in one
process) and trains on its contiguous share of the rows; DistributedDataParallel averages the
gradients. Rank 0 alone prints, evaluates and writes files. The checkpoint holds the unwrapped
model, the optimizer and the global losses: nothing in it depends on the number of ranks, so a
run resumes with any -n."""

import os

import vkml as vk


def wanted(flag):
    """True when the program should join an MPI job: --distributed, or started by the launcher
    with more than one rank (WORLD_SIZE > 1)."""
    return flag or int(os.environ.get("WORLD_SIZE", "1") or 1) > 1


class Ranks:
    """This process's place in the job (rank 0 of 1 when not distributed)."""

    def __init__(self, distributed):
        self.distributed = distributed
        if distributed:
            import vkml.distributed as dist
            dist.init_process_group("mpi")
            self.rank, self.world = dist.get_rank(), dist.get_world_size()
        else:
            self.rank, self.world = 0, 1
        self.main = self.rank == 0

    def wrap(self, model):
        """The module to train: DDP around the model when distributed (it broadcasts rank 0's
        parameters and averages the gradients during backward), else the model itself."""
        if not self.distributed:
            return model
        return vk.nn.parallel.DistributedDataParallel(model)

    def share(self, rows):
        """(this rank's rows of a global batch `rows`, the factor for its mean loss). DDP averages
        the W ranks' gradients, so a share of k of the batch's n rows weighs k * W / n: the average
        is then the gradient of the mean loss over the whole batch (the factor is 1.0 when the
        batch splits evenly). A rank whose share is empty (a last batch smaller than W) still takes
        part in backward, as DDP's all-reduce needs every rank: on one row weighted 0."""
        if not self.distributed:
            return rows, 1.0
        n = len(rows)
        lo, hi = self.rank * n // self.world, (self.rank + 1) * n // self.world
        if hi == lo:
            return rows[:1], 0.0
        return rows[lo:hi], (hi - lo) * self.world / n

    def sum(self, values):
        """The sums over ranks of a list of floats (float64, added in rank order)."""
        if not self.distributed:
            return list(values)
        import vkml.distributed as dist
        t = vk.tensor(list(values), dtype=vk.float64)
        dist.all_reduce(t)
        return t.tolist()

    def load(self, path):
        """The checkpoint at path as rank 0 reads it (None when there is none), handed to every
        rank: the ranks agree on whether and where they resume, and the other ranks need no
        access to rank 0's file system."""
        ck = vk.load(path) if self.main and os.path.exists(path) else None
        if not self.distributed:
            return ck
        import vkml.distributed as dist
        box = [ck]
        dist.broadcast_object_list(box, src=0)
        return box[0]

    def announce(self, batch_size):
        if self.distributed:
            self.print(f"data-parallel: {self.world} rank{'s' * (self.world > 1)}, global batch "
                       f"{batch_size} (about {batch_size / self.world:g} rows per rank)")

    def print(self, *args, **kwargs):
        if self.main:
            print(*args, **kwargs)

    def finish(self):
        if self.distributed:
            import vkml.distributed as dist
            dist.destroy_process_group()
