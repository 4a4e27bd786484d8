"""Registry entries of the kernels outside ``elementwise`` (filled in as they land)."""


def specs(_p, KernelSpec):
    return []
