"""Mutation fuzzing of every reader: mangled copies of the real files in tests/data and scenes/ go through
``animkit.load`` in a worker process with a memory cap and a time limit per case; anything but success or an
``AnimkitError`` (a raw exception, a MemoryError, a hang) fails the test and names the case.

CI runs a fixed seed and budget (``FUZZ_CASES`` cases per reader, about a minute in all on two shared cores); a
longer run on request: ``pytest -m study tests/test_fuzz.py`` or ``ANIMKIT_FUZZ_CASES=20000 ANIMKIT_FUZZ_SEED=7``.
A new reader is one line in :data:`READERS`: its suffix and the files its mutations start from.
"""

from __future__ import annotations

import importlib.util
import json
import os
import random
import re
import select
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .conftest import DATA, ROOT, SCENES

#: reader → (suffix, seed files): a new reader is one line here.
READERS: dict[str, tuple[str, list[Path]]] = {
    "gltf": (".glb", sorted(DATA.glob("*.glb"))),
    "gltf-json": (".glb", sorted(DATA.glob("*.glb"))),  # semantic mutations of the JSON (mutate_gltf_json)
    "bvh": (".bvh", sorted(DATA.glob("*.bvh"))),
    "toml-scene": (".toml", [SCENES / "three_axis_arm.toml", SCENES / "six_axis_arm.toml", SCENES / "humanoid.toml"]),
    "toml-clip": (".toml", [SCENES / "walk.toml", SCENES / "wave.toml", SCENES / "six_axis_arm.toml"]),
    "urdf": (".urdf", sorted(DATA.glob("*.urdf"))),
    # ufbx reads each file in a process of its own (forked by animkit.io.fbx's server): a native crash there is a
    # ParseError for the caller, never a dead worker; the fuzz still counts it as a bug (NATIVE_CRASH)
    "fbx": (".fbx", [DATA / "fbx" / "mixamo_yup_cm.fbx", DATA / "fbx" / "prerot_ascii.fbx",
                     DATA / "fbx" / "swing_61_ascii.fbx"]
            if importlib.util.find_spec("ufbx") else []),
}
FUZZ_CASES = int(os.environ.get("ANIMKIT_FUZZ_CASES", "1000"))  # per reader
SEED = int(os.environ.get("ANIMKIT_FUZZ_SEED", "20261123"))
TIME_LIMIT_S = float(os.environ.get("ANIMKIT_FUZZ_TIME_LIMIT", "10"))  # per case, on a loaded machine
MEMORY_MB = 1024  # per case, above the warmed-up worker
SIBLINGS = [SCENES / "humanoid.toml"]  # files a case may refer to (walk.toml's base)
NATIVE_CRASH = "the FBX library (ufbx) crashed"  # the ParseError animkit.io.fbx gives for a reading process's signal

_INTERESTING = [b"0", b"-1", b"1e20", b"1e308", b"-1e309", b"nan", b"inf", b"1000000000", b"99999999999999999999",
                b"", b"\x00", b"\xff\xfe", b"\n", b"{", b"}", b"[", b"]", b'"', b"=", b"<", b">", b"&lt;",
                b"../../../../etc/passwd", b"/dev/zero", b"\xe2\x80\xae", b"\r\n", b"\t" * 50, b"1" * 400]


def _shrink_bvh(data: bytes, frames: int = 6) -> bytes:
    """A CMU file cut to a few frames (the mutations, not the frame count, are what the readers meet)."""
    text = data.decode()
    m = re.search(r"Frames:\s*(\d+)\s*\n(Frame Time:[^\n]*\n)", text)
    if m is None:
        return data
    rows = text[m.end():].split("\n")[:frames]
    return (text[:m.start()] + f"Frames: {len(rows)}\n" + m.group(2) + "\n".join(rows) + "\n").encode()


def _corpus(reader: str) -> list[bytes]:
    suffix, files = READERS[reader]
    out = [f.read_bytes() for f in files]
    return [_shrink_bvh(d) for d in out] if suffix == ".bvh" else out


