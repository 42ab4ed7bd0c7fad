"""wheelfarm: build CUDA Python wheels for every (CUDA, torch, Python, platform) and index them."""

__version__ = "0.1.0"
