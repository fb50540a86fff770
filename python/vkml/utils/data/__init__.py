"""vk.utils.data: torch.utils.data's datasets, samplers and DataLoader over vkml tensors."""

from . import dataloader, dataset, distributed, sampler
from ._collate import default_collate, default_convert
from ._decorators import (_DatasetKind, argument_validation, functional_datapipe,  # noqa: F401
                          guaranteed_datapipes_determinism, non_deterministic, runtime_validation,
                          runtime_validation_disabled)
from .dataloader import DataLoader, WorkerInfo, get_worker_info
from .distributed import DistributedSampler
from .dataset import (ChainDataset, ConcatDataset, Dataset, IterableDataset, StackDataset, Subset,
                      TensorDataset, random_split)
from .sampler import (BatchSampler, RandomSampler, Sampler, SequentialSampler,
                      SubsetRandomSampler, WeightedRandomSampler)

__all__ = ["DataLoader", "DistributedSampler", "WorkerInfo", "get_worker_info", "default_collate", "default_convert",
           "Dataset", "IterableDataset", "TensorDataset", "Subset", "ConcatDataset",
           "ChainDataset", "random_split", "StackDataset", "Sampler", "SequentialSampler", "RandomSampler",
           "SubsetRandomSampler", "WeightedRandomSampler", "BatchSampler",
           "functional_datapipe", "runtime_validation", "runtime_validation_disabled", "non_deterministic",
           "guaranteed_datapipes_determinism", "argument_validation", "_DatasetKind"]
