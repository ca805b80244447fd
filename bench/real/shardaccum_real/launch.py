"""Rank, world size and local rank from the launcher's environment (plain, torchrun, srun, mpirun),
and the NVLS safety refusal; pure functions of an environment dict."""

from __future__ import annotations

from dataclasses import dataclass

# NVLink multicast (NVLS) on the lent machines must stay off: every rank of a run at world >= 2 needs these.
NVLS_OFF = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}


class LaunchError(Exception):
    """The environment is inconsistent or unsafe; the message names the variables and the fix."""


@dataclass(frozen=True)
class Launch:
    launcher: str  # plain | torchrun | srun | mpirun
    rank: int
    world: int
    local_rank: int | None  # None: not given by the launcher (rank modulo the visible devices)


def _int(env: dict, key: str) -> int:
    try:
        v = int(env[key])
    except ValueError:
        raise LaunchError(f"{key}={env[key]!r} is not an integer") from None
    if v < 0:
        raise LaunchError(f"{key}={v} is negative")
    return v


def _first(env: dict, launcher: str, rank_key: str, world_key: str, local_keys: tuple) -> Launch:
    rank, world = _int(env, rank_key), _int(env, world_key) if world_key in env else None
    if world is None:
        raise LaunchError(f"{rank_key} is set but {world_key} is not ({launcher} sets both)")
    if world < 1 or rank >= world:
        raise LaunchError(f"{rank_key}={rank} is not below {world_key}={world}")
    local = next((_int(env, k) for k in local_keys if k in env), None)
    return Launch(launcher, rank, world, local)


def detect(env: dict) -> Launch:
    """torchrun (RANK/WORLD_SIZE/LOCAL_RANK) first, then srun (SLURM_PROCID/SLURM_NTASKS/SLURM_LOCALID),
    Open MPI (OMPI_COMM_WORLD_RANK/SIZE/LOCAL_RANK), MPICH/PMI (PMI_RANK/PMI_SIZE, MPI_LOCALRANKID);
    none of them: plain, world 1. Raises LaunchError on a half-set or inconsistent environment."""
    if "RANK" in env or "WORLD_SIZE" in env:
        if "RANK" not in env:
            raise LaunchError("WORLD_SIZE is set but RANK is not (torchrun sets both)")
        return _first(env, "torchrun", "RANK", "WORLD_SIZE", ("LOCAL_RANK",))
    if "SLURM_PROCID" in env and "SLURM_NTASKS" in env:
        return _first(env, "srun", "SLURM_PROCID", "SLURM_NTASKS", ("SLURM_LOCALID",))
    if "OMPI_COMM_WORLD_RANK" in env:
        return _first(env, "mpirun", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
                      ("OMPI_COMM_WORLD_LOCAL_RANK",))
    if "PMI_RANK" in env:
        return _first(env, "mpirun", "PMI_RANK", "PMI_SIZE", ("MPI_LOCALRANKID",))
    return Launch("plain", 0, 1, 0)


def nvls_refusal(env: dict, world: int) -> str | None:
    """None when safe; else the message: at world >= 2 every NVLS_OFF variable must have its value."""
    if world < 2:
        return None
    bad = [k for k, v in NVLS_OFF.items() if env.get(k) != v]
    if not bad:
        return None
    need = " ".join(f"{k}={v}" for k, v in NVLS_OFF.items())
    return (f"refusing to start at world size {world}: {', '.join(bad)} not set as required; NVLink multicast "
            f"must stay off on these machines: run with {need}")


def rendezvous_env(env: dict, launch: Launch) -> dict:
    """The variables torch.distributed's env:// init needs that the launcher did not set: plain runs get
    127.0.0.1 and a port chosen later (MASTER_PORT '0' means: pick one); srun/mpirun at world >= 2 must
    bring MASTER_ADDR and MASTER_PORT (LaunchError otherwise)."""
    add = {"RANK": str(launch.rank), "WORLD_SIZE": str(launch.world)}
    if launch.local_rank is not None:
        add["LOCAL_RANK"] = str(launch.local_rank)
    if launch.world == 1:
        add.setdefault("MASTER_ADDR", env.get("MASTER_ADDR", "127.0.0.1"))
        add.setdefault("MASTER_PORT", env.get("MASTER_PORT", "0"))
    else:
        missing = [k for k in ("MASTER_ADDR", "MASTER_PORT") if k not in env]
        if missing:
            raise LaunchError(f"{launch.launcher} at world size {launch.world}: set {' and '.join(missing)} "
                              "(the address and a free port of rank 0's host)")
    return {k: v for k, v in add.items() if env.get(k) != v}
