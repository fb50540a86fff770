"""What each rank of `python -m vkml.distributed.run` runs: sets torchrun's environment variables
from the MPI launcher's, then runs the script or module as `python script.py` / `python -m`
would (as __main__, with its own sys.argv).

    python -m vkml.distributed._worker (-m MODULE | script.py) [args ...]

An exception the program does not catch propagates out of here, so it reaches sys.excepthook:
once the program has called init_process_group that ends the whole job (MPI_Abort)."""

import os
import runpy
import sys

# The MPI launchers' names for (rank, world size, rank on this machine, ranks on this machine):
# Open MPI's, MPICH's Hydra (PMI_*, MPI_LOCAL*), then PMIx's (Slurm, Open MPI 5).
_SOURCES = {
    "RANK": ("OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK"),
    "WORLD_SIZE": ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE"),
    "LOCAL_RANK": ("OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID"),
    "LOCAL_WORLD_SIZE": ("OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS"),
}


def _first(env, names):
    for name in names:
        if env.get(name, "") != "":
            return env[name]
    return None


def torchrun_variables(env):
    """{RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE} from the launcher's variables in env. A
    launcher that names no local rank is taken to have started every rank on one machine."""
    rank = _first(env, _SOURCES["RANK"]) or "0"
    size = _first(env, _SOURCES["WORLD_SIZE"]) or "1"
    return {"RANK": rank, "WORLD_SIZE": size,
            "LOCAL_RANK": _first(env, _SOURCES["LOCAL_RANK"]) or rank,
            "LOCAL_WORLD_SIZE": _first(env, _SOURCES["LOCAL_WORLD_SIZE"]) or size}


def main(argv):
    os.environ.update(torchrun_variables(os.environ))
    if len(argv) >= 2 and argv[0] == "-m":
        sys.argv = [argv[1]] + argv[2:]
        runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
    elif argv:
        script = argv[0]
        sys.argv = list(argv)
        sys.path[0] = os.path.dirname(os.path.abspath(script))  # as `python script.py` does
        runpy.run_path(script, run_name="__main__")
    else:
        sys.exit("usage: python -m vkml.distributed._worker (-m MODULE | script.py) [args ...]")


if __name__ == "__main__":
    main(sys.argv[1:])
