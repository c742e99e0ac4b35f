"""Similar submissions (scangrade/similarity.py, batch.py --similarity): robust to renamed identifiers,
reformatting and reordered functions; the handout's own code does not count; a planted copy ranks
first among real gallery entries; never a grade change."""

from __future__ import annotations

import functools
import json
import re
import time
from pathlib import Path

import pytest

from conftest import GRADING, REPO
from scangrade import similarity as sim
from test_batch import GOOD, fake_env, read_gradebook, run_batch, write_tree   # noqa: F401 (fixture)

GALLERY = GRADING / "gallery"

CODE = """// mine
#include "scangrade/student_api.h"
template <typename T>
__global__ void up(const T* in, T* out, std::size_t n) {
  extern __shared__ unsigned char raw[];
  T* tile = reinterpret_cast<T*>(raw);
  std::size_t i = blockIdx.x * blockDim.x + threadIdx.x;
  tile[threadIdx.x] = i < n ? in[i] : T(0);
  __syncthreads();
  for (unsigned stride = 1; stride < blockDim.x; stride *= 2) {
    T add = threadIdx.x >= stride ? tile[threadIdx.x - stride] : T(0);
    __syncthreads();
    tile[threadIdx.x] += add;
    __syncthreads();
  }
  if (i < n) out[i] = tile[threadIdx.x];
}
template <typename T>
__global__ void down(T* out, const T* sums, std::size_t n) {
  std::size_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (blockIdx.x > 0 && i < n) out[i] += sums[blockIdx.x - 1];
}
"""


