"""Loading checks the bytes before torch sees them, and refuses anything but a .pt2 program."""

import http.server
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

from contract.config import ModelConfig
from runner.errors import ModelLoadError
from runner.loading import load_program, model_file
from runner.programs import own_module
from tests.runner.conftest import sha256_of


def test_a_verified_program_loads_and_runs(models_dir: Path) -> None:
    path = models_dir / "tiny-mlp.pt2"
    program = load_program(path, sha256_of(path))
    assert program.module()(torch.randn(2, 64)).shape[0] == 2


def test_a_wrong_sha256_is_refused_with_both_digests(models_dir: Path) -> None:
    path = models_dir / "tiny-mlp.pt2"
    with pytest.raises(
        ModelLoadError, match=f"has sha256 {sha256_of(path)}, but config.json expects 0{{64}}"
    ):
        load_program(path, "0" * 64)


def test_a_corrupt_file_is_refused_before_loading(models_dir: Path, tmp_path: Path) -> None:
    data = bytearray((models_dir / "tiny-mlp.pt2").read_bytes())
    data[len(data) // 2] ^= 0xFF
    corrupt = tmp_path / "tiny-mlp.pt2"
    corrupt.write_bytes(bytes(data))
    with pytest.raises(ModelLoadError, match="corrupt or not the model"):
        load_program(corrupt, sha256_of(models_dir / "tiny-mlp.pt2"))


def test_damaged_bytes_with_a_matching_sha256_give_a_load_error(tmp_path: Path) -> None:
    truncated = tmp_path / "half.pt2"
    truncated.write_bytes(b"PK\x03\x04" + b"\0" * 64)
    with pytest.raises(ModelLoadError, match="not a zip archive"):
        load_program(truncated, sha256_of(truncated))


@pytest.mark.usefixtures("export_load_forbidden")
def test_a_pickled_checkpoint_is_refused_without_unpickling(tmp_path: Path) -> None:
    path = tmp_path / "model.pt2"
    torch.save(torch.nn.Linear(4, 4), path)
    with pytest.raises(ModelLoadError, match=r"torch.save checkpoint \(pickled\)"):
        load_program(path, sha256_of(path))


@pytest.mark.usefixtures("export_load_forbidden")
def test_a_legacy_pickle_is_refused_without_unpickling(tmp_path: Path) -> None:
    path = tmp_path / "model.pt2"
    torch.save({"w": torch.ones(2)}, path, _use_new_zipfile_serialization=False)
    with pytest.raises(ModelLoadError, match="is a pickle"):
        load_program(path, sha256_of(path))


def test_a_file_model_missing_from_its_mount_names_the_configmap(tmp_path: Path) -> None:
    model = ModelConfig(source="file", location="absent.pt2", sha256="0" * 64)
    with pytest.raises(ModelLoadError, match="model ConfigMap's mount"):
        model_file(model, tmp_path, tmp_path)


def test_an_image_path_model_is_read_from_its_absolute_path(
    models_dir: Path, tmp_path: Path
) -> None:
    location = str(models_dir / "tiny-cnn.pt2")
    model = ModelConfig(source="image_path", location=location, sha256="0" * 64)
    assert model_file(model, tmp_path, tmp_path) == Path(location)


def test_an_oci_model_is_read_from_its_image_volume(tmp_path: Path) -> None:
    """Under the oci folder, not the ConfigMap's: the two are separate mounts."""
    (tmp_path / "oci" / "big" / "weights").mkdir(parents=True)
    (tmp_path / "oci" / "big" / "weights" / "big.pt2").write_bytes(b"x")
    model = ModelConfig(source="oci", location="big/weights/big.pt2", sha256="0" * 64)
    found = model_file(model, tmp_path / "models", tmp_path, tmp_path / "oci")
    assert found == tmp_path / "oci" / "big" / "weights" / "big.pt2"


def test_an_oci_model_missing_from_its_volume_names_the_volume(tmp_path: Path) -> None:
    model = ModelConfig(source="oci", location="big/model.pt2", sha256="0" * 64)
    with pytest.raises(ModelLoadError, match=r"big/model.pt2 does not exist: .* image volume"):
        model_file(model, tmp_path, tmp_path, tmp_path / "oci")


@pytest.fixture
def model_server(models_dir: Path, tmp_path: Path) -> Iterator[str]:
    """A local HTTP server holding the example models, standing in for a model store."""
    served = tmp_path / "served"
    shutil.copytree(models_dir, served)

    class Handler(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args: object, **kwargs: object) -> None:
            super().__init__(*args, directory=str(served), **kwargs)  # type: ignore[arg-type]

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    thread.join()


def test_a_url_model_is_downloaded_then_verified(
    model_server: str, models_dir: Path, tmp_path: Path
) -> None:
    sha = sha256_of(models_dir / "tiny-transformer.pt2")
    model = ModelConfig(source="url", location=f"{model_server}/tiny-transformer.pt2", sha256=sha)
    downloads = tmp_path / "downloads"
    downloads.mkdir()
    path = model_file(model, tmp_path / "unused", downloads)
    assert load_program(path, sha).module() is not None
    assert [p.name for p in downloads.iterdir()] == [f"{sha}.pt2"]


def test_a_url_that_fails_leaves_no_partial_file(model_server: str, tmp_path: Path) -> None:
    downloads = tmp_path / "downloads"
    downloads.mkdir()
    model = ModelConfig(source="url", location=f"{model_server}/absent.pt2", sha256="0" * 64)
    with pytest.raises(ModelLoadError, match=r"cannot download .*absent\.pt2"):
        model_file(model, tmp_path, downloads)
    assert list(downloads.iterdir()) == []


def test_a_variants_module_runs_as_torchs_own_and_casting_it_leaves_the_program(
    models_dir: Path,
) -> None:
    """own_module keeps the hooks `module()` installs (the guard checks a user's call runs
    through, and whose cost is part of every call), and its tensors are its own."""
    program = torch.export.load(models_dir / "tiny-mlp.pt2")
    torchs = program.module()
    mine = own_module(program)
    assert len(mine._forward_pre_hooks) == len(torchs._forward_pre_hooks) > 0
    assert len(mine._forward_hooks) == len(torchs._forward_hooks)
    mine.to(torch.float16)
    assert {t.dtype for t in program.state_dict.values()} == {torch.float32}