def mutate(data: bytes, rng: random.Random) -> bytes:
    """One to four random edits: flips, cuts, duplications, swapped lines, numbers and tokens replaced by
    hostile ones, deep nesting, a truncation."""
    b = bytearray(data)
    for _ in range(rng.choice((1, 1, 1, 2, 3, 4))):
        op = rng.randrange(9)
        n = len(b)
        i = rng.randrange(n + 1) if n else 0
        if op == 0 and n:  # flip a bit
            b[min(i, n - 1)] ^= 1 << rng.randrange(8)
        elif op == 1:  # delete a run
            del b[i:i + rng.randint(1, 64)]
        elif op == 2:  # insert a hostile token
            b[i:i] = rng.choice(_INTERESTING)
        elif op == 3 and n:  # duplicate a run
            j = rng.randrange(n)
            b[i:i] = b[j:j + rng.randint(1, 200)]
        elif op == 4:  # replace a number
            nums = list(re.finditer(rb"-?\d+(\.\d+)?(e[-+]?\d+)?", bytes(b)))
            if nums:
                m = rng.choice(nums)
                b[m.start():m.end()] = rng.choice(_INTERESTING[:10])
        elif op == 5:  # swap two lines
            lines = bytes(b).split(b"\n")
            if len(lines) > 2:
                x, y = rng.randrange(len(lines)), rng.randrange(len(lines))
                lines[x], lines[y] = lines[y], lines[x]
                b = bytearray(b"\n".join(lines))
        elif op == 6:  # nesting, deep
            depth = rng.choice([10, 1000, 20000])
            b[i:i] = rng.choice([b"[" * depth + b"]" * depth, b"{" * depth, b"<a>" * depth,
                                 b"JOINT j {\nOFFSET 0 0 0\nCHANNELS 1 Xrotation\n" * depth])
        elif op == 7:  # truncate
            del b[i:]
        else:  # repeat a line many times
            lines = bytes(b).split(b"\n")
            if lines:
                k = rng.randrange(len(lines))
                lines[k:k] = [lines[k]] * rng.choice([2, 100, 5000])
                b = bytearray(b"\n".join(lines))
    return bytes(b)


_HOSTILE_VALUES: list[object] = [0, -1, 1, 2, 3, 4, 7, 255, 65535, 2**31, 2**32 + 1, 2**53, 10**12, 1e308, -1e308,
                                 0.5, 1e-45, "", "x", "SCALAR", "MAT4", "VEC3", "CUBICSPLINE", "STEP", "rotation",
                                 "weights", "data:,%41", "data:;base64,AAAA", "../x.bin", None, True, [], {}, [0],
                                 [1e308, 1e308, 1e308], [0, 0, 0], [0, 0, 0, 0], list(range(20)), 5120, 5121, 5123,
                                 5125, 5126, 34962, 86400.0]


