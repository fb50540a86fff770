"""docs/compat.md (torch's names against vkml's) is what tools/gen_compat.py writes now."""
import importlib.util
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[2]


def load_generator():
    spec = importlib.util.spec_from_file_location("gen_compat", ROOT / "tools" / "gen_compat.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_compat_doc_is_current():
    written = (ROOT / "docs" / "compat.md").read_text()
    assert written == load_generator().render(), "docs/compat.md is stale: run `make compat`"


def test_compat_counts_a_name_vkml_has_and_explains_one_it_lacks():
    gen = load_generator()
    text = gen.render()
    torch_section = text.split("## `torch` -> `vkml`")[1].split("\n## ")[0]
    assert "`matmul`" in torch_section.split("Missing")[0]
    assert gen.reason("torch", "sparse_coo_tensor") == "sparse layouts: not planned"
    assert gen.reason("torch.nn.init", "xavier_uniform") != gen.reason("torch.nn.init", "xavier_uniform_")
