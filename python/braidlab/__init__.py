"""braid's laboratory: emulated wide-area paths on network namespaces, traffic, measurements."""

__all__ = ["__version__"]
__version__ = "0.1.0"
