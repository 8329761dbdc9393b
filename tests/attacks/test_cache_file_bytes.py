"""A cache file's bytes depend only on its arrays (issue 25): the pipeline records its hash in dvc.lock.

``np.savez`` dated every zip member with the time of writing, so regenerating identical images rewrote
``data/adversarial/*.npz`` with a new hash, and the stages after it ran again for nothing.
"""

import hashlib
import time
import zipfile

import numpy as np
import pytest

from shapley_research.attacks import load_or_generate, read_cache


def _generate():
    rng = np.random.default_rng(0)
    return {"train_images": rng.uniform(size=(3, 4, 4)), "train_success": np.array([True, False, True]),
            "source_clean_test_accuracy": np.array(0.75)}


@pytest.mark.slow  # over a second
def test_identical_arrays_give_identical_bytes_whenever_written(tmp_path):
    params, inputs = {"attack": "cw", "steps": 3}, {"X": np.arange(12.0)}
    first, second = tmp_path / "a" / "cw.npz", tmp_path / "b" / "cw.npz"
    load_or_generate(first, params, _generate, inputs=inputs)
    time.sleep(2.1)  # zip dates have a resolution of two seconds
    load_or_generate(second, params, _generate, inputs=inputs)
    assert hashlib.md5(first.read_bytes()).digest() == hashlib.md5(second.read_bytes()).digest()
    with zipfile.ZipFile(first) as archive:
        assert {info.date_time for info in archive.infolist()} == {(1980, 1, 1, 0, 0, 0)}
    arrays, meta = read_cache(first)  # still an ordinary .npz, with its metadata
    assert meta["params"] == params and sorted(arrays) == sorted(_generate())
    with np.load(first) as data:
        np.testing.assert_array_equal(data["train_images"], _generate()["train_images"])
        assert data["train_success"].dtype == np.bool_ and data["source_clean_test_accuracy"].shape == ()


def test_other_arrays_give_other_bytes(tmp_path):
    path = tmp_path / "fgsm.npz"
    load_or_generate(path, {"epsilon": 0.2}, _generate)
    before = path.read_bytes()
    load_or_generate(path, {"epsilon": 0.2}, lambda: dict(_generate(), train_success=np.zeros(3, dtype=bool)))
    assert path.read_bytes() == before  # same key: read, not rewritten
    load_or_generate(path, {"epsilon": 0.3}, lambda: dict(_generate(), train_success=np.zeros(3, dtype=bool)))
    assert path.read_bytes() != before
