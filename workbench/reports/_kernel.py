"""The kernel certification notebooks run in: IPC transport in a private temporary directory,
so nothing listens on TCP (and the kernel does not warn about unencrypted TCP)."""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any


def ipc_kernel_manager(socket_dir: Path) -> type:
    """An ``AsyncKernelManager`` subclass whose kernels talk over IPC sockets in ``socket_dir``."""
    from jupyter_client.manager import AsyncKernelManager

    class IPCKernelManager(AsyncKernelManager):
        def __init__(self, **kwargs: Any) -> None:
            kwargs.setdefault("transport", "ipc")
            kwargs.setdefault("ip", str(socket_dir / "kernel"))
            super().__init__(**kwargs)

    return IPCKernelManager


@contextlib.contextmanager
def kernel_manager_class() -> Iterator[type]:
    """Yield an IPC kernel manager class; its (short) socket directory is removed afterwards."""
    directory = Path(tempfile.mkdtemp(prefix="wbk-", dir="/tmp" if Path("/tmp").is_dir() else None))
    try:
        yield ipc_kernel_manager(directory)
    finally:
        shutil.rmtree(directory, ignore_errors=True)
