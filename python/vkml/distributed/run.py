"""Start a data-parallel job: N copies of a Python program, one per MPI rank, through mpirun.

    python -m vkml.distributed.run -n 2 train.py --epochs 3
    python -m vkml.distributed.run -n 2 -m vkml.examples.digits
    python -m vkml.distributed.run -n 4 --hostfile hosts -m vkml.examples.charlm

Each rank runs this Python (sys.executable) with the script or module, after setting torchrun's
variables RANK, LOCAL_RANK, WORLD_SIZE and LOCAL_WORLD_SIZE from the MPI launcher's own, so a
program written for torchrun that reads them works unchanged; it joins the job with
vk.distributed.init_process_group(). The exit status is the job's: non-zero when a rank failed.

mpirun is Open MPI's or MPICH's (whichever `mpirun --version` names). With Open MPI the launcher
adds --allow-run-as-root when run as root, --oversubscribe when N exceeds this machine's cores
(local launches only: with --hostfile the file's slots decide), and --bind-to none (each rank runs
vkml's own threads; Open MPI would pin a rank to one core). On one machine each rank gets
VKML_NUM_THREADS = CPUs // N unless it is set, so that the ranks' threads do not oversubscribe it.

--tcp makes the ranks talk over TCP even on one machine (Open MPI: --mca btl tcp,self; MPICH:
MPIR_CVAR_NOLOCAL=1 and FI_PROVIDER=tcp), which is how the loopback measurements of
docs/distributed.md are taken.
The environment (PYTHONPATH, VKML_* ...) reaches the ranks: local ranks inherit it, and with
--hostfile Open MPI is told to export it (-x); MPICH's hydra exports it by default."""

import argparse
import os
import shutil
import signal
import subprocess
import sys

__all__ = ["main", "build_command"]

# Launcher options that take a value (the first argument that is none of these options, nor the
# value of one, is the script; everything after it, or after -m MODULE, is the program's).
_VALUED = {"-n", "-np", "--nproc", "--nproc-per-node", "--nproc_per_node", "--hostfile", "--mpirun"}
# Variables a remote rank needs to find the same Python and vkml (besides every VKML_* one).
_EXPORTED = ("PATH", "PYTHONPATH", "LD_LIBRARY_PATH", "VIRTUAL_ENV", "OMP_NUM_THREADS",
             "OPENBLAS_NUM_THREADS")

NO_MPIRUN = ("vkml.distributed.run: no `mpirun` on PATH. Install an MPI: Open MPI (Debian/Ubuntu: "
             "apt-get install openmpi-bin libopenmpi-dev) or MPICH (apt-get install mpich "
             "libmpich-dev), then rebuild vkml so that vk.distributed.is_available() is True")


