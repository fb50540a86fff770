"""vk.utils.data.distributed.DistributedSampler: the part of the indices one process of a
multi-process run reads. num_replicas and rank default to the process group's world size and rank
(RuntimeError without an initialized group, as torch)."""

from .sampler import Sampler, _randperm

__all__ = ["DistributedSampler"]


class DistributedSampler(Sampler):
    def __init__(self, dataset, num_replicas=None, rank=None, shuffle=True, seed=0,
                 drop_last=False):
        if num_replicas is None or rank is None:
            from ... import distributed as dist
            if not dist.is_initialized():
                raise RuntimeError("DistributedSampler: Default process group has not been "
                                   "initialized, please make sure to call init_process_group "
                                   "(or pass num_replicas= and rank=)")
            num_replicas = dist.get_world_size() if num_replicas is None else num_replicas
            rank = dist.get_rank() if rank is None else rank
        if rank >= num_replicas or rank < 0:
            raise ValueError(f"Invalid rank {rank}, rank should be in the interval "
                             f"[0, {num_replicas - 1}]")
        self.dataset = dataset
        self.num_replicas = num_replicas
        self.rank = rank
        self.epoch = 0
        self.drop_last = drop_last
        n = len(dataset)
        if drop_last and n % num_replicas != 0:
            self.num_samples = -(-(n - num_replicas) // num_replicas)
        else:
            self.num_samples = -(-n // num_replicas)
        self.total_size = self.num_samples * num_replicas
        self.shuffle = shuffle
        self.seed = seed

    def __iter__(self):
        n = len(self.dataset)
        if self.shuffle:
            from ... import _C  # (a vk.Generator seeded with seed + epoch, once vkml has one)
            state = _C.get_rng_state()
            _C.manual_seed(self.seed + self.epoch)
            indices = _randperm(n)
            _C.set_rng_state(state)
        else:
            indices = list(range(n))
        if not self.drop_last:
            pad = self.total_size - len(indices)
            while pad > 0:
                indices += indices[:pad]
                pad = self.total_size - len(indices)
        else:
            indices = indices[:self.total_size]
        return iter(indices[self.rank:self.total_size:self.num_replicas])

    def __len__(self):
        return self.num_samples

    def set_epoch(self, epoch):
        self.epoch = epoch
