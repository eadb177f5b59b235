"""One decoder per event row kind (bdpd_jax/results/decode.py): the frames and a live arena's
turn record both go through it, the live record on a length-1 slice of one arena's turn, and
no other module labels a code or picks an event row of its own. No program is compiled here:
the records are made up (the live == batch runs are in tests/test_schema.py)."""

from __future__ import annotations

import ast
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from bdpd_jax.config.plugins import VoluntarySanctionSpec
from bdpd_jax.kernels import pacts as P
from bdpd_jax.kernels import perturb as pk
from bdpd_jax.kernels.governance import NAME as GOV
from bdpd_jax.kernels.params import OBS_VARS
from bdpd_jax.kernels.plugins import NAME as PLUGINS
from bdpd_jax.kernels.plugins import plugin_type
from bdpd_jax.results import decode
from bdpd_jax.results import schema as S

ROOT = Path(__file__).resolve().parents[1] / "bdpd_jax"
T, B, N, NP, K = 4, 3, 3, 2, 2  # turns, arenas, players, pact slots, sanction specs


def _record(seed: int) -> tuple[dict, list, list, list[str]]:
    """A made-up flattened record (leaves turn-first, batch-last) with every event layer, some
    turns unplayed; and the specs, plugins and perturbation ids it refers to."""
    rng = np.random.default_rng(seed)
    coin = lambda *shape: rng.random(shape) < 0.4  # noqa: E731
    codes = rng.integers(0, len(pk.type_names()), (T, NP, B))
    extra = {
        GOV: {
            "end": {
                "violated": coin(T, NP, N, B),
                "term": rng.integers(0, len(P.term_names()), (T, NP, B)),
                "ordinal": rng.integers(0, 5, (T, NP, N, B)).astype(np.int32),
                "spec_fired": coin(T, K, NP, N, B),
                "spec_amount": rng.random((T, K, NP, N, B)).astype(np.float32),
            }
        },
        PLUGINS: {
            "end": {
                "plugins": [
                    {
                        "fines": np.where(coin(T, N, N, B), 2.0, 0.0).astype(np.float32),
                        "costs": np.where(coin(T, N, N, B), 0.5, 0.0).astype(np.float32),
                        "reason": rng.integers(0, 3, (T, N, B)).astype(np.int32),
                    }
                ]
            }
        },
        pk.PerturbLayer.name: {
            "begin": {
                "fired": coin(T, NP, B),
                "code": codes,
                "target": rng.integers(-1, min(N, len(OBS_VARS)), (T, NP, B)),
                "value": rng.integers(0, 3, (T, NP, B)).astype(np.float32),
            }
        },
    }
    played = np.ones((T, B), bool)
    played[-1, 0] = played[-2:, 2] = False  # arenas that ended early
    turn = np.broadcast_to(np.arange(1, T + 1, dtype=np.int32)[:, None], (T, B)).copy()
    specs = [SimpleNamespace(id=f"s{k}", type="sanction", payload=SimpleNamespace(reason=f"r{k}")) for k in range(K)]
    plugins = [VoluntarySanctionSpec(type="voluntary_sanction", id="vs", cost=0.5, fine=2.0, sanctioner=["always"] * N)]
    return {"extra": extra, "played": played, "turn": turn}, specs, plugins, ["a", "b"]


def _slice(tree, t: int, b: int):
    """Arena ``b``'s turn ``t`` of every leaf (as a live arena holds it: no turn, no batch axis)."""
    if isinstance(tree, dict):
        return {k: _slice(v, t, b) for k, v in tree.items()}
    if isinstance(tree, list):
        return [_slice(v, t, b) for v in tree]
    return np.asarray(tree)[t, ..., b]


def _rows(cols: dict | None, keep=None) -> list[tuple]:
    """A decoded row kind's rows (arena left out) as tuples of plain values, in order."""
    if cols is None:
        return []
    names = [n for n in cols if n != "arena"]
    n = len(cols["turn"])
    col = {k: list(v) if not (v is None or isinstance(v, str)) else [v] * n for k, v in cols.items()}
    keep = np.ones(n, bool) if keep is None else keep
    return [tuple(np.asarray(col[k][r]).item() for k in names) for r in range(n) if keep[r]]


def _decoders(rec: dict, arenas: np.ndarray, specs, plugins, ids) -> dict[str, list[dict | None]]:
    return {
        "violations": [decode.violation_columns(rec, arenas)],
        "sanctions": [
            decode.spec_sanction_columns(rec, arenas, specs),
            *decode.plugin_sanction_columns(rec, arenas, plugins),
        ],
        "perturbations": [decode.perturbation_columns(rec, arenas, ids, ["greedy", "aggressive", "cautious"])],
    }


