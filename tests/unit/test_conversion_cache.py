"""The GGUF -> HF conversion cache is checked against its content on every load: a flipped weight
byte, a truncated, missing or extra file, a malformed or missing manifest, or a GGUF changed since
is named in one line and converted again; an intact folder is used as it is. The converter here
writes a small HF-shaped folder from the GGUF's bytes (the real one takes 26 s); resolving, the
check and the replacement are the real code."""

import json
from pathlib import Path

import numpy as np
import pytest
from omegaconf import OmegaConf
from safetensors.numpy import load_file, save_file

from boundlab import models
from boundlab.conversion_cache import MANIFEST, check


@pytest.fixture()
def setup(tmp_path, monkeypatch):
    pkg = tmp_path / "site" / "fake_gguf_pkg"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    gguf = pkg / "Tiny.Q4.gguf"
    gguf.write_bytes(b"GGUF" + bytes(range(200)))
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    calls = []

    def convert(src: Path, out: Path) -> None:
        calls.append(src)
        out.mkdir(parents=True)
        w = np.frombuffer(src.read_bytes()[4:], dtype=np.uint8).astype(np.float32).reshape(10, 20)
        save_file({"w": w}, str(out / "model.safetensors"))
        (out / "config.json").write_text(json.dumps({"model_type": "llama", "hidden_size": 20}))
        (out / "tokenizer.json").write_text(json.dumps({"model": {"vocab": {"a": 0}}}))

    monkeypatch.setattr(models, "_convert_gguf", convert)
    cfg = OmegaConf.create(dict(name="tiny", gguf_package="fake_gguf_pkg", gguf_file=gguf.name,
                                cache_dir=str(tmp_path / "models")))
    return cfg, gguf, calls, tmp_path / "models" / "tiny"


def _flip_weight_byte(folder: Path, gguf: Path) -> None:
    f = folder / "model.safetensors"
    b = bytearray(f.read_bytes())
    b[-3] ^= 0x40  # inside the tensor data: the header and size still check out
    f.write_bytes(bytes(b))
    models.check_weight_files(folder)  # the header check cannot see it; the digest can


def _changed_source(folder: Path, gguf: Path) -> None:
    gguf.write_bytes(b"GGUF" + bytes(range(1, 201)))  # a package upgrade: another GGUF, same name


TAMPER = {
    "flipped weight byte": _flip_weight_byte,
    "truncated weights": lambda d, g: (d / "model.safetensors").write_bytes((d / "model.safetensors").read_bytes()[:50]),
    "missing tokenizer": lambda d, g: (d / "tokenizer.json").unlink(),
    "extra weights file": lambda d, g: (d / "pytorch_model.bin").write_bytes(b"x"),
    "malformed manifest": lambda d, g: (d / MANIFEST).write_text("{not json"),
    "manifest of another shape": lambda d, g: (d / MANIFEST).write_text("[1, 2]"),
    "no manifest (an older conversion)": lambda d, g: (d / MANIFEST).unlink(),
    "changed GGUF": _changed_source,
}


def test_an_intact_conversion_is_used_as_it_is(setup, capsys):
    cfg, gguf, calls, folder = setup
    assert models.resolve_model_path(cfg) == str(folder) and len(calls) == 1
    assert check(folder, gguf) is None
    capsys.readouterr()
    assert models.resolve_model_path(cfg) == str(folder) and len(calls) == 1
    assert capsys.readouterr().err == ""
    assert sorted(p.name for p in folder.parent.iterdir()) == ["tiny"]  # no temporary folder left


@pytest.mark.parametrize("how", list(TAMPER))
def test_a_tampered_conversion_is_named_and_converted_again(setup, capsys, how):
    cfg, gguf, calls, folder = setup
    models.resolve_model_path(cfg)
    TAMPER[how](folder, gguf)
    capsys.readouterr()
    assert check(folder, gguf) is not None
    assert models.resolve_model_path(cfg) == str(folder) and len(calls) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"the converted model at {folder} fails its check" in err
    assert "Traceback" not in err
    assert check(folder, gguf) is None
    want = np.frombuffer(gguf.read_bytes()[4:], dtype=np.uint8).astype(np.float32).reshape(10, 20)
    assert np.array_equal(load_file(str(folder / "model.safetensors"))["w"], want)
    assert sorted(p.name for p in folder.parent.iterdir()) == ["tiny"]  # the damaged one is gone


def test_without_the_package_an_intact_folder_loads_and_a_damaged_one_is_one_line(setup, monkeypatch):
    cfg, gguf, calls, folder = setup
    models.resolve_model_path(cfg)
    cfg.gguf_package = "no_such_gguf_pkg_here"
    assert models.resolve_model_path(cfg) == str(folder) and len(calls) == 1
    (folder / "tokenizer.json").unlink()
    with pytest.raises(models.ModelNotFound, match="package 'no_such_gguf_pkg_here' is not installed") as e:
        models.resolve_model_path(cfg)
    assert "\n" not in str(e.value) and len(calls) == 1


def test_a_conversion_finished_meanwhile_by_another_process_is_kept(setup, monkeypatch):
    from boundlab.conversion_cache import write_manifest

    cfg, gguf, calls, folder = setup
    real, theirs = models._convert_gguf, []

    def convert_while_another_finishes(src, out):
        real(src, out)
        other = folder.with_name("other")  # the other process's conversion lands while ours runs
        real(src, other)
        write_manifest(other, src)
        theirs.append((other / "model.safetensors").stat().st_ino)
        other.rename(folder)

    monkeypatch.setattr(models, "_convert_gguf", convert_while_another_finishes)
    assert models.resolve_model_path(cfg) == str(folder)
    assert (folder / "model.safetensors").stat().st_ino == theirs[0]  # theirs stays, ours is dropped
    assert check(folder, gguf) is None
    assert sorted(p.name for p in folder.parent.iterdir()) == ["tiny"]
