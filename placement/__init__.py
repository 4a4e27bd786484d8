"""placement: the decisions of gpu-placement: GPU configs, models, search, the command."""

__version__ = "0.1.0"