@pytest.mark.parametrize("seed", [0, 1])
def test_a_live_arenas_turn_decodes_as_its_rows_of_the_batch(seed: int) -> None:
    """Decoding the whole batch, then taking arena b's turn t, gives the rows (and order) of
    decoding that one turn alone, as a live arena does; unplayed turns give none."""
    rec, specs, plugins, ids = _record(seed)
    arenas = np.arange(10, 10 + B)
    batch = _decoders(rec, arenas, specs, plugins, ids)
    seen = 0
    for b in range(B):
        for t in range(T):
            one = decode.one_turn(_slice(rec["extra"], t, b), int(rec["turn"][t, b]))
            live = _decoders(one, np.zeros(1, np.int64), specs, plugins, ids)
            for kind, blocks in batch.items():
                want = [
                    r
                    for c in blocks
                    if c is not None
                    for r in _rows(c, (c["arena"] == arenas[b]) & (np.asarray(c["turn"]) == rec["turn"][t, b]))
                ]
                got = [r for c in live[kind] for r in _rows(c)] if rec["played"][t, b] else []
                assert got == want, (kind, b, t)
                seen += len(want)
    assert seen > 0


def test_the_decoders_label_and_mask_as_the_schema_says() -> None:
    rec, specs, plugins, ids = _record(2)
    arenas = np.arange(B)
    cols = decode.violation_columns(rec, arenas)
    g = rec["extra"][GOV]["end"]
    want = int((g["violated"] & rec["played"][:, None, None, :]).sum())
    assert len(cols["turn"]) == want and set(cols["term_type"]) <= set(P.term_names())
    plug = decode.plugin_sanction_columns(rec, arenas, plugins)[0]
    assert set(plug["reason"]) <= {None, *plugin_type("voluntary_sanction").reasons} and len(plug["reason"]) > 0
    assert (plug["pact"] == -1).all() and (plug["payer"] >= 0).all()
    pert = decode.perturbation_columns(rec, arenas, ids, ["greedy"])
    for ty, target in zip(pert["type"], pert["target"], strict=True):
        assert ty in pk.type_names() and target.startswith(pk.perturbation_type(ty).label)


def test_every_event_layer_has_its_decoders_and_the_wire_form_comes_from_the_schema() -> None:
    per_turn = {"turns", "metrics", "players", "summary", S.GOVSIM_LAYER, "project"}  # read column for column
    assert set(decode.ROW_KINDS) == set(S.LAYERS) - per_turn
    refs = {c.name: c.ref for layer in (S.VIOLATIONS, S.SANCTIONS) for c in layer if c.ref}
    assert refs == {"player": "player", "pact": "pact", "payer": "player"}
    cols = {"turn": np.int32([3]), "player": np.int32([1]), "pact": np.int32([-1]), "payer": np.int32([-1])}
    cols |= {"amount": np.float32([0.1]), "id": "vs", "term_type": None}
    ids = {"player": ["p0", "p1"].__getitem__, "pact": lambda s: f"pact-{s}"}
    (row,) = S.wire_rows(S.SANCTIONS, cols, ids, lambda a: [round(float(x), 6) for x in a])
    assert row == {
        "turn": 3,
        "specId": "vs",
        "playerId": "p1",
        "pactId": None,
        "termType": None,
        "amount": 0.1,
        "paidBy": None,
    }
    assert isinstance(row["turn"], int)


#: modules that build event rows: they take them from the decoders, and label no code themselves
ROW_BUILDERS = ("results/governance.py", "results/perturbations.py", "results/plugins.py", "host/live/records.py")
#: a code -> label of a registry is indexed in results/decode.py only
LABEL_TABLES = {"term_names", "type_names", "OBS_VARS"}


def _hits(path: Path) -> list[str]:
    text = path.read_text()
    if not any(w in text for w in (*LABEL_TABLES, "reason_name", "nonzero", "wire_row")):
        return []  # (most modules: nothing to parse)
    tree = ast.parse(text)
    rel = path.relative_to(ROOT).as_posix()
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript):  # term_names()[code], OBS_VARS[i], ...
            v = node.value.func if isinstance(node.value, ast.Call) else node.value
            name = v.attr if isinstance(v, ast.Attribute) else getattr(v, "id", None)
            if name in LABEL_TABLES:
                out.append(f"{rel}:{node.lineno}: indexes {name}")
        if isinstance(node, ast.Call):
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", None)
            if name == "reason_name":
                out.append(f"{rel}:{node.lineno}: calls reason_name")
            if (
                rel in ROW_BUILDERS
                and name in ("nonzero", "flatnonzero", "wire_row")
                and (
                    name != "wire_row"
                    or ast.unparse(node.args[0]) in ("schema.VIOLATIONS", "schema.SANCTIONS", "schema.PERTURBATIONS")
                )
            ):
                out.append(f"{rel}:{node.lineno}: picks event rows itself ({name})")
    return out


def test_no_module_decodes_an_event_row_outside_the_decoders() -> None:
    files = [
        p
        for p in ROOT.rglob("*.py")
        if p.relative_to(ROOT).as_posix() not in ("results/decode.py", "config/plugins.py")
    ]
    assert all((ROOT / f).is_file() for f in ROW_BUILDERS)
    hits = [h for p in files for h in _hits(p)]
    assert not hits, "\n".join(hits)
