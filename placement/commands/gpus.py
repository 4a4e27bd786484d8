"""List the GPUs `--gpu` knows: the catalog (configs/catalog.csv) and the bundled configurations."""

from __future__ import annotations

from ._output import print_json, table

NAME = "gpus"
HELP = "list the GPU catalog and the bundled configurations, or show one in full"


def add_arguments(p) -> None:
    p.add_argument(
        "name", nargs="?", help="show one GPU in full (a catalog or bundled name, forgivingly spelled, or a .toml path)"
    )
    p.add_argument("--json", action="store_true", help="print one JSON document")


def _listing() -> list[dict]:
    """One summary per GPU: every catalog row (a bundled TOML of the same name wins), then the
    bundled configurations the catalog does not have (the papers' older GPUs)."""
    from .. import catalog
    from ..gpu import get_gpu, gpu_from_entry, gpu_names

    bundled = {catalog.normalize(n): n for n in gpu_names()}
    out, seen = [], set()
    for e in catalog.entries():
        toml = bundled.get(catalog.normalize(e.name))
        seen.add(toml)
        g = get_gpu(toml) if toml else gpu_from_entry(e)
        out.append(_summary(g, e.full_name, "bundled" if toml else "catalog", e.source))
    for n in gpu_names():
        if n not in seen:
            g = get_gpu(n)
            out.append(_summary(g, g.description, "bundled", g.path))
    return out


def _summary(g, full_name: str, origin: str, source: str) -> dict:
    c = g.compute
    return {
        "name": g.name, "full_name": full_name, "arch": g.arch,
        "cc": f"{g.compute_capability[0]}.{g.compute_capability[1]}", "sms": c.sms, "cores": c.sms * c.cores_per_sm,
        "clock_mhz": c.clock_mhz, "bandwidth_gbs": g.memory.bandwidth_gbs, "global_in_l1": g.caches.global_in_l1,
        "readonly_cache": g.caches.readonly_cache, "origin": origin, "source": source,
    }  # fmt: skip


def model_rates(g) -> dict:
    """The per-architecture rates and switches the model takes beyond the configuration's sections
    (``[<arch>.models]`` of configs/architectures.toml), as they apply to ``g``: a measured rate above 0 (``placement
    calibrate``'s ``[compute]`` rates, and ``memory.l1_bank_ratio`` for ``l1_data_banks``) wins over the
    architecture's."""
    import cachesim

    from .. import memory
    from ..models.params import l2_rate_of, sustained_fraction_of

    return {
        "texels_per_cycle": memory.texels_per_cycle_of(g),
        "fp64_per_cycle": memory.fp64_per_cycle_of(g),
        "lsu_instructions_per_cycle": memory.lsu_instructions_per_cycle_of(g),
        "readonly_instructions_per_cycle": memory.readonly_instructions_per_cycle_of(g),
        "readonly_split_instructions_per_cycle": memory.readonly_split_instructions_per_cycle_of(g),
        "global_split_instructions_per_cycle": memory.global_split_instructions_per_cycle_of(g),
        "l1_tags_per_cycle": memory.l1_tags_per_cycle_of(g),
        "l1_data_banks": memory.l1_data_banks_of(g),
        "constant_on_load_store_path": memory.constant_on_path_of(g),
        "replays_issued_again": [cachesim.REPLAY_CAUSES[c] for c in memory.reissued_replay_causes_of(g)],
        "dram_sustained_fraction": sustained_fraction_of(g),
        "l2_transactions_per_cycle": l2_rate_of(g),
    }


def run(args) -> int:
    if args.name is not None:  # an empty name is refused by get_gpu, not taken for "list them all"
        from ..gpu import as_dict, get_gpu

        g = get_gpu(args.name)
        rates = model_rates(g)
        if args.json:
            print_json({**as_dict(g), "model": rates})
            return 0
        print(
            f"{g.name}: {g.description} ({g.arch}, compute capability {g.compute_capability[0]}.{g.compute_capability[1]})"
        )
        print(f"from: {g.path}")
        for section in ("compute", "memory", "caches", "dram"):
            print(f"[{section}]")
            for k, v in as_dict(g)[section].items():
                print(f"  {k} = {v!r}")
        print("[model]  (as the model takes them: configs/architectures.toml's, or a measured [compute] rate above 0)")
        for k, v in rates.items():
            print(f"  {k} = {v!r}")
        return 0
    docs = _listing()
    if args.json:
        print_json({"gpus": docs})
        return 0
    rows = [[d["name"], d["arch"], d["cc"], d["sms"], d["cores"], f"{d['clock_mhz']:g}", f"{d['bandwidth_gbs']:g}",
             "yes" if d["global_in_l1"] else "no", d["readonly_cache"], d["origin"], d["full_name"]] for d in docs]  # fmt: skip
    print(
        table(
            rows,
            ["name", "arch", "cc", "SMs", "cores", "MHz", "GB/s", "L1 (global)", "read-only", "from", "GPU"],
            "lllrrrrllll",
        )
    )
    print(
        f'{len(docs)} GPUs; `placement gpus NAME` shows one in full (names are matched forgivingly: rtx3080, "GeForce RTX 3080", RTX-3080)'
    )
    return 0
