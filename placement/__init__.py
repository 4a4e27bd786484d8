"""placement: the decisions of gpu-placement: GPU configs, models, search, the command.

The Python API (``placement.api``, loaded on first use so that ``import placement`` stays light)::

    import placement
    r = placement.rank("configs/examples/conv1d.parquet", "k80")
    r.to_frame(); r.to_dict()          # a pandas DataFrame; the `placement rank --json` document
    e = placement.evaluate("configs/examples/conv1d.parquet", "k80", "mask=C,in=R", hints=True)
"""

__version__ = "0.1.0"

_API = ("rank", "evaluate", "model_options")


def __getattr__(name: str):
    if name in _API:
        from . import api

        return getattr(api, name)
    raise AttributeError(f"module 'placement' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(list(globals()) + list(_API))


__all__ = ["__version__", *_API]
