"""Type stubs of muster._muster_torch: muster.torch.native_store's class (python/src/torch_store.cc)."""

import datetime
from typing import Any, List

import torch.distributed

class NativeStore(torch.distributed.Store):
    def __init__(self, handle: Any, timeout: datetime.timedelta, prefix: str) -> None: ...
    def check(self, keys: List[str]) -> bool: ...
    @property
    def prefix(self) -> str: ...
