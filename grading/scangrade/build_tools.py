"""The build's toolchain and how its tools run: the Recipe of a backend, read from
<build-dir>/grading/toolchain.json, and run_tool, which runs a compile, rewrite, link or policy scan in
the grader's sandbox, niced, under a timeout.

The recipe comes from <build-dir>/grading/toolchain.json, which CMake writes:

    {"nvcc": PATH, "cxx": PATH, "cuda_flags": [...], "link": [...], "judge": PATH,
     "reference_worker": PATH, "version": STR,
     "emulate": {"rewrite": PATH or [ARGV...], "cxx": PATH, "cxx_flags": [...], "link": [...]}}

Both backends go through one code path (Recipe):

    gpu:      nvcc <cuda_flags> -I <student dir> -c student/f.cu -o obj/f.o
    emulate:  <rewrite> student/f.cu obj/f.cpp  then  cxx <cxx_flags> -I <student dir> -c obj/f.cpp -o obj/f.o
    link:     <cxx> <objects...> <link...> -o <out>/worker   (gpu: toolchain "cxx", else nvcc)

so `link` holds everything but the student's objects: the worker's main object or library, the
harness libraries, the runtime (-lcudart or the emulator's library) and system libraries.

Every one of these commands runs in the grader's sandbox (toolchain "sandbox": scangrade_sandbox,
grading/sandbox/sandbox.h): it sees the system, the toolchain, the contract headers and the
student/ folder read-only and can write only the folder of its own outputs; no network, no other
process, no secret, no reference solution. `#include "/path/to/secret"` finds nothing.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from . import policy

# SCANGRADE_BUILD_ALLOWLISTS=off turns policy_rules.json's allowlists off (the denylist stays): only for
# the exploit gallery's tests of the sandbox, whose attacks must get past the build to reach it
ALLOWLISTS_ENV = "SCANGRADE_BUILD_ALLOWLISTS"


class ToolchainError(Exception):
    """toolchain.json is missing or unusable: the grader is not built (a harness problem)."""



# --- running tools ----------------------------------------------------------------------------------

@dataclass
class Run:
    returncode: int | None      # None: timed out (killed)
    output: str                 # stdout and stderr together
    seconds: float

    @property
    def ok(self) -> bool:
        return self.returncode == 0


SANDBOX_TIMEOUT = 124   # scangrade_sandbox: the command ran past --timeout-s
KILLED = (-signal.SIGKILL, 128 + signal.SIGKILL)   # a tool killed by SIGKILL, directly or in the sandbox
COMPILE_NICENESS = 10   # compiles, rewrites and links run below the judges' priority (run_tool)
NICE = shutil.which("nice")


def _outside_usr(path: Path) -> bool:
    return not str(path).startswith("/usr/")


def paths_named(args: list[str] | tuple[str, ...]) -> list[Path]:
    """The existing absolute paths a command line names (as arguments, or after -I / -L), outside
    /usr (which every sandbox sees): what a sandboxed tool must be able to read."""
    found: list[Path] = []
    for arg in map(str, args):
        for prefix in ("-I", "-L", ""):
            if arg.startswith(prefix + "/"):
                path = Path(arg[len(prefix):])
                if path.exists() and _outside_usr(path):
                    found.append(path)
                break
    # an interpreter outside /usr (a pyenv or venv python) needs its whole prefix
    if args and Path(str(args[0])).is_absolute() and _outside_usr(Path(str(args[0]))):
        found.append(Path(str(args[0])).resolve().parent.parent)
    return found


@dataclass(frozen=True)
class Confinement:
    """The sandbox compiles, rewrites and links run in: scangrade_sandbox's argv prefix, or () for
    none (--sandbox off)."""

    launcher: tuple[str, ...] = ()

    def wrap(self, cmd: list[str], cwd: Path | None, read_only: list[Path], writable: list[Path],
             timeout: float) -> list[str]:
        if not self.launcher:
            return cmd
        argv = [*self.launcher, "--timeout-s", f"{timeout:g}"]
        ro = list(dict.fromkeys(str(Path(p).resolve()) for p in [*read_only, *paths_named(cmd)]))
        rw = list(dict.fromkeys(str(Path(p).resolve()) for p in writable))
        for path in ro:
            argv += ["--ro", path]
        for path in rw:
            argv += ["--rw", path]
        # the working folder, when the sandbox has it (it holds a bound path); else the private /tmp
        here = str(Path(cwd).resolve()) if cwd is not None else ""
        if here and any(p == here or p.startswith(here + "/") for p in ro + rw):
            argv += ["--chdir", here]
        return [*argv, "--", *cmd]


@functools.lru_cache(maxsize=None)
def isolation_probe(launcher: tuple[str, ...]) -> dict:
    """What the sandbox launcher says it will do here (scangrade_sandbox --probe); {} when it cannot say."""
    try:
        r = subprocess.run([*launcher, "--probe"], capture_output=True, text=True, timeout=60)
        iso = json.loads(r.stdout)
    except (OSError, ValueError, subprocess.SubprocessError):
        return {}
    return iso if isinstance(iso, dict) else {}


def kills_by_uid(launcher: tuple[str, ...]) -> bool:
    """True when the sandbox has neither namespaces nor a cgroup here (inside Docker or podman, as on
    PrairieLearn and Gradescope): it then ends each command by killing every process of its uid
    (sandbox.cpp kill_uid), so two commands under that uid must not run at the same time."""
    iso = isolation_probe(launcher)
    return bool(iso.get("uid_dropped")) and not iso.get("sandboxed") and iso.get("limits_via") == "rlimit"


def blocked_folder(uid: int, paths: list[Path]) -> Path | None:
    """The first folder on the way to one of `paths` that `uid` (its group: the same number, as the
    sandbox sets it) may not pass through, e.g. /root (mode 0700) for uid 65534."""
    for path in paths:
        path = Path(path).resolve()
        for folder in [*reversed(path.parents), *([path] if path.is_dir() else [])]:
            try:
                st = folder.stat()
            except OSError:
                continue
            bit = 0o100 if st.st_uid == uid else 0o010 if st.st_gid == uid else 0o001
            if not st.st_mode & bit:
                return folder
    return None


def check_reachable(confine: Confinement, paths: list[Path]) -> None:
    """Without bubblewrap's mount namespace, the grader as root runs student commands as an
    unprivileged uid that sees the real filesystem: the grader's own files must be reachable by it,
    or every compile fails (the stubs too) and reads as a broken toolchain. Raises ToolchainError
    saying what to do."""
    if not confine.launcher:
        return
    iso = isolation_probe(confine.launcher)
    if not iso.get("uid_dropped") or iso.get("sandboxed") or iso.get("uid") is None:
        return
    blocked = blocked_folder(int(iso["uid"]), paths)
    if blocked is not None:
        mode = oct(blocked.stat().st_mode & 0o777)[2:]
        raise ToolchainError(
            f"student code runs as uid {iso['uid']} here (as root, without bubblewrap's namespaces: "
            f"{(iso.get('notes') or ['bubblewrap is not usable'])[0]}), and that uid cannot enter {blocked} "
            f"(mode {mode}) on the way to the grader's files: put the project in a folder every user "
            f"may read (e.g. /opt or /srv), or make bubblewrap work, or grade with --sandbox off")


def run_tool(cmd: list[str], cwd: Path | None, timeout: float, confine: Confinement = Confinement(),
             read_only: list[Path] = (), writable: list[Path] = ()) -> Run:
    """Run a command (in the sandbox, with `read_only` and `writable` visible besides what it names)
    with its output captured; on timeout kill its whole process group (nvcc's cicc/ptxas children
    included)."""
    if confine.launcher:
        run = run_tool(confine.wrap(cmd, cwd, list(read_only), list(writable), timeout), cwd, timeout + 30)
        return Run(None if run.returncode == SANDBOX_TIMEOUT else run.returncode, run.output, run.seconds)
    start = time.monotonic()
    # A compile is throughput work; a judge's exchanges with its worker and the GPU are latency
    # work. In a batch both run at once and the compiles fill every core: at a lower priority they
    # still use all the CPU the judges leave (nice(1): every process the command starts inherits it).
    niced = [NICE, "-n", str(COMPILE_NICENESS)] if NICE else []
    try:
        proc = subprocess.Popen(niced + [str(c) for c in cmd], cwd=cwd, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
    except OSError as exc:
        return Run(127, f"cannot run {cmd[0]}: {exc}\n", time.monotonic() - start)
    try:
        out, _ = proc.communicate(timeout=timeout)
        code: int | None = proc.returncode
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        out, _ = proc.communicate()
        code = None
    return Run(code, out.decode("utf-8", errors="replace"), time.monotonic() - start)


# The slots' entry points (scangrade::student::*, mangled): the only student symbols the worker links to
STUDENT_ENTRY_SYMBOLS = "_ZN9scangrade7student*"


# --- the recipe -------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Recipe:
    """How to turn one .cu into an object and the objects into the worker, for one backend."""

    backend: str                          # "gpu" | "emulate"
    compiler: tuple[str, ...]             # nvcc, or the host C++ compiler
    flags: tuple[str, ...]
    linker: tuple[str, ...]               # the host C++ compiler as link driver
    link: tuple[str, ...]
    rewrite: tuple[str, ...] | None = None  # emulate: argv prefix; called as <rewrite> IN.cu OUT.cpp
    confine: Confinement = Confinement()
    nm: str = "nm"                        # binutils nm, for the policy's symbol scan
    readelf: str = "readelf"              # binutils, for the policy's start-up code scan
    objdump: str = "objdump"              # binutils, for the policy's instruction scan
    ld: str = "ld"                        # binutils ld, to join the student's objects into one (ld -r)
    objcopy: str = "objcopy"              # binutils, to make every student symbol but the slots local
    cuda_include: tuple[str, ...] = ()    # the CUDA toolkit's include folders (the include rules' "cuda")
    allowlists: bool = True               # policy_rules.json's allowlists (off only to test the layers below)

    @classmethod
    def from_toolchain(cls, toolchain: dict, backend: str, sandbox: str = "auto", bwrap: str = "bwrap") -> "Recipe":
        recipe = cls._for_backend(toolchain, backend)
        # an absolute path: the sandbox launcher runs a command without searching PATH
        recipe = dataclasses.replace(
            recipe, nm=str(toolchain.get("nm") or shutil.which("nm") or "nm"),
            readelf=str(toolchain.get("readelf") or shutil.which("readelf") or "readelf"),
            objdump=str(toolchain.get("objdump") or shutil.which("objdump") or "objdump"),
            ld=str(toolchain.get("ld") or shutil.which("ld") or "ld"),
            objcopy=str(toolchain.get("objcopy") or shutil.which("objcopy") or "objcopy"),
            cuda_include=tuple(map(str, policy.cuda_include_roots(toolchain.get("nvcc")))),
            allowlists=os.environ.get(ALLOWLISTS_ENV, "on") != "off")
        if sandbox == "off":
            return recipe
        launcher = toolchain.get("sandbox")
        if not launcher:
            raise ToolchainError("toolchain.json names no sandbox launcher (scangrade_sandbox): rebuild with `make`")
        return dataclasses.replace(recipe, confine=Confinement((launcher, "--sandbox", sandbox, "--bwrap", bwrap)))

    @classmethod
    def _for_backend(cls, toolchain: dict, backend: str) -> "Recipe":
        try:
            if backend == "gpu":
                nvcc = toolchain["nvcc"]
                return cls("gpu", (nvcc,), tuple(toolchain.get("cuda_flags", [])),
                           (toolchain.get("cxx") or nvcc,), tuple(toolchain.get("link", [])))
            emu = toolchain.get("emulate")
            if not isinstance(emu, dict):
                raise ToolchainError("this build has no CPU emulation backend (toolchain.json has no "
                                     "'emulate' section): grade on a GPU machine or rebuild with the emulator")
            rewrite = emu["rewrite"]
            if isinstance(rewrite, str):
                rewrite = [sys.executable, rewrite] if rewrite.endswith(".py") else [rewrite]
            return cls("emulate", (emu["cxx"],), tuple(emu.get("cxx_flags", [])), (emu["cxx"],),
                       tuple(emu.get("link", [])), tuple(rewrite))
        except KeyError as exc:
            raise ToolchainError(f"toolchain.json has no {exc.args[0]!r} for the {backend} backend: "
                                 "rebuild with `make`") from None

    def compile_steps(self, src: Path, obj: Path, include_dir: Path) -> list[list[str]]:
        # -H: the compiler prints the tree of the headers it opens (after macros) on stderr, for the
        # include rules; nvcc hands it to the host compiler for its host and device preprocessing both
        if self.rewrite is not None:
            cpp = obj.with_suffix(".cpp")
            return [[*self.rewrite, str(src), str(cpp)],
                    [*self.compiler, *self.flags, "-H", "-I", str(include_dir), "-c", str(cpp), "-o", str(obj)]]
        return [[*self.compiler, *self.flags, "-Xcompiler", "-H", "-I", str(include_dir), "-c", str(src),
                 "-o", str(obj)]]

    def include_roots(self, include_dir: Path, obj_dir: Path) -> policy.IncludeRoots:
        """The include rules' places: the student's folder (and, emulated, the rewriter's copies of its
        headers next to the object), the grader's -I folders, the emulator's and the toolkit's."""
        flags = list(self.flags)
        dirs = [Path(f[2:]) for f in flags if f.startswith("-I/")]
        dirs += [Path(b) for a, b in zip(flags, flags[1:]) if a in ("-I", "-isystem") and b.startswith("/")]
        emulation: list[Path] = []
        if self.rewrite is not None:
            args = list(self.rewrite)
            if "--runtime-header" in args[:-1]:
                emulation.append(Path(args[args.index("--runtime-header") + 1]).parent)
            emulation += [d for d in dirs if (d / "scangrade" / "emu.h").is_file()]
        contract = [d for d in dirs if d not in emulation]
        return policy.IncludeRoots((include_dir, obj_dir), tuple(contract), tuple(dict.fromkeys(emulation)),
                                   tuple(Path(p) for p in self.cuda_include))

    def join_commands(self, objects: list[Path], joined: Path) -> list[list[str]]:
        """The student's objects as one relocatable object whose only global symbols are the slot
        entry points (scangrade::student::*). A definition in student code (strong, weak, an alias,
        an ifunc, an assembler label) of a name a library or the worker also defines — memcpy,
        write, a std::string member — becomes local: it binds the student's own calls and nothing
        else, so it cannot take over the worker's code or the libraries' (no interposition).
        --force-group-allocation turns the student's COMDAT groups (inline and template copies)
        into plain sections, so the final link never swaps the worker's copy for the student's."""
        return [[self.ld, "-r", "--force-group-allocation", "-o", str(joined), *map(str, objects)],
                [self.nm, "--defined-only", str(joined)],
                [self.objcopy, "--wildcard", f"--keep-global-symbol={STUDENT_ENTRY_SYMBOLS}", str(joined)]]

    def unique_symbols_weakened(self, nm_output: str, joined: Path) -> list[str] | None:
        """objcopy leaves GNU unique symbols (nm `u`: a static local of an inline function or a
        template's static member, e.g. std::to_string's digit table) global, and the worker has its
        own copy: the command that makes them weak first, so that the next step makes them local
        (None when there are none)."""
        names = [parts[2] for parts in (line.split() for line in nm_output.splitlines())
                 if len(parts) == 3 and parts[1] == "u"]
        if not names:
            return None
        return [self.objcopy, *(f"--weaken-symbol={name}" for name in names), str(joined)]

    def link_command(self, objects: list[Path], out: Path) -> list[str]:
        # -z now, relro: every dynamic symbol is bound at start-up and the GOT is read-only after it
        # (-Xlinker: understood by g++ and by nvcc as link driver)
        now = ["-Xlinker", "-z", "-Xlinker", "relro", "-Xlinker", "-z", "-Xlinker", "now"]
        return [*self.linker, *map(str, objects), *self.link, *now, "-o", str(out)]


def read_toolchain(build_dir: Path) -> dict:
    path = Path(build_dir) / "grading" / "toolchain.json"
    if not path.is_file():
        raise ToolchainError(f"{path} not found: the grader is not built; run `make` first")
    try:
        toolchain = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise ToolchainError(f"{path} is unreadable ({exc}): run `make` again") from None
    if not isinstance(toolchain, dict):
        raise ToolchainError(f"{path} is not a JSON object: run `make` again")
    return toolchain

