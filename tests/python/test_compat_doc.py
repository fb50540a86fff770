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


def test_compat_groups_the_linalg_and_special_rows_and_regrouped_names():
    gen = load_generator()
    text = gen.render()
    assert "## `torch.linalg` -> `vkml.linalg`" in text and "## `torch.special` -> `vkml.special`" in text
    # every name is present or in a group with its reason: no "not yet" row is left (#15)
    assert "not yet (the porting issue" not in text
    assert gen.reason("torch.linalg", "eig") == gen.reason("torch", "view_as_complex")
    assert gen.reason("torch.linalg", "ldl_solve").startswith("LDL^T")
    assert gen.reason("torch.special", "bessel_j0") == gen.reason("torch.special", "zeta")
    assert "recurrence" in gen.reason("torch.special", "hermite_polynomial_h")
    # names that belong to an existing group, not to "not yet"
    assert gen.reason("torch", "parse_ir") == gen.reason("torch", "compile")
    assert gen.reason("torch", "fused_moving_avg_obs_fake_quant") == gen.reason("torch", "quantize_per_tensor")
    assert gen.reason("torch", "hash_tensor") == gen.reason("torch", "uint64") == gen.reason("torch", "bit")
    assert gen.reason("torch", "spmm") == gen.reason("torch", "sparse_coo_tensor")
    assert gen.reason("torch.Tensor", "to_padded_tensor") == gen.reason("torch.Tensor", "is_nested")
    assert gen.reason("torch.nn.functional", "scaled_mm") == gen.reason("torch", "float8_e4m3fn")