def _json_paths(node: object, path: tuple = ()) -> list[tuple]:
    """Every path (keys and indices) to a value inside a JSON tree, arrays sampled (long ones: a few items)."""
    out = [path]
    if isinstance(node, dict):
        for k, v in node.items():
            out += _json_paths(v, (*path, k))
    elif isinstance(node, list):
        idx = range(len(node)) if len(node) <= 8 else sorted({0, 1, len(node) // 2, len(node) - 1})
        for i in idx:
            out += _json_paths(node[i], (*path, i))
    return out


def mutate_gltf_json(data: bytes, rng: random.Random) -> bytes:
    """A GLB whose JSON is edited as JSON (the BIN chunk kept): one to four edits of a value (a hostile number,
    an index out of range or pointing back up the tree, another type), a deleted key, a duplicated array item, a
    node made its own ancestor, an accessor's count or offset blown up; sometimes a byte mutation on top."""
    (jlen,) = struct.unpack_from("<I", data, 12)
    doc = json.loads(data[20:20 + jlen])
    binary = data[20 + jlen + 8:]
    for _ in range(rng.choice((1, 1, 2, 3, 4))):
        paths = [p for p in _json_paths(doc) if p]
        if not paths:
            break
        path = rng.choice(paths)
        parent = doc
        for k in path[:-1]:
            parent = parent[k]
        key = path[-1]
        op = rng.randrange(8)
        if op <= 2:  # a hostile value
            parent[key] = rng.choice(_HOSTILE_VALUES)
        elif op == 3 and isinstance(parent, dict):  # a key gone
            del parent[key]
        elif op == 4 and isinstance(parent, list):  # an item twice
            parent.insert(key, parent[key])
        elif op == 5 and isinstance(doc.get("nodes"), list) and doc["nodes"]:  # a cycle or a second parent
            a, b = rng.randrange(len(doc["nodes"])), rng.randrange(len(doc["nodes"]))
            if isinstance(doc["nodes"][a], dict):
                doc["nodes"][a].setdefault("children", [])
                if isinstance(doc["nodes"][a]["children"], list):
                    doc["nodes"][a]["children"].append(b)
        elif op == 6 and isinstance(doc.get("accessors"), list) and doc["accessors"]:  # a size far from the bytes
            acc = rng.choice(doc["accessors"])
            if isinstance(acc, dict):
                acc[rng.choice(["count", "byteOffset"])] = rng.choice([0, 1, 2**20, 2**28, 2**31 - 1, 10**9])
        elif isinstance(parent[key], (int, float)) and not isinstance(parent[key], bool):  # off by a little
            parent[key] = parent[key] + rng.choice([-1, 1, 4, -4, 1000])
    text = json.dumps(doc).encode()
    text += b" " * (-len(text) % 4)
    body = struct.pack("<II", len(text), 0x4E4F534A) + text + data[20 + jlen:20 + jlen + 8] + binary
    out = struct.pack("<III", 0x46546C67, 2, 12 + len(body)) + body
    return mutate(out, rng) if rng.random() < 0.1 else out


#: reader → its mutation (bytes, rng) → bytes: byte-level edits unless named here
MUTATORS = {"gltf-json": mutate_gltf_json}


def _cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds of process ``pid`` (Linux /proc; None elsewhere)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


class Worker:
    """The worker process (tests/fuzz_worker.py), restarted after a hang or a crash."""

    def __init__(self) -> None:
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        warm = [str(p) for p in SIBLINGS] + [str(READERS[r][1][0]) for r in READERS if READERS[r][1]]
        self.proc = subprocess.Popen([sys.executable, "-m", "tests.fuzz_worker", str(MEMORY_MB), *warm],
                                     cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL)
        ready = self._answer(300.0)
        assert ready == {"status": "ready"}, f"fuzz worker did not start: {ready}"

    def _answer(self, timeout: float) -> dict | None:
        assert self.proc is not None and self.proc.stdout is not None
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        if not ready:
            return None
        line = self.proc.stdout.readline()
        return json.loads(line) if line else {"status": "bug", "type": "worker died",
                                              "trace": f"exit code {self.proc.poll()}"}

    def run(self, suffix: str, data: bytes, folder: Path | None = None) -> dict:
        """Load ``data`` as a ``suffix`` file (in ``folder``, beside the files it refers to, when given): the
        worker's answer, with the load's ``seconds`` and ``peak_mb``."""
        if self.proc is None or self.proc.poll() is not None:
            self.start()
        assert self.proc is not None and self.proc.stdin is not None
        where = f" {folder}" if folder is not None else ""
        self.proc.stdin.write(f"{suffix} {len(data)}{where}\n".encode() + data)
        self.proc.stdin.flush()
        answer = self._wait()
        if answer is None:
            self.stop()
            return {"status": "bug", "type": "hang", "trace": f"no answer within {TIME_LIMIT_S:g} s of CPU time"}
        if answer.get("type") == "worker died":
            self.stop()
        return answer

    def _wait(self) -> dict | None:
        """The answer, or None for a hang: the worker spent :data:`TIME_LIMIT_S` seconds of CPU time on the case
        without answering (CPU time, not wall time: on a machine shared with other tests or test workers a
        case's wall time grows with the load; the wall clock still stops it at 6 × the limit)."""
        assert self.proc is not None
        cpu0, t0 = _cpu_seconds(self.proc.pid), time.monotonic()
        while True:
            answer = self._answer(min(1.0, TIME_LIMIT_S))
            if answer is not None:
                return answer
            cpu = _cpu_seconds(self.proc.pid)
            used = cpu - cpu0 if cpu is not None and cpu0 is not None else time.monotonic() - t0
            if used > TIME_LIMIT_S or time.monotonic() - t0 > 6 * TIME_LIMIT_S:
                return None

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None


@pytest.fixture(scope="module")
def worker():
    w = Worker()
    yield w
    w.stop()


def _fuzz(worker: Worker, reader: str, cases: int, seed: int, tmp_path: Path) -> dict[str, int]:
    suffix, seeds = READERS[reader]
    if not seeds:
        pytest.skip(f"no seed files for {reader} (fbx: ufbx, animkit[fbx], is not installed)")
    corpus = _corpus(reader)
    rng = random.Random(f"{seed}-{reader}")
    counts = {"ok": 0, "error": 0}
    bugs = []
    t0 = time.perf_counter()
    for k in range(cases):
        data = MUTATORS.get(reader, mutate)(rng.choice(corpus), rng)
        answer = worker.run(suffix, data)
        if answer["status"] == "error" and NATIVE_CRASH in answer["message"]:  # a ParseError, but a crash in ufbx
            answer = {"status": "bug", "type": "native crash", "trace": answer["message"]}
        if answer["status"] == "bug":
            case = tmp_path / f"{reader}-{k}{suffix}"
            case.write_bytes(data)
            bugs.append(f"case {k} ({case}): {answer['type']}\n{answer['trace']}")
        else:
            counts[answer["status"]] += 1
    seconds = time.perf_counter() - t0
    assert not bugs, f"{reader}: {len(bugs)} of {cases} cases raised something other than AnimkitError " \
                     f"or hung (seed {seed}):\n" + "\n".join(bugs[:3])
    print(f"{reader}: {cases} cases in {seconds:.1f} s: {counts['ok']} loaded, {counts['error']} AnimkitError")
    return counts


@pytest.mark.slow  # 1,000 cases a reader: FBX's child process per case makes it the longest test (~220 s)
@pytest.mark.parametrize("reader", list(READERS))
def test_mutated_files_give_animkit_errors_only(worker, reader, tmp_path) -> None:
    counts = _fuzz(worker, reader, FUZZ_CASES, SEED, tmp_path)
    assert counts["error"] > 0  # the mutations do reach the readers' checks


@pytest.mark.study
@pytest.mark.parametrize("reader", list(READERS))
def test_mutated_files_long_run(worker, reader, tmp_path) -> None:
    _fuzz(worker, reader, 25 * FUZZ_CASES, SEED + 1, tmp_path)


def test_mutations_are_deterministic() -> None:
    data = _corpus("bvh")[0]
    a = [mutate(data, random.Random("x")) for _ in range(3)]
    b = [mutate(data, random.Random("x")) for _ in range(3)]
    assert a == b and any(m != data for m in a)
