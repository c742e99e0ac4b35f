"""A one-node Slurm cluster on this machine, for test_slurm_cluster.py: munged, slurmctld and slurmd
from Debian's munge and slurm-wlm packages (tools/deps.sh installs them), started as root in the
foreground with a generated slurm.conf; the MUNGE key and socket, Slurm's state, spool, logs and
ports are the cluster's own (a temporary folder, free ports), so it touches no system service.

Nothing is installed here. start() raises Unavailable with the reason when this machine cannot
run the daemons: not root, a program missing, or a daemon that does not come up (its log's end).

The node has the machine's CPUs (at most 2) and no GPU (no GresTypes): jobs asking for
--gres=gpu:N are refused by sbatch, as on a cluster without GPUs. No cgroups (a container may not
have them): proctrack/linuxproc tracks a job's processes, task/none binds nothing.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

SBIN = os.pathsep.join(["/usr/sbin", "/usr/bin", "/sbin", "/bin"])
PROGRAMS = ("munged", "mungekey", "slurmctld", "slurmd", "sbatch", "squeue", "sacct", "scontrol", "scancel", "sinfo")
PARTITION = "debug"


class Unavailable(Exception):
    """This machine cannot run the test cluster; the message says why."""


def which(program: str) -> str | None:
    return shutil.which(program, path=os.environ.get("PATH", "") + os.pathsep + SBIN)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def tail(path: Path, lines: int = 8) -> str:
    try:
        return " | ".join(path.read_text(errors="replace").strip().splitlines()[-lines:])
    except OSError:
        return f"(no {path.name})"


SLURM_CONF = """\
# one node on localhost for ScanGrade's Slurm tests (grading/tests/slurm_cluster.py)
ClusterName=scangrade-test
SlurmctldHost={host}(127.0.0.1)
SlurmctldPort={ctld_port}
SlurmdPort={slurmd_port}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={root}/munge/munge.socket
StateSaveLocation={root}/state
SlurmdSpoolDir={root}/spool
SlurmctldPidFile={root}/slurmctld.pid
SlurmdPidFile={root}/slurmd.pid
SlurmctldLogFile={root}/slurmctld.log
SlurmdLogFile={root}/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/backfill
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
ReturnToService=2
# a cancelled task gets SIGTERM, then SIGKILL this many seconds later
KillWait=5
# ended jobs stay in slurmctld's memory this long (scontrol show job: the states without sacct)
MinJobAge=900
NodeName={host} NodeAddr=127.0.0.1 CPUs={cpus} State=UNKNOWN
PartitionName={partition} Nodes=ALL Default=YES MaxTime=INFINITE State=UP
"""


@dataclass
class Cluster:
    root: Path
    conf: Path
    node: str
    cpus: int
    env: dict[str, str]
    procs: list[tuple[str, subprocess.Popen]] = field(default_factory=list)
    partition: str = PARTITION

    def run(self, *cmd: str, timeout: float = 60) -> subprocess.CompletedProcess:
        return subprocess.run([which(cmd[0]) or cmd[0], *cmd[1:]], env=self.env, capture_output=True, text=True,
                              timeout=timeout)

    def jobs(self) -> list[str]:
        r = self.run("squeue", "-h", "-r", "-o", "%i")
        return r.stdout.split() if r.returncode == 0 else []

    def wait_idle(self, timeout: float = 120) -> None:
        """Until no job is left in the queue (a test's leftovers must not hold the next one's CPUs)."""
        deadline = time.monotonic() + timeout
        while self.jobs() and time.monotonic() < deadline:
            time.sleep(0.5)

    def stop(self) -> None:
        if any(name == "slurmctld" for name, _ in self.procs):
            self.run("scancel", f"--partition={self.partition}")
            self.wait_idle(60)
        for _name, proc in reversed(self.procs):
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for _name, proc in reversed(self.procs):
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=30)
        self.procs.clear()


def _daemon(cluster: Cluster, name: str, argv: list[str]) -> subprocess.Popen:
    out = open(cluster.root / f"{name}.out", "w")
    proc = subprocess.Popen(argv, env=cluster.env, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                            start_new_session=True)
    out.close()
    cluster.procs.append((name, proc))
    return proc


def _wait(cluster: Cluster, name: str, ready, timeout: float, log: Path) -> None:
    proc = dict(cluster.procs)[name]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if ready():
            return
        if proc.poll() is not None:
            break
        time.sleep(0.3)
    why = f"exited with status {proc.returncode}" if proc.poll() is not None else f"not ready after {timeout:g} s"
    raise Unavailable(f"{name} {why}: {tail(log)} {tail(cluster.root / f'{name}.out', 4)}")


def start(root: Path) -> Cluster:
    """Start munged, slurmctld and slurmd for a one-node cluster in `root` (made here)."""
    if os.geteuid() != 0:
        raise Unavailable("not root: the test cluster's slurmd and munged run as root")
    missing = [p for p in PROGRAMS if which(p) is None]
    if missing:
        raise Unavailable(f"{', '.join(missing)} not installed (tools/deps.sh installs slurm-wlm and munge as root)")
    root.mkdir(parents=True)
    root.chmod(0o755)
    for sub in ("munge", "state", "spool"):
        (root / sub).mkdir(mode=0o755)
    host = socket.gethostname().split(".")[0]
    cpus = max(1, min(2, os.cpu_count() or 1))
    conf = root / "slurm.conf"
    conf.write_text(SLURM_CONF.format(host=host, root=root, cpus=cpus, partition=PARTITION,
                                      ctld_port=free_port(), slurmd_port=free_port()))
    env = dict(os.environ, SLURM_CONF=str(conf), PATH=os.environ.get("PATH", "") + os.pathsep + SBIN)
    for var in [v for v in env if v.startswith(("SLURM_", "SBATCH_", "SQUEUE_")) and v != "SLURM_CONF"]:
        env.pop(var)
    cluster = Cluster(root, conf, host, cpus, env)
    try:
        key = root / "munge" / "munge.key"
        r = subprocess.run([which("mungekey"), "--create", f"--keyfile={key}"], capture_output=True, text=True,
                           timeout=30)
        if r.returncode != 0:
            raise Unavailable(f"mungekey: {r.stderr.strip()}")
        sock = root / "munge" / "munge.socket"
        _daemon(cluster, "munged", [which("munged"), "--foreground", "--force", f"--socket={sock}",
                                    f"--key-file={key}", f"--log-file={root / 'munged.log'}",
                                    f"--pid-file={root / 'munge' / 'munged.pid'}",
                                    f"--seed-file={root / 'munge' / 'munged.seed'}"])
        _wait(cluster, "munged", sock.exists, 20, root / "munged.log")
        _daemon(cluster, "slurmctld", [which("slurmctld"), "-D", "-f", str(conf)])
        _wait(cluster, "slurmctld", lambda: "UP" in cluster.run("scontrol", "ping").stdout, 60,
              root / "slurmctld.log")
        _daemon(cluster, "slurmd", [which("slurmd"), "-D", "-f", str(conf), "-N", host])
        _wait(cluster, "slurmd", lambda: cluster.run("sinfo", "-h", "-n", host, "-o", "%T").stdout.strip()
              .startswith("idle"), 60, root / "slurmd.log")
    except BaseException:
        cluster.stop()
        raise
    return cluster