def disguise(text: str) -> str:
    """A copy as a student would disguise it: identifiers renamed, comments added, lines re-broken and
    re-indented, and the two top-level functions (split at the second `template`) swapped."""
    keep = sim.KEYWORDS | {"T", "scangrade", "student", "student_api", "h"}
    names = {}

    def rename(m: re.Match) -> str:
        word = m.group()
        if word in keep or not re.match(r"[A-Za-z_]", word):
            return word
        return names.setdefault(word, f"zz{len(names)}_{word[::-1]}")
    body = re.sub(r"[A-Za-z_]\w*", rename, text)
    body = re.sub(r"(?m)^(\s*)", lambda m: "\t" * (len(m.group(1)) // 2), body)
    body = body.replace(";", " ;  // step\n").replace("{", "\n{\n")
    parts = body.split("template")
    if len(parts) == 3:
        body = parts[0] + "template" + parts[2] + "\ntemplate" + parts[1]
    return "/* my own work */\n" + body


def test_tokens_ignore_names_literals_comments_and_layout():
    a = sim.tokens("int total = 3; // sum\nfoo(total, \"x\");")
    b = sim.tokens("/* c */ int   sum_of_it=\n 42 ;bar ( sum_of_it ,'y' ) ;")
    assert [t for t, _ in a] == [t for t, _ in b] == ["int", "V", "=", "N", ";", "V", "(", "V", ",", "S", ")", ";"]
    assert [line for _, line in a][-1] == 2


def test_renamed_reformatted_reordered_copy_scores_one():
    copy = disguise(CODE)
    assert "stride" not in copy and "tile" not in copy
    doc = sim.rank({"a": {"hierarchical": CODE}, "b": {"hierarchical": copy}}, set())
    assert len(doc["pairs"]) == 1
    pair = doc["pairs"][0]
    # the k-grams that span the swapped functions' boundary are lost: not quite 1
    assert pair["score"] >= 0.9 and pair["slots"][0]["slot"] == "hierarchical"
    region = pair["slots"][0]["regions"][0]
    assert region["a"][0] >= 1 and region["b"][1] >= region["b"][0]
    assert pair["slots"][0]["text"][0]["a"] and pair["slots"][0]["text"][0]["b"]


def test_handout_code_does_not_count():
    stubs = {p.stem: p.read_text() for p in (REPO / "student").glob("*.cu")}
    boiler = sim.handout_fingerprints(REPO)
    assert boiler
    doc = sim.rank({"x": dict(stubs), "y": dict(stubs)}, boiler)
    assert doc["pairs"] == []                                  # two untouched handouts are not "similar"
    doc = sim.rank({"x": dict(stubs), "y": dict(stubs)}, set())
    assert doc["pairs"] and doc["pairs"][0]["score"] == 1.0    # without the exclusion they would be


def test_code_most_of_the_class_shares_does_not_count():
    other = CODE.replace("+=", "-=").replace("stride *= 2", "stride <<= 1")
    sources = {f"s{i}": {"hillis_steele": CODE} for i in range(6)}
    sources["t"] = {"hillis_steele": other}
    doc = sim.rank(sources, set())
    assert doc["pairs"] == [] and doc["method"]["common_fingerprints"]["hillis_steele"] > 0


@functools.lru_cache(maxsize=None)
def gallery_entry(name: str) -> dict[str, str]:
    return sim.read_slot_files(GALLERY / name)


def gallery_sources(names: list[str]) -> dict[str, dict[str, str]]:
    return {n: dict(gallery_entry(n)) for n in names}


def test_planted_copy_ranks_first_among_gallery_entries(monkeypatch):
    names = sorted(p.name for p in GALLERY.iterdir() if (p / "student").is_dir())
    boiler = sim.handout_fingerprints(REPO)
    # entries that share no slot above the threshold with each other (the gallery's wrong_* entries
    # are the correct ones with one bug: those pairs are similar by construction)
    monkeypatch.setattr(sim, "MAX_PAIRS", 100_000)
    similar = {frozenset((p["a"], p["b"])) for p in sim.rank(gallery_sources(names), boiler)["pairs"]}
    monkeypatch.undo()
    chosen: list[str] = []
    for n in names:
        if all(frozenset((n, c)) not in similar for c in chosen):
            chosen.append(n)
    assert len(chosen) >= 6, chosen
    sources = gallery_sources(chosen)
    victim = chosen[len(chosen) // 2]
    sources["planted_copy"] = {slot: disguise(text) for slot, text in sources[victim].items()}
    doc = sim.rank(sources, boiler)
    top = doc["pairs"][0]
    assert {top["a"], top["b"]} == {victim, "planted_copy"}, doc["pairs"][:3]
    assert top["score"] >= 0.85


def test_two_hundred_submissions_are_fast_enough():
    names = sorted(p.name for p in GALLERY.iterdir() if (p / "student").is_dir())
    base = gallery_sources(names)
    sources = {}
    for i in range(200):   # each copy of an entry perturbed (renamed) so that no two are byte-identical
        name = names[i % len(names)]
        sources[f"s{i:03d}"] = {slot: re.sub(r"\bn\b", f"n{i}", text) for slot, text in base[name].items()}
    started = time.process_time()
    doc = sim.rank(sources, sim.handout_fingerprints(REPO))
    cpu = time.process_time() - started
    print(f"200 submissions: {cpu:.1f} s of CPU, {doc['pairs_above_threshold']} pairs above the threshold")
    assert doc["submissions"] == 200 and len(doc["pairs"]) <= sim.MAX_PAIRS


def test_batch_similarity_changes_no_grade(tmp_path, fake_env):
    subs = tmp_path / "subs"
    subs.mkdir()
    files = {f"student/{k}.cu": v for k, v in {"hierarchical": CODE}.items()}
    write_tree(subs / "orig", dict(GOOD, **files))
    write_tree(subs / "copy", dict(GOOD, **{k: disguise(v) for k, v in files.items()}))
    write_tree(subs / "other", GOOD)
    plain = run_batch(subs, tmp_path / "plain", fake_env)
    r = run_batch(subs, tmp_path / "out", fake_env, "--similarity")
    assert plain.returncode == r.returncode == 0, r.stderr
    doc = json.loads((tmp_path / "out" / "similarity.json").read_text())
    assert {doc["pairs"][0]["a"], doc["pairs"][0]["b"]} == {"orig", "copy"}
    text = (tmp_path / "out" / "report.html").read_text()
    assert "Similar submissions" in text and ("orig ↔ copy" in text or "copy ↔ orig" in text)
    keep = ("student_id", "total", "points", "flags", "percent")
    assert [{k: row[k] for k in keep} for row in read_gradebook(tmp_path / "out").values()] == \
        [{k: row[k] for k in keep} for row in read_gradebook(tmp_path / "plain").values()]
    assert not (tmp_path / "plain" / "similarity.json").exists()
