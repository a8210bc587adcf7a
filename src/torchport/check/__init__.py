"""Static checks and autofixes for device-hard-coded and slow PyTorch code.

Importing this package never imports torch.
"""