def _parser():
    p = argparse.ArgumentParser(
        prog="python -m vkml.distributed.run",
        usage="%(prog)s [-h] [-n N] [--hostfile FILE] [--tcp] [--mpirun PATH] "
              "(-m MODULE | script.py) [args ...]",
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("-n", "-np", "--nproc", "--nproc-per-node", "--nproc_per_node", dest="n",
                   type=int, default=1, metavar="N",
                   help="number of processes (ranks) to start (default 1)")
    p.add_argument("--hostfile", metavar="FILE",
                   help="mpirun's hostfile: the machines to run on and their slots")
    p.add_argument("--tcp", action="store_true",
                   help="carry all messages over TCP, even between ranks on one machine")
    p.add_argument("--mpirun", metavar="PATH",
                   help="the mpirun to use (default: the first on PATH)")
    p.add_argument("-m", dest="module", metavar="MODULE",
                   help="run a module as `python -m MODULE` does")
    p.add_argument("script", nargs="?", help="the Python program to run (unless -m)")
    return p


def _split(argv):
    """(the launcher's arguments, including the script or -m MODULE; the program's arguments)."""
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "-m":
            return argv[:i + 2], argv[i + 2:]
        if a.startswith("-m") and not a.startswith("--"):  # -mMODULE, as python accepts
            return argv[:i] + ["-m", a[2:]], argv[i + 1:]
        if a == "--":
            return argv[:i + 2], argv[i + 2:]
        if not a.startswith("-"):
            return argv[:i + 1], argv[i + 1:]
        i += 2 if a in _VALUED else 1
    return argv, []


def physical_cores():
    """Cores (not hardware threads), which Open MPI counts when it refuses to oversubscribe."""
    try:
        with open("/proc/cpuinfo") as f:
            cores, phys = set(), "0"
            for line in f:
                key, _, val = line.partition(":")
                key = key.strip()
                if key == "physical id":
                    phys = val.strip()
                elif key == "core id":
                    cores.add((phys, val.strip()))
        if cores:
            return len(cores)
    except OSError:
        pass
    return os.cpu_count() or 1


def _cpus():
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def mpi_flavour(mpirun):
    """'openmpi', 'mpich' (MPICH, Intel MPI: Hydra) or 'unknown', from `mpirun --version`."""
    try:
        r = subprocess.run([mpirun, "--version"], capture_output=True, text=True, timeout=30)
        text = (r.stdout + r.stderr).lower()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    if "open mpi" in text or "open-mpi" in text or "open rte" in text:
        return "openmpi"
    if "hydra" in text or "mpich" in text or "intel(r) mpi" in text:
        return "mpich"
    return "unknown"


def _vkml_root():
    """The directory holding the vkml package this launcher belongs to: first on the ranks'
    PYTHONPATH, so that every rank imports the same vkml as the launcher."""
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def build_command(args, program_args, mpirun, flavour, env):
    """(the mpirun command line, the environment to run it in)."""
    env = dict(env)
    root = _vkml_root()
    path = env.get("PYTHONPATH", "")
    if path.split(os.pathsep)[0] != root:
        env["PYTHONPATH"] = root + (os.pathsep + path if path else "")
    if args.hostfile is None and args.n > 1 and "VKML_NUM_THREADS" not in env:
        env["VKML_NUM_THREADS"] = str(max(1, _cpus() // args.n))
    cmd = [mpirun, "-n", str(args.n)]
    if flavour == "openmpi":
        cmd += ["--bind-to", "none"]
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            cmd.append("--allow-run-as-root")
        if args.hostfile is None and args.n > physical_cores():
            cmd.append("--oversubscribe")
        if args.tcp:
            cmd += ["--mca", "btl", "tcp,self"]
        if args.hostfile is not None:
            cmd += ["--hostfile", args.hostfile]
            for name in sorted(env):
                if name in _EXPORTED or name.startswith("VKML_"):
                    cmd += ["-x", name]
    else:  # MPICH's hydra (and others that take -f for a host file)
        if args.hostfile is not None:
            cmd += ["-f", args.hostfile]
        if args.tcp:
            env.setdefault("MPIR_CVAR_NOLOCAL", "1")
            env.setdefault("FI_PROVIDER", "tcp")
    worker = [sys.executable, "-m", "vkml.distributed._worker"]
    target = ["-m", args.module] if args.module else [args.script]
    return cmd + worker + target + list(program_args), env


def main(argv=None):
    """Runs the job; returns its exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    own, program_args = _split(argv)
    parser = _parser()
    args = parser.parse_args([a for a in own if a != "--"])
    if (args.module is None) == (args.script is None):
        parser.error("give exactly one program: -m MODULE or script.py")
    if args.n < 1:
        parser.error(f"-n must be at least 1, got {args.n}")
    if args.script is not None and not os.path.isfile(args.script):
        parser.error(f"no such script: {args.script!r}")
    mpirun = args.mpirun or shutil.which("mpirun") or shutil.which("mpiexec")
    if mpirun is None or shutil.which(mpirun) is None:
        sys.stderr.write(NO_MPIRUN + "\n")
        return 127
    from . import is_available
    if not is_available():
        sys.stderr.write("vkml.distributed.run: this vkml was built without MPI "
                         "(vk.distributed.is_available() is False); install libopenmpi-dev (or "
                         "libmpich-dev) and rebuild it\n")
        return 1
    cmd, env = build_command(args, program_args, mpirun, mpi_flavour(mpirun), os.environ)
    proc = subprocess.Popen(cmd, env=env)
    # A launcher told to stop (a batch system's or a test's timeout) stops the job: mpirun ends
    # the ranks on SIGTERM. Ctrl-C reaches mpirun directly (same process group).
    stopped_by = []

    def forward(signum, frame):
        stopped_by.append(signum)
        proc.send_signal(signum)
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, forward)
    while True:
        try:
            code = proc.wait()
            break
        except KeyboardInterrupt:  # mpirun got the Ctrl-C too: it stops the ranks; wait for it
            continue
    if code < 0:
        return 128 - code  # killed by a signal: the shell's convention
    if code == 0 and stopped_by:
        # MPICH's mpiexec exits 0 after passing SIGTERM on to the ranks; a job stopped before its
        # end did not succeed
        return 128 + stopped_by[0]
    return code


if __name__ == "__main__":
    sys.exit(main())
